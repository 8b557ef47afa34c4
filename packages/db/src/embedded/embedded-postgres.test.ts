import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isTaskgateError } from '@taskgate/errors';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations } from '../migrations/migration-files.ts';
import { MigrationRunner } from '../migrations/migration-runner.ts';
import { PGBOSS_SCHEMA } from '../migrations/pgboss-schema.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.ts';

const clients: pg.Client[] = [];
async function connect(embedded: EmbeddedPostgres): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: embedded.connectionString });
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  return client;
}
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.end().catch(() => {})));
});

describe('embedded Postgres: one backend shared by many connections', () => {
  let embedded: EmbeddedPostgres;
  beforeAll(async () => {
    embedded = await startEmbeddedPostgres({ dataDir: null, waitTimeoutMs: 2_000 });
  });
  afterAll(async () => {
    await embedded.stop();
  });

  it("a transaction on one connection neither sees nor absorbs another connection's statements", async () => {
    const a = await connect(embedded);
    const b = await connect(embedded);
    await a.query('CREATE TABLE absorb (who text NOT NULL)');
    await a.query('BEGIN');
    await a.query("INSERT INTO absorb VALUES ('a')");
    const bInsert = b.query("INSERT INTO absorb VALUES ('b')");
    await embedded.whenBlocked(); // B is queued behind A's open transaction
    const insideA = await a.query<{ who: string }>('SELECT who FROM absorb ORDER BY who');
    expect(insideA.rows.map((row) => row.who)).toEqual(['a']);
    await a.query('ROLLBACK');
    await bInsert;
    const after = await b.query<{ who: string }>('SELECT who FROM absorb ORDER BY who');
    // A's rollback took only A's row; B's insert ran on its own, after A, and committed.
    expect(after.rows.map((row) => row.who)).toEqual(['b']);
  });

  it('many connections mixing prepared statements and transactions never cross', async () => {
    const pool = new pg.Pool({ connectionString: embedded.connectionString, max: 8 });
    try {
      await pool.query('CREATE TABLE crossing (worker int, i int, kept bool)');
      let wrong = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          const client = await pool.connect();
          try {
            for (let i = 0; i < 60; i++) {
              if (worker % 2 === 0) {
                await client.query('BEGIN');
                await client.query('INSERT INTO crossing VALUES ($1, $2, $3)', [worker, i, i % 3 !== 0]);
                const seen = await client.query<{ n: number }>(
                  'SELECT count(*)::int AS n FROM crossing WHERE worker = $1 AND i = $2',
                  [worker, i],
                );
                if (seen.rows[0]?.n !== 1) wrong++;
                await client.query(i % 3 === 0 ? 'ROLLBACK' : 'COMMIT');
              } else {
                const echoed = await client.query<{ i: number; tag: string }>('SELECT $1::int AS i, $2::text AS tag', [
                  i,
                  `w${worker}`,
                ]);
                if (echoed.rows[0]?.i !== i || echoed.rows[0]?.tag !== `w${worker}`) wrong++;
                await client.query('INSERT INTO crossing VALUES ($1, $2, true)', [worker, i]);
              }
            }
          } finally {
            client.release();
          }
        }),
      );
      expect(wrong).toBe(0);
      const totals = await pool.query<{ n: number; rolled_back: number }>(
        'SELECT count(*)::int AS n, count(*) FILTER (WHERE NOT kept)::int AS rolled_back FROM crossing',
      );
      // 4 transactional workers keep 40 of 60 rows each, 4 plain workers keep all 60.
      expect(totals.rows[0]).toEqual({ n: 4 * 40 + 4 * 60, rolled_back: 0 });
    } finally {
      await pool.end();
    }
  });

  it('a client that disconnects inside a transaction is rolled back and frees the backend', async () => {
    const a = await connect(embedded);
    const b = await connect(embedded);
    await b.query('CREATE TABLE dropped (v int)');
    await a.query('BEGIN');
    await a.query('INSERT INTO dropped VALUES (1)');
    const bInsert = b.query('INSERT INTO dropped VALUES (2)');
    await embedded.whenBlocked();
    (a as unknown as { connection: { stream: net.Socket } }).connection.stream.destroy();
    await bInsert;
    const rows = await b.query<{ v: number }>('SELECT v FROM dropped');
    expect(rows.rows.map((row) => row.v)).toEqual([2]);
    expect(embedded.stats().owner).toBeNull();
  });

  it('a client that disconnects between Parse and Sync does not leave the backend mid-batch', async () => {
    const b = await connect(embedded);
    const raw = await rawConnection(embedded.connectionString);
    // Parse + Flush, no Sync: the backend answers ParseComplete and the batch stays open.
    raw.socket.write(Buffer.concat([parseMessage('SELECT 1'), Buffer.from([0x48, 0, 0, 0, 4])]));
    await raw.read((bytes) => bytes.includes(0x31));
    const query = b.query('SELECT 42 AS answer');
    await embedded.whenBlocked();
    raw.socket.destroy();
    expect((await query).rows).toEqual([{ answer: 42 }]);
  });

  it('a connection that waits longer than the limit gets a clear error and the holder is unaffected', async () => {
    const a = await connect(embedded);
    const b = await connect(embedded);
    await a.query('CREATE TABLE holder (v int)');
    await a.query('BEGIN');
    await a.query('INSERT INTO holder VALUES (1)');
    await expect(b.query('SELECT 1')).rejects.toThrow(
      /embedded Postgres: waited \d+ ms while another connection held a transaction.*\[TG_EMBEDDED_TRANSACTION_WAIT\]/,
    );
    await a.query('INSERT INTO holder VALUES (2)');
    await a.query('COMMIT');
    const c = await connect(embedded);
    expect((await c.query('SELECT count(*)::int AS n FROM holder')).rows).toEqual([{ n: 2 }]);
  });

  it('shares session state and session advisory locks between connections (a documented limit)', async () => {
    const a = await connect(embedded);
    const b = await connect(embedded);
    await a.query("SET application_name = 'set-by-a'");
    expect((await b.query('SHOW application_name')).rows).toEqual([{ application_name: 'set-by-a' }]);
    expect((await a.query('SELECT pg_try_advisory_lock(4242) AS locked')).rows).toEqual([{ locked: true }]);
    // On a real server this would be false.
    expect((await b.query('SELECT pg_try_advisory_lock(4242) AS locked')).rows).toEqual([{ locked: true }]);
    await a.query('SELECT pg_advisory_unlock_all()');
    await a.query('RESET application_name');
  });

  it('pg-boss installs, sends, fetches and completes every job exactly once through it', async () => {
    await new MigrationRunner({ connectionString: embedded.connectionString, migrations: await loadMigrations() }).up();
    const boss = new PgBoss({
      connectionString: embedded.connectionString,
      schema: PGBOSS_SCHEMA,
      migrate: false,
      supervise: false,
      schedule: false,
      max: 4,
    });
    boss.on('error', () => {});
    await boss.start();
    try {
      await boss.createQueue('embedded-probe');
      const sent = await Promise.all(Array.from({ length: 40 }, (_, i) => boss.send('embedded-probe', { i })));
      expect(new Set(sent).size).toBe(40);
      // Two fetchers at once: SKIP LOCKED must still hand each job to exactly one of them.
      const fetched: string[] = [];
      await Promise.all(
        [0, 1].map(async () => {
          for (;;) {
            const jobs = await boss.fetch('embedded-probe', { batchSize: 7 });
            if (jobs.length === 0) return;
            fetched.push(...jobs.map((job) => job.id));
            await boss.complete(
              'embedded-probe',
              jobs.map((job) => job.id),
            );
          }
        }),
      );
      expect(fetched.sort()).toEqual([...(sent as string[])].sort());
      const stats = await boss.getQueueStats('embedded-probe');
      expect(stats.length).toBeGreaterThanOrEqual(0);
      const completed = await boss.findJobs('embedded-probe', {});
      expect(completed.filter((job) => job.state === 'completed')).toHaveLength(40);
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  });
});

describe('embedded Postgres on disk', () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('keeps its data across stop and start', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'taskgate-embedded-'));
    const first = await startEmbeddedPostgres({ dataDir });
    const client = new pg.Client({ connectionString: first.connectionString });
    await client.connect();
    await client.query("CREATE TABLE kept AS SELECT 'still here' AS note");
    await client.end();
    await first.stop();

    const second = await startEmbeddedPostgres({ dataDir });
    expect(second.stalePid).toBeNull();
    const again = new pg.Client({ connectionString: second.connectionString });
    await again.connect();
    expect((await again.query('SELECT note FROM kept')).rows).toEqual([{ note: 'still here' }]);
    await again.end();
    await second.stop();
  });

  it('refuses a data directory it cannot create, naming it and TASKGATE_DATA_DIR', async () => {
    const parent = await mkdtemp(path.join(tmpdir(), 'taskgate-embedded-'));
    // A file where the directory would go: mkdir fails whoever runs it (root included).
    const blocked = path.join(parent, 'file');
    await writeFile(blocked, 'not a directory');
    const error = await startEmbeddedPostgres({ dataDir: path.join(blocked, 'data') }).catch((e: unknown) => e);
    expect(isTaskgateError(error, 'TG_EMBEDDED_START_FAILED')).toBe(true);
    expect((error as Error).message).toMatch(
      /file\/data cannot be used .*; set TASKGATE_DATA_DIR to a writable directory/,
    );
  });

  it('refuses a directory that another live process or this process holds', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'taskgate-embedded-'));
    const holder = await startEmbeddedPostgres({ dataDir });
    try {
      const error = await startEmbeddedPostgres({ dataDir }).catch((e: unknown) => e);
      expect(isTaskgateError(error, 'TG_EMBEDDED_DATA_DIR_LOCKED')).toBe(true);
    } finally {
      await holder.stop();
    }
    const writer = startWriter(dataDir, 5);
    children.push(writer.child);
    await writer.committed;
    const error = await startEmbeddedPostgres({ dataDir }).catch((e: unknown) => e);
    expect(isTaskgateError(error, 'TG_EMBEDDED_DATA_DIR_LOCKED')).toBe(true);
    expect((error as Error).message).toContain(`in use by process ${writer.child.pid}`);
  });

  it('recovers committed rows, and only those, after the owning process is SIGKILLed', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'taskgate-embedded-'));
    const writer = startWriter(dataDir, 50);
    children.push(writer.child);
    await writer.committed;
    const exited = new Promise((resolve) => writer.child.once('exit', resolve));
    writer.child.kill('SIGKILL');
    await exited;

    const reopened = await startEmbeddedPostgres({ dataDir });
    try {
      expect(reopened.stalePid).toBe(writer.child.pid);
      const client = new pg.Client({ connectionString: reopened.connectionString });
      await client.connect();
      const rows = await client.query<{ n: number; uncommitted: number }>(
        "SELECT count(*)::int AS n, count(*) FILTER (WHERE note = 'uncommitted')::int AS uncommitted FROM crash_probe",
      );
      expect(rows.rows[0]).toEqual({ n: 50, uncommitted: 0 });
      await client.end();
    } finally {
      await reopened.stop();
    }
  });
});

function startWriter(dataDir: string, rows: number): { child: ChildProcess; committed: Promise<void> } {
  const script = path.resolve(import.meta.dirname, '../../../../test/fixtures/embedded-writer.ts');
  const child = spawn(process.execPath, [script, dataDir, String(rows)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const committed = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes(`committed ${rows}`)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`writer exited with ${code}: ${stderr}`)));
  });
  return { child, committed };
}

/** A bare wire-protocol connection, for sending messages node-postgres would never send alone. */
async function rawConnection(connectionString: string) {
  const url = new URL(connectionString);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = Buffer.alloc(0);
  const listeners = new Set<() => void>();
  socket.on('data', (chunk) => {
    received = Buffer.concat([received, chunk]);
    for (const listener of listeners) listener();
  });
  socket.on('error', () => {});
  const read = (done: (bytes: Buffer) => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (done(received)) {
          listeners.delete(check);
          received = Buffer.alloc(0);
          resolve();
        }
      };
      listeners.add(check);
      check();
    });
  const parameters = Buffer.from('user\0postgres\0database\0postgres\0\0');
  const startup = Buffer.alloc(8 + parameters.length);
  startup.writeInt32BE(startup.length, 0);
  startup.writeInt32BE(196608, 4);
  parameters.copy(startup, 8);
  socket.write(startup);
  await read((bytes) => bytes.includes(0x5a)); // ReadyForQuery
  return { socket, read };
}

function parseMessage(sql: string): Buffer {
  const body = Buffer.concat([Buffer.from('\0'), Buffer.from(`${sql}\0`), Buffer.from([0, 0])]);
  const message = Buffer.alloc(5 + body.length);
  message[0] = 0x50; // 'P'
  message.writeInt32BE(4 + body.length, 1);
  body.copy(message, 5);
  return message;
}
