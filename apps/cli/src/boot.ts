import { loadMigrations, MigrationRunner } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { type AnyTool, registryOf, type ToolModule, type ToolRegistry } from '@taskgate/tools';
import { startWorkerRole, type WorkerRole } from '@taskgate/worker';
import type { Config } from './config.ts';
import { type DatabaseHandle, openDatabase } from './database.ts';
import type { StartedGateways } from './gateways.ts';
import { type HealthServerOptions, startHealthServer } from './health-server.ts';
import type { Lifecycle } from './lifecycle.ts';
import type { Logger } from './logger.ts';
import { moduleMigrationsOf } from './module-migrations.ts';
import { assertSchemaCurrent } from './schema-current.ts';
import { toolModulesOf } from './tool-modules.ts';
import { workerOptions } from './worker-options.ts';

/** Where `taskgate start` and `taskgate mcp-stdio` differ in what they boot. */
export interface BootOptions {
  /** `--tools`: tool modules to load (empty: TASKGATE_TOOLS, else the project's default modules). */
  readonly tools: readonly string[];
  /** Where relative module paths start. */
  readonly cwd: string;
  /** Run tool handlers in this process: the modules' gateways start, and startWorker() runs a worker. */
  readonly worker: boolean;
  /** Why a worker with no tool at all is refused, and what to do instead (each command has its own way out). */
  readonly noToolsMessage: string;
  /** 'apply': migrate up first; 'check': refuse a schema that is not current (a separate migrate up owns it). */
  readonly migrations: 'apply' | 'check';
  /** Include the tool modules' own migrations, not only Taskgate's. */
  readonly moduleMigrations: boolean;
  /** The state of each role for TASKGATE_HEALTH_PORT's probe; absent: no probe, whatever the configuration. */
  readonly health?: HealthServerOptions['checks'];
  /**
   * Give up part-way (null) once a stop is requested. Without it start-up completes and the
   * caller stops at once: mcp-stdio does, so that the requests its front held reach a server.
   */
  readonly abandonOnStop: boolean;
}

/** What a booted process runs on: its modules, its database, migrated, and its worker to start. */
export interface Platform {
  readonly modules: readonly ToolModule[];
  /** The tools of the modules loaded here (their inline tools run in this process). */
  readonly tools: ToolRegistry;
  readonly database: DatabaseHandle;
  /** NOTIFY crosses connections on a real Postgres only; embedded, everything polls (faster). */
  readonly listenNotify: boolean;
  /** Starts the worker role, registered with the lifecycle; null without BootOptions.worker. */
  startWorker(): Promise<WorkerRole | null>;
}

/**
 * Configuration → modules (and their gateways) → database → health probe → migrations, each stop
 * registered with `lifecycle`; the roles come after, from the caller (the API is built before the
 * worker starts and listens last, see start.ts). Null when a stop was requested part-way and
 * `abandonOnStop` is set. A failure is thrown with what started still registered: the caller's
 * stopAll stops it.
 */
export async function bootPlatform(
  options: BootOptions & { readonly abandonOnStop: false },
  config: Config,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<Platform>;
export async function bootPlatform(
  options: BootOptions,
  config: Config,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<Platform | null>;
export async function bootPlatform(
  options: BootOptions,
  config: Config,
  logger: Logger,
  lifecycle: Lifecycle,
): Promise<Platform | null> {
  const stopped = () => options.abandonOnStop && lifecycle.stopping;
  // Before anything starts: a module that does not load stops start-up with nothing running.
  const modules = await toolModulesOf(options.tools, config, options.cwd, logger);
  const tools = registryOf(modules);
  // A worker holds the modules' downstream MCP servers; their tools are its tools too.
  let workerTools = tools;
  let gateways: StartedGateways | null = null;
  let startedWith: readonly AnyTool[] = [];
  if (options.worker && modules.some((module) => (module.gateways ?? []).length > 0)) {
    // Loaded only here: the MCP SDK is not loaded by a process without gateways.
    const { startGateways } = await import('./gateways.ts');
    const started = await startGateways(modules, logger);
    gateways = started;
    lifecycle.onStop('gateways', () => started.stop());
    startedWith = started.tools;
    workerTools = registryOf(modules, startedWith);
  }
  if (options.worker && workerTools.list().length === 0) {
    throw new TaskgateError('TG_USAGE', options.noToolsMessage);
  }
  const migrations = options.moduleMigrations ? await moduleMigrationsOf(modules) : undefined;
  const database = await openDatabase(config, logger);
  lifecycle.onStop('database', () => database.stop());
  if (stopped()) return null;
  if (options.health !== undefined && config.healthPort !== null) {
    // Up before the migrations and the roles, so a probe sees "alive, starting" meanwhile.
    const health = await startHealthServer({
      host: config.host,
      port: config.healthPort,
      connectionString: database.connectionString,
      checks: options.health,
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
    ...(migrations === undefined ? {} : { modules: migrations }),
    logger: logger.child({ component: 'migrate' }),
  });
  if (options.migrations === 'apply') {
    await runner.up();
  } else {
    assertSchemaCurrent(await runner.status());
  }
  if (stopped()) return null;

  return {
    modules,
    tools,
    database,
    listenNotify: database.kind === 'external',
    startWorker: async () => {
      if (!options.worker) return null;
      const worker = await startWorkerRole(workerOptions(config, database, workerTools, logger));
      lifecycle.onStop('worker', () => worker.stop());
      if (gateways !== null) {
        const { followGatewayTools } = await import('./gateways.ts');
        followGatewayTools(gateways, modules, startedWith, worker, logger);
      }
      return worker;
    },
  };
}
