import { isTaskgateError } from '@taskgate/errors';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/databases.ts';
import { THREE_STEPS, writeMigrations } from '../../../../test/support/fixture-migrations.ts';
import { schemaFingerprint } from '../../../../test/support/schema-fingerprint.ts';
import { loadMigrations, type Migration } from './migration-files.ts';
import { MigrationRunner, type MigrationRunnerOptions } from './migration-runner.ts';

const databases: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(databases.map((database) => database.drop()));
});

async function emptyDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase({ empty: true });
  databases.push(database);
  return database;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

async function appliedVersions(url: string): Promise<number[]> {
  const rows = await query<{ version: number }>(url, 'SELECT version FROM taskgate_migrations ORDER BY version');
  return rows.map((row) => row.version);
}

function runner(url: string, migrations: readonly Migration[], extra: Partial<MigrationRunnerOptions> = {}) {
  return new MigrationRunner({ connectionString: url, migrations, installPgBoss: false, ...extra });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

/**
 * Lets a first runner take the lock and hold it until released, so a second runner can be started
 * against a held lock: the race is forced by order, not by timing.
 */
function lockHolder() {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let signalLocked!: () => void;
  const locked = new Promise<void>((resolve) => {
    signalLocked = resolve;
  });
  const afterLock = async () => {
    signalLocked();
    await held;
  };
  return { afterLock, locked, release };
}

describe('the real migrations', () => {
  it('a fresh install equals applying them one at a time, and equals up after down', async () => {
    const migrations = await loadMigrations();
    const oneShot = await emptyDatabase();
    await new MigrationRunner({ connectionString: oneShot.url, migrations }).up();

    const stepwise = await emptyDatabase();
    for (const migration of migrations) {
      await new MigrationRunner({ connectionString: stepwise.url, migrations }).up(migration.version);
    }

    const roundTrip = await emptyDatabase();
    const roundTripRunner = new MigrationRunner({ connectionString: roundTrip.url, migrations });
    await roundTripRunner.up();
    await roundTripRunner.down(0);
    await roundTripRunner.up();

    const expected = await schemaFingerprint(oneShot.url);
    expect(expected.some((line) => line.startsWith('column public.tasks.status'))).toBe(true);
    expect(expected.some((line) => line.startsWith('column pgboss.job.'))).toBe(true);
    expect(await schemaFingerprint(stepwise.url)).toEqual(expected);
    expect(await schemaFingerprint(roundTrip.url)).toEqual(expected);
  });

  it('down to zero removes every Taskgate table and keeps pg-boss', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations();
    const migrationRunner = new MigrationRunner({ connectionString: database.url, migrations });
    await migrationRunner.up();
    const reverted = await migrationRunner.down(0);
    expect(reverted.map((step) => step.version)).toEqual(migrations.map((m) => m.version).reverse());
    const tables = await query<{ table_name: string }>(
      database.url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    expect(tables.map((row) => row.table_name)).toEqual(['taskgate_migrations']);
    const report = await migrationRunner.status();
    expect(report.status.every((row) => row.state === 'pending')).toBe(true);
    expect(report.pgBoss.installed).toBe(report.pgBoss.required);
  });

  it('two runners racing, pg-boss install included, both succeed and apply everything once', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations();
    const { afterLock, locked, release } = lockHolder();
    const first = new MigrationRunner({
      connectionString: database.url,
      migrations,
      hooks: { afterLock },
    }).up();
    await locked;
    const second = new MigrationRunner({
      connectionString: database.url,
      migrations,
      hooks: { onLockWait: () => release() },
    })
      .up()
      // Without a lock the second runner would never wait; release the first anyway so the test fails fast.
      .finally(() => release());
    const [firstApplied, secondApplied] = await Promise.all([first, second]);
    expect(firstApplied.map((step) => step.version)).toEqual(migrations.map((m) => m.version));
    expect(secondApplied).toEqual([]);
    expect(await appliedVersions(database.url)).toEqual(migrations.map((m) => m.version));
    const version = await query<{ version: string }>(database.url, 'SELECT version FROM pgboss.version');
    expect(version).toHaveLength(1);
  });
});

describe('MigrationRunner', () => {
  it('lists every migration as pending on a fresh database and as applied after up', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(await writeMigrations(THREE_STEPS));
    const migrationRunner = runner(database.url, migrations);
    const before = await migrationRunner.status();
    expect(before.status.map((row) => [row.version, row.state])).toEqual([
      [1, 'pending'],
      [2, 'pending'],
      [3, 'pending'],
    ]);
    expect(before.pgBoss.installed).toBeNull();
    await migrationRunner.up();
    const after = await migrationRunner.status();
    expect(after.status.map((row) => [row.version, row.state])).toEqual([
      [1, 'applied'],
      [2, 'applied'],
      [3, 'applied'],
    ]);
    expect(after.status.every((row) => row.appliedAt instanceof Date)).toBe(true);
  });

  it('up --to stops at that version and down reverts newest first', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(await writeMigrations(THREE_STEPS));
    const migrationRunner = runner(database.url, migrations);
    expect((await migrationRunner.up(2)).map((step) => step.version)).toEqual([1, 2]);
    expect(await appliedVersions(database.url)).toEqual([1, 2]);
    expect((await migrationRunner.up()).map((step) => step.version)).toEqual([3]);
    expect((await migrationRunner.down()).map((step) => step.version)).toEqual([3]);
    expect((await migrationRunner.down(0)).map((step) => step.version)).toEqual([2, 1]);
    expect(await appliedVersions(database.url)).toEqual([]);
    expect((await migrationRunner.up()).map((step) => step.version)).toEqual([1, 2, 3]);
  });

  it('two runners racing apply each migration once: the second waits for the lock, then finds nothing to do', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(await writeMigrations(THREE_STEPS));
    const { afterLock, locked, release } = lockHolder();
    let secondWaited = false;
    const first = runner(database.url, migrations, { hooks: { afterLock } }).up();
    await locked;
    const second = runner(database.url, migrations, {
      hooks: {
        onLockWait: () => {
          secondWaited = true;
          release();
        },
      },
    })
      .up()
      .finally(() => release());
    const [firstApplied, secondApplied] = await Promise.all([first, second]);
    expect(secondWaited).toBe(true);
    expect(firstApplied.map((step) => step.version)).toEqual([1, 2, 3]);
    expect(secondApplied).toEqual([]);
    expect(await appliedVersions(database.url)).toEqual([1, 2, 3]);
  });

  it('eight runners started together apply each migration exactly once', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(await writeMigrations(THREE_STEPS));
    const results = await Promise.all(Array.from({ length: 8 }, () => runner(database.url, migrations).up()));
    expect(results.flat().map((step) => step.version)).toEqual([1, 2, 3]);
    expect(await appliedVersions(database.url)).toEqual([1, 2, 3]);
  });

  it('gives up with TG_MIGRATION_LOCK_TIMEOUT when another runner holds the lock too long', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(await writeMigrations(THREE_STEPS));
    const { afterLock, locked, release } = lockHolder();
    const first = runner(database.url, migrations, { hooks: { afterLock } }).up();
    await locked;
    const error = await rejection(runner(database.url, migrations, { lockTimeoutMs: 100 }).up());
    expect(isTaskgateError(error, 'TG_MIGRATION_LOCK_TIMEOUT')).toBe(true);
    release();
    expect((await first).map((step) => step.version)).toEqual([1, 2, 3]);
  });

  it('refuses a database that has migrations the code does not know, and changes nothing', async () => {
    const database = await emptyDatabase();
    const all = await loadMigrations(await writeMigrations(THREE_STEPS));
    await runner(database.url, all).up();
    // The code is one release older: it knows only the first two migrations.
    const older = runner(database.url, all.slice(0, 2));
    const report = await older.status();
    expect(report.status.map((row) => [row.version, row.state])).toEqual([
      [1, 'applied'],
      [2, 'applied'],
      [3, 'unknown'],
    ]);
    for (const attempt of [() => older.up(), () => older.down(), () => older.plan()]) {
      const error = await rejection(attempt());
      expect(isTaskgateError(error, 'TG_MIGRATION_DB_AHEAD')).toBe(true);
      expect((error as Error).message).toContain('0003_gamma');
    }
    expect(await appliedVersions(database.url)).toEqual([1, 2, 3]);
  });

  it('refuses when an applied migration was edited afterwards', async () => {
    const database = await emptyDatabase();
    await runner(database.url, await loadMigrations(await writeMigrations(THREE_STEPS))).up(1);
    const edited = await loadMigrations(
      await writeMigrations({
        ...THREE_STEPS,
        '0001_alpha.up.sql': 'CREATE TABLE fixture_alpha (id bigint PRIMARY KEY);\n',
      }),
    );
    const error = await rejection(runner(database.url, edited).up());
    expect(isTaskgateError(error, 'TG_MIGRATION_CHECKSUM_MISMATCH')).toBe(true);
    expect(await appliedVersions(database.url)).toEqual([1]);
  });

  it('a failing migration leaves nothing of itself behind and names the file and line', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(
      await writeMigrations({
        ...THREE_STEPS,
        '0004_broken.up.sql': 'CREATE TABLE fixture_delta (id integer);\nSELECT * FROM no_such_table;\n',
        '0004_broken.down.sql': 'DROP TABLE fixture_delta;\n',
      }),
    );
    const error = await rejection(runner(database.url, migrations).up());
    expect(isTaskgateError(error, 'TG_MIGRATION_FAILED')).toBe(true);
    expect((error as Error).message).toMatch(
      /0004_broken \(up\) failed at line 2: relation "no_such_table" does not exist/,
    );
    expect(await appliedVersions(database.url)).toEqual([1, 2, 3]);
    const delta = await query<{ present: string | null }>(
      database.url,
      "SELECT to_regclass('fixture_delta') AS present",
    );
    expect(delta[0]?.present).toBeNull();
  });

  it('plan returns the SQL that up would run, including pg-boss, without running any of it', async () => {
    const database = await emptyDatabase();
    const migrations = await loadMigrations(await writeMigrations(THREE_STEPS));
    const steps = await new MigrationRunner({ connectionString: database.url, migrations }).plan();
    expect(steps.map((step) => step.label.split(' ')[0])).toEqual(['0001_alpha', '0002_beta', '0003_gamma', 'pg-boss']);
    expect(steps[0]?.sql).toBe(THREE_STEPS['0001_alpha.up.sql']);
    expect(steps[3]?.sql).toContain('CREATE SCHEMA IF NOT EXISTS pgboss');
    const tables = await query<{ n: number }>(
      database.url,
      "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema IN ('public', 'pgboss')",
    );
    expect(tables[0]?.n).toBe(0);
  });

  it('reports an unreachable database as TG_DB_UNREACHABLE without the password', async () => {
    const error = await rejection(runner('postgres://someone:hunter2@127.0.0.1:1/nowhere', []).status());
    expect(isTaskgateError(error, 'TG_DB_UNREACHABLE')).toBe(true);
    expect((error as Error).message).toContain('127.0.0.1:1/nowhere');
    expect((error as Error).message).not.toContain('hunter2');
  });
});
