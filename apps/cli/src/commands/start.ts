import { type PreparedApiRole, prepareApiRole } from '@taskgate/api';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { startRelayRole } from '@taskgate/relay';
import { registryOf, type ToolModule } from '@taskgate/tools';
import { startWorkerRole } from '@taskgate/worker';
import { type Config, clockCaps, DEFAULT_TENANT, isLoopbackHost } from '../config.ts';
import { openDatabase } from '../database.ts';
import { startHealthServer } from '../health-server.ts';
import { Lifecycle } from '../lifecycle.ts';
import type { Logger } from '../logger.ts';
import { moduleMigrationsOf } from '../module-migrations.ts';
import type { Role } from '../roles.ts';
import { assertSchemaCurrent } from '../schema-current.ts';
import { toolModulesOf } from '../tool-modules.ts';
import { workerOptions } from '../worker-options.ts';

export interface StartArgs {
  readonly roles: readonly Role[];
  /** false: only check that the schema is current (a separate `migrate up` owns it). */
  readonly migrate: boolean;
  /** `--tools`: tool modules to load (empty: TASKGATE_TOOLS, else the demo modules). */
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
  // Shutdown may take the grace period for in-flight work plus time to close connections.
  const lifecycle = new Lifecycle(logger, config.shutdownGraceMs + 2_000);
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
    // Before anything starts: a module that does not load stops start-up with nothing running.
    const modules = await toolModulesOf(args.tools, config, args.cwd, logger);
    const tools = registryOf(modules);
    // A worker holds the modules' downstream MCP servers; their tools are its tools too.
    let workerTools = tools;
    let gateways: import('../gateways.ts').StartedGateways | null = null;
    let startedWith: readonly import('@taskgate/tools').AnyTool[] = [];
    if (args.roles.includes('worker') && modules.some((module) => (module.gateways ?? []).length > 0)) {
      // Loaded only here: the MCP SDK is not loaded by a process without gateways.
      const { startGateways } = await import('../gateways.ts');
      const started = await startGateways(modules, logger);
      gateways = started;
      lifecycle.onStop('gateways', () => started.stop());
      startedWith = started.tools;
      workerTools = registryOf(modules, startedWith);
    }
    if (args.roles.includes('worker') && workerTools.list().length === 0) {
      throw new TaskgateError(
        'TG_USAGE',
        'the worker role has no tools to serve: name a tool module with --tools <file or package> (or TASKGATE_TOOLS), or run the API alone with --role api',
      );
    }
    const migrations = await moduleMigrationsOf(modules);
    const database = await openDatabase(config, logger);
    lifecycle.onStop('database', () => database.stop());
    if (lifecycle.stopping) return null;
    if (config.healthPort !== null) {
      // Up before the migrations and the roles, so a probe sees "alive, starting" meanwhile.
      const health = await startHealthServer({
        host: config.host,
        port: config.healthPort,
        connectionString: database.connectionString,
        checks: () => Object.fromEntries(roleState),
        stopping: () => lifecycle.stopping,
        logger,
        metricsToken: config.metricsToken,
        tokensRequired: config.tokens.size > 0 || config.operatorTokens.size > 0 || config.oauth !== null,
      });
      lifecycle.onStop('health', () => health.stop());
    }

    const runner = new MigrationRunner({
      connectionString: database.connectionString,
      migrations: await loadMigrations(),
      modules: migrations,
      logger: logger.child({ component: 'migrate' }),
    });
    if (args.migrate) {
      await runner.up();
    } else {
      assertSchemaCurrent(await runner.status());
    }
    if (lifecycle.stopping) return null;

    // NOTIFY crosses connections on a real Postgres only; embedded, everything polls (faster).
    const listenNotify = database.kind === 'external';

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

    if (args.roles.includes('worker')) {
      const worker = await startWorkerRole(workerOptions(config, database, workerTools, logger));
      lifecycle.onStop('worker', () => worker.stop());
      if (gateways !== null) {
        const { followGatewayTools } = await import('../gateways.ts');
        followGatewayTools(gateways, modules, startedWith, worker, logger);
      }
      roleState.set('worker', 'ok');
    }
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
