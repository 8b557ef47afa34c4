import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import pg from 'pg';

export interface BenchDatabase {
  readonly url: string;
  /**
   * ANALYZE every table, as autovacuum does within its first minute on a running system. Call it
   * after a warm-up, before measuring: a brand-new database has no statistics, and a 10 s run never
   * sees autovacuum (it wakes once a minute). Plans made from a few rows' statistics scan whole
   * indexes as the tables grow; connections re-plan early (REPLAN_AFTER_EXECUTIONS), which recovers
   * most of it, but the figure that matters is the running system's.
   */
  analyze(): Promise<void>;
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database on the server named by BENCH_DATABASE_URL, TEST_DATABASE_URL or
 * DATABASE_URL (a user that may CREATE DATABASE), dropped afterwards.
 */
export async function benchDatabase(options: { migrate?: boolean } = {}): Promise<BenchDatabase> {
  const admin = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!admin) {
    throw new Error('set BENCH_DATABASE_URL (or TEST_DATABASE_URL), e.g. postgres://postgres@127.0.0.1:5432/postgres');
  }
  const name = `tgbench_${Date.now()}_${randomBytes(3).toString('hex')}`;
  await runOn(admin, `CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  // Taskgate's own and the example ledger's, as `taskgate migrate up` with the default modules
  // (unless the caller's server migrates it itself).
  const ledger = fileURLToPath(new URL('../../examples/ledger/migrations/', import.meta.url));
  if (options.migrate !== false) {
    await new MigrationRunner({
      connectionString: url.toString(),
      migrations: await loadMigrations(),
      modules: [{ module: 'ledger', migrations: await loadMigrations(ledger), dir: ledger }],
    }).up();
  }
  return {
    url: url.toString(),
    analyze: () => runOn(url.toString(), 'ANALYZE'),
    drop: () => runOn(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** One statement on a connection of its own. */
async function runOn(connectionString: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
