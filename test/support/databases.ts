import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { testClient } from './pg-clients.ts';

export const DB_PREFIX = 'tgtest_';

/** Every database of a test run starts with this (see newRunId in test-run.ts). */
export function runPrefix(runId: string): string {
  return `${DB_PREFIX}${runId}_`;
}

export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  drop(): Promise<void>;
}

/** The same server and credentials, another database. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function dropDatabase(client: pg.ClientBase, name: string): Promise<void> {
  await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}

/**
 * A database of this run: a clone of the migrated template (the default), or an empty one for
 * tests of the migration runner itself.
 */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const { adminUrl, template, runId } = inject('postgres');
  const name = `${runPrefix(runId)}${randomBytes(4).toString('hex')}`;
  const admin = testClient({ connectionString: adminUrl });
  await admin.connect();
  try {
    // CREATE DATABASE … TEMPLATE fails while another session uses the template; test files run
    // in parallel, so clones are made one at a time.
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [`taskgate-tests:${template}`]);
    await admin.query(`CREATE DATABASE ${name}${options.empty ? '' : ` TEMPLATE ${template}`}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: databaseUrl(adminUrl, name),
    drop: async () => {
      const client = testClient({ connectionString: adminUrl });
      await client.connect();
      try {
        await dropDatabase(client, name);
      } finally {
        await client.end();
      }
    },
  };
}

/** This test file's own database, cloned from the template before its tests and dropped after. */
export function useTestDatabase(options: { empty?: boolean } = {}): { readonly url: string; readonly name: string } {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase(options);
  });
  afterAll(async () => {
    await database?.drop();
  });
  return {
    get url() {
      if (!database) throw new Error('the test database exists only inside tests and hooks');
      return database.url;
    },
    get name() {
      if (!database) throw new Error('the test database exists only inside tests and hooks');
      return database.name;
    },
  };
}
