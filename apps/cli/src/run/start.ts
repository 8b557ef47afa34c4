import { type PreparedApiRole, prepareApiRole } from '@taskgate/api';
import { startRelayRole } from '@taskgate/relay';
import type { ToolModule } from '@taskgate/tools';
import { bootPlatform } from '../boot.ts';
import { type Config, clockCaps, DEFAULT_TENANT, isLoopbackHost } from '../config.ts';
import { Lifecycle, shutdownDeadlineMs } from '../lifecycle.ts';
import type { Logger } from '../logger.ts';
import type { Role } from '../roles.ts';

export interface StartArgs {
  readonly roles: readonly Role[];
  /** false: only check that the schema is current (a separate `migrate up` owns it). */
  readonly migrate: boolean;
  /** `--tools`: tool modules to load (empty: TASKGATE_TOOLS, else the project's default modules). */
  readonly tools: readonly string[];
  /** Where relative module paths start. */
  readonly cwd: string;
}

type RoleState = 'starting' | 'ok' | 'stopping';

/**
 * `taskgate start`: database, migrations, then the chosen roles in this process; runs until
 * SIGTERM or SIGINT and then stops everything in reverse order. Resolves with the exit code.
 */
export async function runStart(args: StartArgs, config: Config, logger: Logger): Promise<number> {
  const lifecycle = new Lifecycle(logger, shutdownDeadlineMs(config));
  lifecycle.installSignalHandlers();
  const booted = await bootTaskgate(args, config, logger, lifecycle);
  if (booted !== null) await lifecycle.stopRequested;
  return finish(lifecycle, logger);
}

export interface Booted {
  /** The API's URL, or null without the api role. */
  readonly url: string | null;
  readonly modules: readonly ToolModule[];
}

/**
 * Starts everything `taskgate start` runs, registering each stop with `lifecycle`. Null when a stop
 * was requested part-way (what started is registered, for the caller's stopAll); throws after
 * stopping what did start when start-up fails.
 */
export async function bootTaskgate(
  args: StartArgs,
  config: Config,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<Booted | null> {
  const roleState = new Map<Role, RoleState>(args.roles.map((role) => [role, 'starting']));
  // Built before the worker starts, listening only once everything else is up (below).
  let preparedApi: PreparedApiRole | null = null;

  try {
    const platform = await bootPlatform(
      {
        tools: args.tools,
        cwd: args.cwd,
        worker: args.roles.includes('worker'),
        noToolsMessage:
          'the worker role has no tools to serve: name a tool module with --tools <file or package> (or TASKGATE_TOOLS), or run the API alone with --role api',
        migrations: args.migrate ? 'apply' : 'check',
        moduleMigrations: true,
        health: () => Object.fromEntries(roleState),
        abandonOnStop: true,
      },
      config,
      logger,
      lifecycle,
    );
    if (platform === null) return null;
    const { modules, tools, database, listenNotify } = platform;

    // The API is built first, its modules' routes included, but listens last: a route that fails
    // to register stops start-up before the worker has claimed anything, and the API still stops
    // first (it is registered with the lifecycle last), so no call arrives for a worker that left.
    if (args.roles.includes('api')) {
      preparedApi = await prepareApiRole({
        connectionString: database.connectionString,
        logger: logger.child({ role: 'api' }),
        host: config.host,
        port: config.port,
        tokens: config.tokens,
        operatorTokens: config.operatorTokens,
        oauth: config.oauth,
        metricsToken: config.metricsToken,
        allowedOrigins: config.allowedOrigins,
        clockCaps: clockCaps(config),
        mcpSseAfterMs: config.mcpSseAfterMs,
        requestTimeoutMs: config.requestTimeoutMs,
        mcpTaskAfterMs: config.mcpTaskAfterMs,
        idempotencyRetentionMs: config.idempotencyRetentionMs,
        unauthenticatedTenant: DEFAULT_TENANT,
        // What it offers is the catalog (this process's own worker publishes there too); of the
        // modules loaded here, the inline tools run in this process.
        localTools: tools,
        modules,
        catalogWindowMs: config.catalogWindowMs,
        listenNotify,
        // One sweeper per process is plenty: the worker's, when this process runs one.
        sweep: !args.roles.includes('worker'),
        maxQueueMs: config.maxQueueMs,
        graceMs: config.shutdownGraceMs,
        checks: () => Object.fromEntries(roleState),
        stopping: () => lifecycle.stopping,
      });
    }
    if (lifecycle.stopping) return null;

    if (await platform.startWorker()) roleState.set('worker', 'ok');
    if (lifecycle.stopping) return null;

    if (args.roles.includes('relay')) {
      const relay = await startRelayRole({
        connectionString: database.connectionString,
        logger: logger.child({ role: 'relay' }),
        listenNotify,
        ...config.relay,
        // An abandoned delivery is only redelivered after its lease, so the relay takes at most 1 s
        // of the shutdown budget and leaves the rest to the worker's handlers.
        graceMs: Math.min(config.shutdownGraceMs, 1_000),
      });
      lifecycle.onStop('relay', () => relay.stop());
      roleState.set('relay', 'ok');
    }
    if (lifecycle.stopping) return null;

    let url: string | null = null;
    if (preparedApi !== null) {
      // From here listen() owns the prepared role: a listen that fails has closed it already.
      const prepared = preparedApi;
      preparedApi = null;
      const api = await prepared.listen();
      url = api.url;
      lifecycle.onStop('api', async () => {
        roleState.set('api', 'stopping');
        await api.stop();
      });
      roleState.set('api', 'ok');
      // Open only with no token of any kind (OAuth and operator tokens close it too).
      if (config.tokens.size === 0 && config.operatorTokens.size === 0 && config.oauth === null) {
        logger.warn(
          { tenant: DEFAULT_TENANT, host: config.host, loopback: isLoopbackHost(config.host) },
          `TASKGATE_TOKENS is not set: unauthenticated calls are accepted as tenant "${DEFAULT_TENANT}" because the API is bound to loopback only`,
        );
      }
    }

    // The console's address first: it is what a person starting Taskgate opens next. The message
    // stays 'taskgate started' (scripts wait for it).
    logger.info(
      { ...(url === null ? {} : { console: `${url}/ui` }), roles: args.roles, url, database: database.description },
      'taskgate started',
    );
    return { url, modules };
  } catch (error) {
    // Start-up failed part-way: stop what did start, then report the original error.
    await lifecycle.stopAll();
    throw error;
  } finally {
    // Built but never listening: start-up failed or was stopped before the API's turn came.
    await preparedApi?.discard();
  }
}

export async function finish(lifecycle: Lifecycle, logger: Logger): Promise<number> {
  const problems = await lifecycle.stopAll();
  logger.info({ problems }, problems.length === 0 ? 'taskgate stopped' : 'taskgate stopped with problems');
  return problems.length === 0 ? 0 : 70;
}
