import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import pg from 'pg';
import { databaseUrl, dropDatabase, runPrefix } from './databases.ts';
import { testClient } from './pg-clients.ts';

const LEDGER_MIGRATIONS = fileURLToPath(new URL('../../examples/ledger/migrations/', import.meta.url));

/**
 * Migrates a database as `taskgate migrate up` with no module given does: Taskgate's own, then the
 * example ledger's tables (the example modules are what tests serve unless they bring their own).
 */
export async function migrateAsDefault(url: string): Promise<void> {
  await new MigrationRunner({
    connectionString: url,
    migrations: await loadMigrations(),
    modules: [{ module: 'ledger', migrations: await loadMigrations(LEDGER_MIGRATIONS), dir: LEDGER_MIGRATIONS }],
  }).up();
}

export interface TestRun {
  readonly runId: string;
  /** The migrated database every test file of this run clones. */
  readonly template: string;
  /** Drops every database of this run, and no other. */
  dropDatabases(): Promise<string[]>;
}

/**
 * A test run's identity on a shared server: its unix second and 48 random bits, in the name of
 * every database it creates. Two checkouts (or two runs of one) can share a Postgres, so nothing
 * is ever dropped by age or by the bare tgtest_ prefix: a run drops what carries its own id, and
 * the databases of a run that was killed stay until someone who knows they are theirs drops them.
 */
export function newRunId(): string {
  return `${Math.floor(Date.now() / 1000)}_${randomBytes(6).toString('hex')}`;
}

/** Creates this run's template database and migrates it once, through the runner the CLI uses. */
export async function openTestRun(adminUrl: string): Promise<TestRun> {
  const runId = newRunId();
  const template = `${runPrefix(runId)}template`;
  await onServer(adminUrl, (client) => client.query(`CREATE DATABASE ${pg.escapeIdentifier(template)}`));
  await migrateAsDefault(databaseUrl(adminUrl, template));
  return {
    runId,
    template,
    dropDatabases: () =>
      onServer(adminUrl, async (client) => {
        // starts_with, not LIKE: '_' in a LIKE pattern matches any character.
        const { rows } = await client.query<{ datname: string }>(
          'SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname',
          [runPrefix(runId)],
        );
        for (const { datname } of rows) await dropDatabase(client, datname);
        return rows.map((row) => row.datname);
      }),
  };
}

async function onServer<T>(adminUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = testClient({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
