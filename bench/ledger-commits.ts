// The idempotency ledger: distinct-key charge_account commits per second (key claim + charge row +
// outbox row + stored result, one transaction each) next to pgbench's single-row INSERT rate on the
// same database in the same run; then a 64-way same-key storm: executions (must be 1) and replay latency.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- ledger-commits
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IdempotentMutation } from '@taskgate/api';
import { createKysely, createPool, executeOnce, keyFingerprint } from '@taskgate/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { chargeMutation } from '../examples/ledger/ledger-routes.ts';
import type { LedgerDatabase } from '../examples/ledger/ledger-schema.ts';
import { chargeToolResult, insertCharges } from '../examples/ledger/ledger-store.ts';
import { benchDatabase } from './support/bench-database.ts';
import { atLeastShareOfAnchor, printTable, reportGoals, summary } from './support/report.ts';

const SECONDS = Number(process.env.SECONDS ?? 5);
// One caller measures latency (nothing to batch with); 8 and 32 measure throughput.
const CLIENTS = (process.env.CLIENTS ?? '1,8,32').split(',').map(Number);
const STORM = 64;

const database = await benchDatabase();
const rows: Record<string, string | number>[] = [];
const stormRows: Record<string, string | number>[] = [];
try {
  const pgbench = findPgbench();
  const admin = createKysely(createPool(database.url, { applicationName: 'bench-admin', max: 1 }));
  await sql`CREATE TABLE pgbench_single (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int NOT NULL)`.execute(
    admin,
  );
  const script = path.join(mkdtempSync(path.join(tmpdir(), 'tg-pgbench-')), 'insert.sql');
  writeFileSync(script, 'INSERT INTO pgbench_single (v) VALUES (1);\n');

  for (const clients of CLIENTS) {
    const anchor = runPgbench(pgbench, database.url, script, clients);
    const nodeAnchor = await nodeInsertRate(database.url, clients);
    const ours = await chargeRate(database.url, clients, 'one-statement');
    const general = await chargeRate(database.url, clients, 'general');
    rows.push({
      clients,
      'pgbench 1-row INSERT tps': anchor,
      'node-pg 1-row INSERT/s': nodeAnchor,
      'charge_account commits/s': ours,
      ratio: ours / anchor,
      'general ledger path commits/s': general,
    });
  }

  // The storm: 64 connections, one key, released together.
  const pools = Array.from({ length: STORM }, () =>
    createKysely(createPool(database.url, { applicationName: 'bench-storm', max: 1 })),
  );
  await Promise.all(pools.map((db) => sql`SELECT 1`.execute(db)));
  for (const phase of ['first call (one executes, 63 wait and replay)', 'after commit (64 replays)']) {
    const key = 'storm-key';
    const claim = {
      tenantId: 'bench',
      key,
      fingerprint: keyFingerprint('charge_account', { account: 'acct-storm', cents: 500 }),
      retentionMs: 86_400_000,
    };
    let release!: () => void;
    const start = new Promise<void>((resolve) => {
      release = resolve;
    });
    const latencies: number[] = [];
    const kinds: string[] = [];
    const mutations = pools.map((db) => new IdempotentMutation(db, chargeMutation, { retentionMs: claim.retentionMs }));
    const runs = mutations.map(async (mutation) => {
      await start;
      const began = performance.now();
      const outcome = await mutation.run({
        tenantId: claim.tenantId,
        key,
        input: { account: 'acct-storm', cents: 500 },
      });
      kinds.push(outcome.replayed ? 'replayed' : 'executed');
      if (outcome.replayed) latencies.push(performance.now() - began);
    });
    release();
    await Promise.all(runs);
    const { rows: executed } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM account_charges WHERE idempotency_key = ${key}`.execute(admin);
    const s = summary(latencies);
    stormRows.push({
      phase,
      executed: kinds.filter((kind) => kind === 'executed').length,
      replayed: kinds.filter((kind) => kind === 'replayed').length,
      'charge rows': Number(executed[0]?.n),
      'replay p50 ms': s.p50,
      'replay p99 ms': s.p99,
    });
  }
  await Promise.all(pools.map((db) => db.destroy()));
  await admin.destroy();
} finally {
  await database.drop();
}
printTable(
  `Ledger commits, distinct keys, ${SECONDS} s per row (anchor: pgbench on the same database, same run)`,
  rows,
);
{
  // Rates: each side's best over the client counts run.
  const peak = (column: string) => Math.max(...rows.map((row) => Number(row[column])));
  printTable(`Same-key storm: ${STORM} connections, one key (executions must be 1)`, stormRows);
  reportGoals({ SECONDS, CLIENTS: CLIENTS.join(',') }, [
    {
      metric: 'charge_account commits/s, peak over client counts',
      unit: 'commits/s',
      rule: atLeastShareOfAnchor(0.5),
      ours: peak('charge_account commits/s'),
      anchor: { label: "pgbench's 1-row INSERT, peak", value: peak('pgbench 1-row INSERT tps') },
    },
  ]);
}
process.exit(0);

/**
 * Charges with distinct keys, `clients` callers back to back. 'one-statement' is what the REST
 * operation runs (the ledger module's charge mutation on IdempotentMutation: one transaction per
 * batch of concurrent charges, four statements however many it carries); 'general'
 * is the ledger's multi-statement transaction that any effect can use (claim, effect, store result:
 * five round trips per charge, one connection per caller).
 */
async function chargeRate(url: string, clients: number, path: 'one-statement' | 'general'): Promise<number> {
  const db = createKysely(createPool(url, { applicationName: 'bench-ledger', max: clients }));
  // What POST /v1/accounts/{account}/charges runs: concurrent charges group-commit in one transaction.
  const charges = new IdempotentMutation(db, chargeMutation, { retentionMs: 86_400_000 });
  let committed = 0;
  let stop = false;
  const loop = async (client: number) => {
    for (let n = 0; !stop; n++) {
      const key = `${path}-c${clients}-${client}-${n}`;
      const args = { account: `acct-${client}`, cents: 100 + (n % 1000) };
      const claim = {
        tenantId: 'bench',
        key,
        fingerprint: keyFingerprint('charge_account', args),
        retentionMs: 86_400_000,
      };
      const outcome =
        path === 'one-statement'
          ? await charges
              .run({ tenantId: 'bench', key, input: args })
              .then((charged) => ({ kind: charged.replayed ? 'replayed' : 'executed' }))
          : await executeOnce(db, { ...claim, operation: 'charge_account' }, async (trx) => {
              const [charge] = await insertCharges(trx as unknown as Kysely<LedgerDatabase>, [
                { tenantId: 'bench', ...args, idempotencyKey: key, taskId: null },
              ]);
              return chargeToolResult(charge as NonNullable<typeof charge>);
            });
      if (outcome.kind !== 'executed') throw new Error(`distinct key ${key} was not executed: ${outcome.kind}`);
      if (!stop) committed += 1;
    }
  };
  await Promise.all(
    Array.from({ length: clients }, (_, client) => loop(client)).concat(
      new Promise<void>((resolve) =>
        setTimeout(() => {
          stop = true;
          resolve();
        }, SECONDS * 1000),
      ),
    ),
  );
  await db.destroy();
  return committed / SECONDS;
}

/**
 * The second anchor: the same single-row INSERT from this Node process through node-pg, one
 * connection per caller — what any Node client pays per round trip before doing anything useful.
 */
async function nodeInsertRate(url: string, clients: number): Promise<number> {
  const db = createKysely(createPool(url, { applicationName: 'bench-node-insert', max: clients }));
  let inserted = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        await sql`INSERT INTO pgbench_single (v) VALUES (1)`.execute(db);
        inserted += 1;
      }
    }),
  );
  await db.destroy();
  return inserted / SECONDS;
}

function runPgbench(binary: string, url: string, script: string, clients: number): number {
  const u = new URL(url);
  const result = spawnSync(
    binary,
    [
      '-n',
      '-c',
      String(clients),
      '-j',
      String(Math.min(clients, 2)),
      '-T',
      String(SECONDS),
      '-f',
      script,
      '-h',
      u.hostname,
      '-p',
      u.port || '5432',
      '-U',
      decodeURIComponent(u.username) || 'postgres',
      u.pathname.slice(1),
    ],
    { encoding: 'utf8', env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password) } },
  );
  const match = /tps = ([\d.]+)/.exec(result.stdout);
  if (!match) throw new Error(`pgbench failed: ${result.stderr || result.stdout}`);
  return Number(match[1]);
}

function findPgbench(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (existsSync(path.join(dir, 'pgbench'))) return path.join(dir, 'pgbench');
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort().reverse() : [];
  for (const version of versions) {
    const candidate = path.join(root, version, 'bin', 'pgbench');
    if (existsSync(candidate)) return candidate;
  }
  throw new Error('pgbench not found (install postgresql-client or put pgbench on PATH)');
}
