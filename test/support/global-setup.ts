import { randomBytes } from 'node:crypto';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { DB_PREFIX, databaseUrl, dropDatabase } from './databases.ts';
import { findPostgres } from './postgres-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: { adminUrl: string; template: string; runId: string; source: string };
  }
}

/** Databases of runs older than this are leftovers of a killed run and are dropped. */
const STALE_AFTER_SECONDS = 6 * 3600;

export default async function setup(project: TestProject) {
  const server = await findPostgres(process.env);
  const runId = `${Math.floor(Date.now() / 1000)}_${randomBytes(3).toString('hex')}`;
  const template = `${DB_PREFIX}${runId}_template`;

  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  try {
    await dropStaleDatabases(admin);
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  // Migrated once per run, through the same runner the CLI uses; every test file clones it.
  await new MigrationRunner({
    connectionString: databaseUrl(server.adminUrl, template),
    migrations: await loadMigrations(),
  }).up();

  project.provide('postgres', { adminUrl: server.adminUrl, template, runId, source: server.source });

  return async () => {
    const client = new pg.Client({ connectionString: server.adminUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ datname: string }>(
        'SELECT datname FROM pg_database WHERE datname LIKE $1',
        [`${DB_PREFIX}${runId}%`],
      );
      for (const row of rows) await dropDatabase(client, row.datname);
    } finally {
      await client.end();
    }
    await server.stop();
  };
}

async function dropStaleDatabases(client: pg.Client): Promise<void> {
  const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
    `${DB_PREFIX}%`,
  ]);
  const now = Math.floor(Date.now() / 1000);
  for (const { datname } of rows) {
    const started = Number(datname.slice(DB_PREFIX.length).split('_')[0]);
    if (Number.isFinite(started) && now - started > STALE_AFTER_SECONDS) await dropDatabase(client, datname);
  }
}
