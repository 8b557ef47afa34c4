import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  type ApiRole,
  type ApiRoleOptions,
  type Authenticator,
  ConsoleSessions,
  createApiServer,
  createAuthenticator,
  databaseSessionStore,
  LedgerService,
  startApiRole,
  TaskEventsHub,
  TaskService,
} from '@taskgate/api';
import {
  createKysely,
  createPool,
  type Database,
  DatabaseSessionSignals,
  PGBOSS_SCHEMA,
  TaskAnnouncer,
  type TaskRecord,
  type TaskWriter,
} from '@taskgate/db';
import type { TaskgateMetrics } from '@taskgate/metrics';
import { type AnyTool, type ContentSet, loadToolModules, type ToolCatalog, ToolRegistry } from '@taskgate/tools';
import { startWorkerRole, type WorkerRole, type WorkerRoleOptions } from '@taskgate/worker';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type Kysely, sql } from 'kysely';
import { PgBoss } from 'pg-boss';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { builtinTools } from './example-tools.ts';

const LEDGER_MODULE = fileURLToPath(new URL('../../examples/ledger/index.ts', import.meta.url));

/** A real logger that writes nothing: the same interface the roles get from the CLI. */
export const silentLogger = pino({ level: 'silent' });

export interface Platform {
  readonly db: Kysely<Database>;
  /** Task writes as the roles make them (announced once they commit). */
  readonly writer: TaskWriter;
  readonly announcer: TaskAnnouncer;
  readonly service: TaskService;
  readonly tools: ToolRegistry;
  readonly boss: PgBoss;
  worker: WorkerRole | null;
  startWorker(overrides?: Partial<WorkerRoleOptions>): Promise<WorkerRole>;
  stop(): Promise<void>;
}

/**
 * The API's TaskService and (when asked) a worker, in this process, on the given database: the
 * same code `taskgate start` wires, with the knobs tests need.
 */
export async function startPlatform(
  url: string,
  options: {
    tools?: readonly AnyTool[];
    service?: Partial<ConstructorParameters<typeof TaskService>[0]>;
  } = {},
): Promise<Platform> {
  const tools = new ToolRegistry([...builtinTools, ...(options.tools ?? [])]);
  const pool = createPool(url, { applicationName: 'taskgate-test', max: 16 });
  const db = createKysely(pool);
  const boss = new PgBoss({
    connectionString: url,
    schema: PGBOSS_SCHEMA,
    migrate: false,
    supervise: false,
    schedule: false,
    max: 3,
  });
  boss.on('error', () => {});
  await boss.start();
  const announcer = new TaskAnnouncer(db);
  const service = new TaskService({
    db,
    boss,
    announcer,
    tools,
    defaultTtlMs: 3_600_000,
    pollIntervalMs: 500,
    ...options.service,
  });
  const platform: Platform = {
    db,
    writer: announcer.writer(db),
    announcer,
    service,
    tools,
    boss,
    worker: null,
    async startWorker(overrides = {}) {
      platform.worker = await startWorkerRole({
        connectionString: url,
        logger: silentLogger,
        tools,
        graceMs: 1_000,
        listenNotify: true,
        concurrency: 4,
        ...overrides,
      });
      return platform.worker;
    },
    async stop() {
      service.stop();
      await platform.worker?.stop();
      await boss.stop({ graceful: false, close: true });
      await announcer.settled();
      await db.destroy();
    },
  };
  return platform;
}

/** Resolves with the task once `predicate` holds, re-reading it on every notification-free tick. */
/**
 * The API role as `taskgate start --role api` runs it on loopback with no tokens (tenant
 * "default"), listening on a port the system picks; `overrides` adds or replaces options.
 */
export function startLoopbackApi(connectionString: string, overrides: Partial<ApiRoleOptions> = {}): Promise<ApiRole> {
  return startApiRole({
    connectionString,
    logger: silentLogger,
    host: '127.0.0.1',
    port: 0,
    tokens: new Map(),
    unauthenticatedTenant: 'default',
    listenNotify: true,
    checks: () => ({}),
    stopping: () => false,
    ...overrides,
  });
}

export async function waitForTask<T>(
  read: () => Promise<T>,
  predicate: (task: T) => boolean,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await read();
    if (predicate(task)) return task;
    if (Date.now() > deadline)
      throw new Error(`condition not reached in ${timeoutMs} ms; last: ${JSON.stringify(task)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface Barrier {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

/** A promise with its resolve exposed, for holding a handler at a known point. */
export function barrier(): Barrier {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The REST API over a platform's TaskService, with its events hub: what the api role wires. */
export async function startApi(
  platform: Platform,
  url: string,
  options: {
    tokens?: ReadonlyMap<string, string>;
    /** TASKGATE_OPERATOR_TOKENS. */
    operatorTokens?: ReadonlySet<string>;
    /** Replaces `tokens`: OAuth, a metrics token. */
    auth?: Authenticator;
    /** The port serveApi listens on (default: one the system picks). */
    port?: number;
    events?: { keepaliveMs?: number; pollMs?: number };
    mcp?: { allowedOrigins?: readonly string[]; loopbackOnly?: boolean; sseAfterMs?: number };
    /** What /mcp offers (default: the platform's registry). */
    tools?: ToolCatalog;
    /** Resources and prompts /mcp offers besides the tasks' (default: none). */
    content?: readonly ContentSet[];
    /** How long a request may take to arrive (default: the server's). */
    requestTimeoutMs?: number;
    /** Where the server logs (default: nowhere). */
    logger?: FastifyBaseLogger;
    /** What the server counts into (default: the process's metrics). */
    metrics?: TaskgateMetrics;
  } = {},
): Promise<{ app: FastifyInstance; hub: TaskEventsHub; close(): Promise<void> }> {
  const hub = new TaskEventsHub({ connectionString: url, listen: true, logger: silentLogger });
  await hub.start();
  // As the api role has them: a POSTed cancel or response reaches the instance holding its request.
  const signals = new DatabaseSessionSignals({
    db: platform.db,
    connectionString: url,
    applicationName: 'taskgate-test-sessions',
    logger: silentLogger,
  });
  await signals.start();
  // As the api role has them: console sign-ins in Postgres.
  const consoleSessions = new ConsoleSessions(platform.db);
  const app = await createApiServer({
    logger: options.logger ?? silentLogger,
    ...(options.metrics ? { metrics: options.metrics } : {}),
    readiness: async () => ({ ready: true, checks: {} }),
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    tasks: {
      service: platform.service,
      ledger: new LedgerService(platform.db),
      db: platform.db,
      hub,
      // The example ledger's routes (charges, inventory), as `taskgate start` serves them by default.
      modules: {
        loaded: await loadToolModules([LEDGER_MODULE], process.cwd()),
        db: platform.db,
        idempotencyRetentionMs: 24 * 3600 * 1000,
      },
      auth:
        options.auth ??
        createAuthenticator({
          tokens: options.tokens ?? new Map(),
          ...(options.operatorTokens ? { operatorTokens: options.operatorTokens } : {}),
          unauthenticatedTenant: 'default',
          sessions: consoleSessions,
        }),
      consoleSessions,
      ...(options.events ? { events: options.events } : {}),
      mcp: {
        tools: options.tools ?? platform.tools,
        ...(options.content ? { content: options.content } : {}),
        allowedOrigins: options.mcp?.allowedOrigins ?? [],
        loopbackOnly: options.mcp?.loopbackOnly ?? false,
        ...(options.mcp?.sseAfterMs === undefined ? {} : { sseAfterMs: options.mcp.sseAfterMs }),
        // As the api role keeps them: in Postgres.
        sessions: databaseSessionStore(platform.db),
        signals,
      },
    },
  });
  return {
    app,
    hub,
    close: async () => {
      await app.close();
      await hub.stop();
      await signals.stop();
    },
  };
}

/** Serves a platform's REST and MCP API on a free loopback port; resolves with the /mcp URL too. */
export async function serveApi(platform: Platform, url: string, options: Parameters<typeof startApi>[2] = {}) {
  const api = await startApi(platform, url, options);
  await api.app.listen({ host: '127.0.0.1', port: options.port ?? 0 });
  const mcpUrl = new URL(`http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}/mcp`);
  return { ...api, mcpUrl };
}

/**
 * The task a client started without telling us its id, found by one of its arguments, once it has
 * left `working` (for "did the server stop the work?").
 */
export async function endedTaskWith(
  platform: Platform,
  tool: string,
  argument: string,
  value: string,
  tenant = 'default',
): Promise<TaskRecord> {
  const id = await waitForTask(
    async () => {
      const { rows } = await sql<{ id: string }>`
        SELECT id FROM tasks WHERE tool = ${tool} AND arguments->>${argument} = ${value}`.execute(platform.db);
      return rows[0]?.id;
    },
    (found) => found !== undefined,
  );
  return waitForTask(
    () => platform.service.get(tenant, id as string),
    (task: TaskRecord) => task.status !== 'working',
  );
}

export type ServedApi = Awaited<ReturnType<typeof serveApi>>;

/**
 * A test file's platform (with a worker unless `worker: false`) and its API on a free loopback
 * port, made before the file's tests and stopped after them — the setup most tests of /mcp
 * share. Read `platform` and `api` inside tests and hooks.
 */
export function useServedPlatform(
  database: { readonly url: string },
  options: { tools?: readonly AnyTool[]; worker?: boolean; api?: Parameters<typeof startApi>[2] } = {},
): { readonly platform: Platform; readonly api: ServedApi } {
  let platform: Platform | undefined;
  let api: ServedApi | undefined;
  beforeAll(async () => {
    platform = await startPlatform(database.url, options.tools ? { tools: options.tools } : {});
    if (options.worker !== false) await platform.startWorker();
    api = await serveApi(platform, database.url, options.api);
  });
  afterAll(async () => {
    await api?.close();
    await platform?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the served platform exists only inside tests and hooks');
    return value;
  };
  return {
    get platform() {
      return started(platform);
    },
    get api() {
      return started(api);
    },
  };
}
