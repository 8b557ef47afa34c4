import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import { TaskgateError } from '@taskgate/errors';
import { markSharedSession } from '../preparing-client.ts';
import { type DataDirLock, lockDataDir } from './data-dir-lock.ts';
import { SessionQueue, type SessionQueueStats } from './session-queue.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface EmbeddedPostgresOptions {
  /** Directory for the database files; null keeps everything in memory (tests). */
  readonly dataDir: string | null;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** How long a connection may wait for another connection's transaction (default 30 s). */
  readonly waitTimeoutMs?: number;
  readonly logger?: { readonly debug: LogFn; readonly info: LogFn; readonly warn: LogFn };
}

export interface EmbeddedPostgres {
  /** postgres:// URL of the loopback socket; every pg, pg-boss and Kysely client uses it. */
  readonly connectionString: string;
  readonly dataDir: string | null;
  /** Set when the previous run on this directory did not stop cleanly. */
  readonly stalePid: number | null;
  stats(): SessionQueueStats & { readonly connections: number };
  /** Resolves once a connection is queued behind another connection's transaction. */
  whenBlocked(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * PGlite (Postgres compiled to WebAssembly, one backend, files in `dataDir`) served over the
 * Postgres wire protocol on a loopback port, so the same pg / pg-boss / Kysely code runs on it as on
 * a real server. See docs/embedded-postgres.md for what this mode can and cannot do.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = options.dataDir === null ? null : path.resolve(options.dataDir);
  const lock: DataDirLock | null = dataDir === null ? null : await lockDataDir(dataDir);
  if (lock?.stalePid) {
    options.logger?.warn(
      { dataDir, stalePid: lock.stalePid },
      'the previous embedded run on this data directory did not stop cleanly; Postgres recovers from its WAL',
    );
  }

  if (dataDir !== null && !existsSync(path.join(dataDir, 'PG_VERSION'))) {
    options.logger?.info({ dataDir }, 'creating the embedded database (the first start takes a few seconds)');
  }
  let db: PGlite;
  try {
    db = await PGlite.create(dataDir === null ? {} : { dataDir });
  } catch (error) {
    await lock?.release();
    throw new TaskgateError(
      'TG_EMBEDDED_START_FAILED',
      `embedded Postgres could not open ${dataDir ?? 'an in-memory database'}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }

  const queue = new SessionQueue(db, {
    waitTimeoutMs: options.waitTimeoutMs ?? 30_000,
    onWaitTimeout: (event) =>
      options.logger?.warn(
        { ...event, code: 'TG_EMBEDDED_TRANSACTION_WAIT' },
        'embedded Postgres: a connection waited too long for another transaction',
      ),
  });
  const handlers = new Set<PGLiteSocketHandler>();
  const server = net.createServer((socket) => {
    const handler = new PGLiteSocketHandler({
      // The handler only calls enqueue / clearQueueForHandler / clearTransactionIfNeeded, which
      // SessionQueue implements; its declared type is the package's private queue class.
      queryQueue: queue as unknown as PGLiteSocketHandlerOptions['queryQueue'],
      closeOnDetach: true,
    });
    handlers.add(handler);
    const forget = () => handlers.delete(handler);
    handler.addEventListener('close', forget);
    handler.addEventListener('error', (event) => {
      forget();
      options.logger?.debug({ error: String((event as CustomEvent).detail) }, 'embedded Postgres connection error');
    });
    handler.attach(socket).catch(() => {
      forget();
      socket.destroy();
    });
  });

  const host = options.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await db.close().catch(() => {});
    await lock?.release();
    throw new TaskgateError(
      'TG_EMBEDDED_START_FAILED',
      `embedded Postgres could not listen on ${host}:${options.port ?? 0}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const port = (server.address() as net.AddressInfo).port;
  const unmark = markSharedSession(host, port);

  let stopping: Promise<void> | undefined;
  return {
    connectionString: `postgres://postgres@${host}:${port}/postgres`,
    dataDir,
    stalePid: lock?.stalePid ?? null,
    stats: () => ({ ...queue.stats(), connections: handlers.size }),
    whenBlocked: () => queue.whenBlocked(),
    stop: () => {
      stopping ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Detaching rolls back a transaction a client left open, before PGlite closes.
        await Promise.all([...handlers].map((handler) => handler.detach(true)));
        handlers.clear();
        await closed;
        unmark();
        await db.close();
        await lock?.release();
      })();
      return stopping;
    },
  };
}
