import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  CatalogView,
  createKysely,
  createPool,
  type Database,
  DatabaseSessionSignals,
  type InstanceHeartbeat,
  instanceUpkeep,
  PGBOSS_SCHEMA,
  type SweeperSettings,
  serverSecret,
  TaskAnnouncer,
  type TaskSweeper,
} from '@taskgate/db';
import { CatalogTools, type ToolCatalog, type ToolRegistry } from '@taskgate/tools';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { PgBoss } from 'pg-boss';
import { LedgerService } from './ledger/ledger-service.ts';
import { RemoteWatches } from './mcp/methods/remote-watches.ts';
import { TaskEventsHub } from './tasks/task-events-hub.ts';
import { type ClockCaps, TaskService } from './tasks/task-service.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface TaskServicesOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  /**
   * Listen for MCP session signals (a POSTed cancel or response that another API instance took):
   * the HTTP API does; stdio, whose pipe holds every request, does not.
   */
  readonly sessionSignals?: boolean;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly error: LogFn };
  /**
   * The tools of the modules loaded in this process (none with `--tools none`). The tools offered
   * are the catalog's, which workers publish; of these, only inline tools count here: they run in
   * this process, and are offered even when no worker serves them.
   */
  readonly localTools?: ToolRegistry;
  /** How long a tool no live worker serves stays offered (TASKGATE_CATALOG_WINDOW_MS; default 30 s). */
  readonly catalogWindowMs?: number;
  /** How often the catalog is re-read besides NOTIFY (default 1 s): what sees a tool age out. */
  readonly catalogPollIntervalMs?: number;
  /** Whether NOTIFY reaches this process (false on the embedded Postgres: watchers poll faster). */
  readonly listenNotify: boolean;
  readonly defaultTtlMs?: number;
  readonly idempotencyRetentionMs?: number;
  readonly clockCaps?: ClockCaps;
  /** This instance's id in `instances` and in its request-mode tasks (default api-<random>). */
  readonly instanceId?: string;
  readonly heartbeatIntervalMs?: number;
  /**
   * Run the task sweeper here (default true). A process that also runs a worker sweeps there, and
   * an API process with no worker must sweep itself: with no worker anywhere, only it can end a
   * call's task at the queue bound.
   */
  readonly sweep?: boolean;
  readonly sweeper?: SweeperSettings;
}

export interface TaskServices {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  /** The tools offered: the catalog, with this process's inline tools. */
  readonly tools: ToolCatalog;
  readonly catalog: CatalogView;
  readonly service: TaskService;
  readonly ledger: LedgerService;
  readonly hub: TaskEventsHub;
  /** POSTed MCP cancels and responses, to the instance holding their request; null without NOTIFY. */
  readonly sessionSignals: DatabaseSessionSignals | null;
  /** The key that signs MCP requestState, shared by every instance (server_secrets). */
  readonly requestStateKey: Buffer;
  /** Subscriptions to resources of modules this process did not load, for workers to watch. */
  readonly contentWatches: RemoteWatches;
  readonly heartbeat: InstanceHeartbeat;
  readonly sweeper: TaskSweeper | null;
  stop(): Promise<void>;
}

const DEFAULT_TTL_MS = 24 * 3600 * 1000;

/**
 * What every front door (the HTTP API, MCP over stdio) needs to accept calls: a pool, a send-only
 * pg-boss, the events hub, and the services over them.
 */
export async function openTaskServices(options: TaskServicesOptions): Promise<TaskServices> {
  const pool = createPool(options.connectionString, { applicationName: options.applicationName, max: 10 });
  const db = createKysely(pool);
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: PGBOSS_SCHEMA,
    application_name: options.applicationName,
    migrate: false,
    supervise: false,
    schedule: false,
    max: 2,
  });
  boss.on('error', (error) => options.logger.error({ error: error.message }, 'pg-boss error'));
  const hub = new TaskEventsHub({
    connectionString: options.connectionString,
    listen: options.listenNotify,
    logger: options.logger,
  });
  const announcer = new TaskAnnouncer(db, { logger: options.logger });
  // Without NOTIFY (the embedded database) there is one process, which holds every request.
  const sessionSignals =
    options.listenNotify && options.sessionSignals
      ? new DatabaseSessionSignals({
          db,
          connectionString: options.connectionString,
          applicationName: `${options.applicationName}-sessions`,
          logger: options.logger,
        })
      : null;
  const instanceId = options.instanceId ?? `api-${randomUUID().slice(0, 8)}`;
  // Request-mode tasks name this instance: if it is lost, a sweeper cancels them (nobody is left
  // to answer their callers).
  const upkeep = instanceUpkeep({
    db,
    announcer,
    identity: { id: instanceId, kind: 'api', host: hostname(), pid: process.pid },
    logger: options.logger,
    ...(options.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
    ...(options.sweep === undefined ? {} : { sweep: options.sweep }),
    ...(options.sweeper ? { sweeper: options.sweeper } : {}),
  });
  // What this process offers is what the catalog lists (one path, whether or not a worker runs in
  // this process: its own worker publishes there too), plus the inline tools loaded here.
  const catalog = new CatalogView({
    db,
    ...(options.catalogWindowMs === undefined ? {} : { windowMs: options.catalogWindowMs }),
    ...(options.catalogPollIntervalMs === undefined ? {} : { pollIntervalMs: options.catalogPollIntervalMs }),
    listen: options.listenNotify
      ? { connectionString: options.connectionString, applicationName: `${options.applicationName}-catalog` }
      : null,
    logger: options.logger,
  });
  const tools = new CatalogTools(catalog, { local: options.localTools ?? null, logger: options.logger });
  const contentWatches = new RemoteWatches({
    db,
    instanceId,
    ...(options.listenNotify
      ? {
          listen: { connectionString: options.connectionString, applicationName: `${options.applicationName}-content` },
        }
      : {}),
    logger: options.logger,
  });
  // Once: a caller's clean-up may run after a failed step already stopped everything (the API's
  // listen, then start-up's discard), and a second upkeep stop would write to a destroyed pool.
  let stopped: Promise<void> | null = null;
  let service: TaskService | null = null;
  const stop = () => {
    stopped ??= (async () => {
      service?.stop();
      tools.close();
      await Promise.allSettled([
        contentWatches.stop(),
        hub.stop(),
        sessionSignals?.stop(),
        catalog.stop(),
        boss.stop({ graceful: false, close: true }),
        upkeep.stop(),
      ]);
      await announcer.settled();
      await db.destroy();
    })();
    return stopped;
  };
  let requestStateKey: Buffer;
  try {
    await boss.start();
    await hub.start();
    await sessionSignals?.start();
    await catalog.start();
    await upkeep.start();
    requestStateKey = await serverSecret(db, 'mcp-request-state');
  } catch (error) {
    await stop();
    throw error;
  }
  service = new TaskService({
    db,
    boss,
    announcer,
    tools,
    defaultTtlMs: options.defaultTtlMs ?? DEFAULT_TTL_MS,
    pollIntervalMs: options.listenNotify ? 1_000 : 500,
    instanceId,
    logger: options.logger,
    ...(options.idempotencyRetentionMs === undefined ? {} : { idempotencyRetentionMs: options.idempotencyRetentionMs }),
    ...(options.clockCaps ? { clockCaps: options.clockCaps } : {}),
  });
  const ledger = new LedgerService(db);
  return {
    pool,
    db,
    tools,
    catalog,
    service,
    ledger,
    hub,
    sessionSignals,
    requestStateKey,
    contentWatches,
    heartbeat: upkeep.heartbeat,
    sweeper: upkeep.sweeper,
    stop,
  };
}
