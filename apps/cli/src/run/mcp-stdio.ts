import { createMcpCore, openTaskServices, type StdioFront, StreamConnection } from '@taskgate/api';
import { isDatabaseUnavailable } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { bootPlatform } from '../boot.ts';
import { type Config, clockCaps, DEFAULT_TENANT } from '../config.ts';
import { Lifecycle, shutdownDeadlineMs } from '../lifecycle.ts';
import type { Logger } from '../logger.ts';

export interface McpStdioArgs {
  /** Run tool handlers in this process too (default); off when workers run elsewhere. */
  readonly worker: boolean;
  /** `--tools`: tool modules to load (empty: TASKGATE_TOOLS, else the project's default modules). */
  readonly tools: readonly string[];
  readonly cwd: string;
  /** What read stdin while this module loaded (main.ts starts it first); none: stdin as it is. */
  readonly front?: StdioFront;
  /** The server's name and version, as the front already announced them. */
  readonly server?: { readonly name: string; readonly version: string };
}

/**
 * `taskgate mcp-stdio`: MCP over this process's stdin and stdout, for clients that launch their
 * servers as subprocesses. stdout carries protocol messages only, so every log line goes to
 * stderr. Ends when stdin ends (every call still in flight is cancelled first) or on SIGTERM.
 */
export async function runMcpStdio(args: McpStdioArgs, config: Config, logger: Logger): Promise<number> {
  const server = args.server ?? { name: 'taskgate', version: '0.1.0' };
  const lifecycle = new Lifecycle(logger, shutdownDeadlineMs(config));
  lifecycle.installSignalHandlers();
  try {
    const platform = await bootPlatform(
      {
        tools: args.tools,
        cwd: args.cwd,
        worker: args.worker,
        noToolsMessage:
          'mcp-stdio has no tools to run in-process: name a tool module with --tools <file or package> (or TASKGATE_TOOLS), or add --no-worker to serve the catalog of workers elsewhere',
        migrations: 'apply',
        moduleMigrations: false,
        abandonOnStop: false,
      },
      config,
      logger,
      lifecycle,
    );
    const { modules, tools, database, listenNotify } = platform;
    await platform.startWorker();
    const services = await openTaskServices({
      connectionString: database.connectionString,
      applicationName: 'taskgate-mcp-stdio',
      logger,
      // Offered: the catalog (the in-process worker publishes there), with the inline tools of the
      // modules loaded here, which run in this process.
      localTools: tools,
      catalogWindowMs: config.catalogWindowMs,
      listenNotify,
      idempotencyRetentionMs: config.idempotencyRetentionMs,
      clockCaps: clockCaps(config),
      // The in-process worker sweeps; without one, this process must (nothing else may run).
      sweep: !args.worker,
      sweeper: { maxQueueMs: config.maxQueueMs },
    });
    lifecycle.onStop('services', () => services.stop());
    // Everything the front held (answered or not) goes to the server first, in order.
    const handedOver = args.front?.handOver();
    const stdio = new StreamConnection({
      core: createMcpCore({
        service: services.service,
        hub: services.hub,
        tools: services.tools,
        content: modules.map((module) => module.content ?? {}),
        contentWatches: services.contentWatches,
        requestStateKey: services.requestStateKey,
        server,
        pollMs: listenNotify ? 1_000 : 250,
        clockCaps: clockCaps(config),
        taskAfterMs: config.mcpTaskAfterMs,
        logger,
      }),
      input: handedOver?.input ?? process.stdin,
      output: process.stdout,
      ...(handedOver ? { answered: handedOver.answered } : {}),
      // A subprocess is its launcher's own: one tenant, like unauthenticated loopback HTTP.
      tenantId: DEFAULT_TENANT,
      server,
      logger,
    });
    logger.info({ tenant: DEFAULT_TENANT, worker: args.worker, database: database.description }, 'mcp-stdio ready');
    await Promise.race([stdio.closed, lifecycle.stopRequested]);
    // Stopping on a signal: open subscriptions get their graceful end before the pipe goes.
    stdio.shutdown();
  } catch (error) {
    // Requests the front held are answered, not left waiting for a server that will not come.
    args.front?.fail(error instanceof Error ? error.message : String(error), startFailureCode(error));
    await lifecycle.stopAll();
    throw error;
  }
  const problems = await lifecycle.stopAll();
  logger.info({ problems }, 'mcp-stdio stopped');
  return problems.length === 0 ? 0 : 70;
}

/** The code a start-up failure is answered with: its own, or an outage's; none for a bug. */
function startFailureCode(error: unknown): string | undefined {
  if (isTaskgateError(error)) return error.code;
  return isDatabaseUnavailable(error) ? 'TG_SERVICE_UNAVAILABLE' : undefined;
}
