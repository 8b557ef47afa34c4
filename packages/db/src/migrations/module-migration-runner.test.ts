import { isTaskgateError } from '@taskgate/errors';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/databases.ts';
import { THREE_STEPS, writeMigrations } from '../../../../test/support/fixture-migrations.ts';
import { loadMigrations, type Migration } from './migration-files.ts';
import { MigrationRunner, type MigrationRunnerOptions } from './migration-runner.ts';
import type { ModuleMigrations } from './module-migrations.ts';

const databases: TestDatabase[] = [];
afterAll(async () => {
  await Promise.all(databases.map((database) => database.drop()));
});

async function emptyDatabase(): Promise<TestDatabase> {
  const database = await createTestDatabase({ empty: true });
  databases.push(database);
  return database;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** "module:version" of every row of taskgate_module_migrations, or null while the table does not exist. */
async function moduleRows(url: string): Promise<string[] | null> {
  const [exists] = await query<{ present: string | null }>(
    url,
    "SELECT to_regclass('taskgate_module_migrations') AS present",
  );
  if (!exists?.present) return null;
  const rows = await query<{ module: string; version: number }>(
    url,
    'SELECT module, version FROM taskgate_module_migrations ORDER BY module, version',
  );
  return rows.map((row) => `${row.module}:${row.version}`);
}

async function tableExists(url: string, table: string): Promise<boolean> {
  const [row] = await query<{ present: string | null }>(url, `SELECT to_regclass('${table}') AS present`);
  return row?.present != null;
}

/** A module whose two migrations build on Taskgate's fixture table (its tables may refer to Taskgate's). */
const NOTES = {
  '0001_notes.up.sql':
    'CREATE TABLE acme_notes (id integer PRIMARY KEY, alpha_id integer REFERENCES fixture_alpha (id));\n',
  '0001_notes.down.sql': 'DROP TABLE acme_notes;\n',
  '0002_note_body.up.sql': 'ALTER TABLE acme_notes ADD COLUMN body text;\n',
  '0002_note_body.down.sql': 'ALTER TABLE acme_notes DROP COLUMN body;\n',
} as const;
const TAGS = {
  '0001_tags.up.sql': 'CREATE TABLE beta_tags (tag text PRIMARY KEY);\n',
  '0001_tags.down.sql': 'DROP TABLE beta_tags;\n',
} as const;

async function moduleOf(module: string, files: Readonly<Record<string, string>>): Promise<ModuleMigrations> {
  const dir = await writeMigrations(files);
  return { module, migrations: await loadMigrations(dir), dir };
}

let platform: Migration[] | undefined;
async function runner(url: string, modules: readonly ModuleMigrations[], extra: Partial<MigrationRunnerOptions> = {}) {
  platform ??= await loadMigrations(await writeMigrations(THREE_STEPS));
  return new MigrationRunner({ connectionString: url, migrations: platform, installPgBoss: false, modules, ...extra });
}

const steps = (applied: readonly { module?: string; version: number }[]) =>
  applied.map((step) => `${step.module ?? 'taskgate'}:${step.version}`);

async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: Error) => error,
  );
}

describe('tool module migrations', () => {
  it('up applies Taskgate first, then each module in the order given, tracked apart from Taskgate', async () => {
    const database = await emptyDatabase();
    const modules = [await moduleOf('acme-notes', NOTES), await moduleOf('@beta/tags', TAGS)];
    const migrationRunner = await runner(database.url, modules);
    const before = await migrationRunner.status();
    expect(before.modules.map((entry) => [entry.module, entry.loaded, entry.status.map((row) => row.state)])).toEqual([
      ['acme-notes', true, ['pending', 'pending']],
      ['@beta/tags', true, ['pending']],
    ]);
    // status is read-only: it does not create the bookkeeping table.
    expect(await moduleRows(database.url)).toBeNull();

    expect(steps(await migrationRunner.up())).toEqual([
      'taskgate:1',
      'taskgate:2',
      'taskgate:3',
      'acme-notes:1',
      'acme-notes:2',
      '@beta/tags:1',
    ]);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1', 'acme-notes:1', 'acme-notes:2']);
    const platformRows = await query<{ version: number }>(database.url, 'SELECT version FROM taskgate_migrations');
    expect(platformRows.map((row) => row.version)).toEqual([1, 2, 3]);
    const after = await migrationRunner.status();
    expect(after.modules.flatMap((entry) => entry.status.map((row) => row.state))).toEqual([
      'applied',
      'applied',
      'applied',
    ]);
    expect(await migrationRunner.up()).toEqual([]);
  });

  it("applies a module's migrations to a database whose Taskgate migrations are already current", async () => {
    const database = await emptyDatabase();
    await (await runner(database.url, [])).up();
    expect(await moduleRows(database.url)).toBeNull();
    const modules = [await moduleOf('acme-notes', NOTES)];
    expect(steps(await (await runner(database.url, modules)).up())).toEqual(['acme-notes:1', 'acme-notes:2']);
  });

  it("holds a module's migrations back while up --to leaves Taskgate's own pending", async () => {
    const database = await emptyDatabase();
    const warnings: string[] = [];
    const migrationRunner = await runner(database.url, [await moduleOf('acme-notes', NOTES)], {
      logger: { info: () => {}, warn: (_fields, message) => warnings.push(message) },
    });
    expect((await migrationRunner.plan(2)).map((step) => step.label.split(' ')[0])).toEqual([
      '0001_alpha',
      '0002_beta',
    ]);
    expect(steps(await migrationRunner.up(2))).toEqual(['taskgate:1', 'taskgate:2']);
    expect(warnings).toEqual(["tool modules' migrations were not applied: Taskgate's own are not all applied yet"]);
    expect(steps(await migrationRunner.up(3))).toEqual(['taskgate:3', 'acme-notes:1', 'acme-notes:2']);
  });

  it("plan prints each module's SQL after Taskgate's and runs none of it", async () => {
    const database = await emptyDatabase();
    const modules = [await moduleOf('acme-notes', NOTES), await moduleOf('@beta/tags', TAGS)];
    const planned = await (await runner(database.url, modules, { installPgBoss: true })).plan();
    expect(planned.map((step) => step.label.split(' (')[0])).toEqual([
      '0001_alpha',
      '0002_beta',
      '0003_gamma',
      'pg-boss schema',
      'acme-notes: 0001_notes',
      'acme-notes: 0002_note_body',
      '@beta/tags: 0001_tags',
    ]);
    expect(planned[4]?.module).toBe('acme-notes');
    expect(planned[4]?.sql).toBe(NOTES['0001_notes.up.sql']);
    expect(planned[6]?.label).toContain(modules[1]?.dir);
    expect(await tableExists(database.url, 'fixture_alpha')).toBe(false);
    expect(await moduleRows(database.url)).toBeNull();
  });

  it("down with a module reverts that module's newest migration, or all of them above a version, and nothing of Taskgate's", async () => {
    const database = await emptyDatabase();
    const modules = [await moduleOf('acme-notes', NOTES), await moduleOf('@beta/tags', TAGS)];
    const migrationRunner = await runner(database.url, modules);
    await migrationRunner.up();
    expect(steps(await migrationRunner.down(undefined, { module: 'acme-notes' }))).toEqual(['acme-notes:2']);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1', 'acme-notes:1']);
    expect(steps(await migrationRunner.down(0, { module: 'acme-notes' }))).toEqual(['acme-notes:1']);
    expect(await tableExists(database.url, 'acme_notes')).toBe(false);
    expect(await migrationRunner.down(0, { module: 'acme-notes' })).toEqual([]);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1']);
    // Without a module, down is Taskgate's own, as before modules existed.
    expect(steps(await migrationRunner.down())).toEqual(['taskgate:3']);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1']);
    expect(steps(await migrationRunner.up())).toEqual(['taskgate:3', 'acme-notes:1', 'acme-notes:2']);

    const error = await rejection(migrationRunner.down(undefined, { module: 'gamma' }));
    expect(isTaskgateError(error, 'TG_USAGE')).toBe(true);
    expect(error.message).toContain('tool module "gamma" is not loaded');
  });

  it('refuses a module migration whose file changed after it ran, naming the module, and applies nothing', async () => {
    const database = await emptyDatabase();
    await (await runner(database.url, [await moduleOf('acme-notes', NOTES)])).up();
    const edited = await moduleOf('acme-notes', {
      ...NOTES,
      '0002_note_body.up.sql': 'ALTER TABLE acme_notes ADD COLUMN body text NOT NULL;\n',
      '0003_note_title.up.sql': 'ALTER TABLE acme_notes ADD COLUMN title text;\n',
      '0003_note_title.down.sql': 'ALTER TABLE acme_notes DROP COLUMN title;\n',
    });
    const migrationRunner = await runner(database.url, [edited]);
    for (const attempt of [() => migrationRunner.up(), () => migrationRunner.plan()]) {
      const error = await rejection(attempt());
      expect(isTaskgateError(error, 'TG_MIGRATION_CHECKSUM_MISMATCH')).toBe(true);
      expect(error.message).toBe(
        "applied migrations of tool module acme-notes were edited after they ran (0002_note_body); restore the module's original files and add a new migration instead",
      );
    }
    expect(await moduleRows(database.url)).toEqual(['acme-notes:1', 'acme-notes:2']);
  });

  it('refuses a database with migrations of a module its code does not know, before applying anything', async () => {
    const database = await emptyDatabase();
    const full = await moduleOf('acme-notes', NOTES);
    await (await runner(database.url, [full])).up();
    // A new Taskgate release (0004 pending) with an older version of the module, which knows only its 0001.
    const newerPlatform = await loadMigrations(
      await writeMigrations({
        ...THREE_STEPS,
        '0004_delta.up.sql': 'CREATE TABLE fixture_delta (id integer);\n',
        '0004_delta.down.sql': 'DROP TABLE fixture_delta;\n',
      }),
    );
    const olderModule = { ...full, migrations: full.migrations.slice(0, 1) };
    const older = await runner(database.url, [olderModule], { migrations: newerPlatform });
    const report = await older.status();
    expect(report.modules[0]?.status.map((row) => [row.version, row.state])).toEqual([
      [1, 'applied'],
      [2, 'unknown'],
    ]);
    for (const attempt of [
      () => older.up(),
      () => older.plan(),
      () => older.down(undefined, { module: 'acme-notes' }),
    ]) {
      const error = await rejection(attempt());
      expect(isTaskgateError(error, 'TG_MIGRATION_DB_AHEAD')).toBe(true);
      expect(error.message).toContain('tool module acme-notes');
      expect(error.message).toContain('(0002_note_body)');
    }
    expect(await tableExists(database.url, 'fixture_delta')).toBe(false);
    expect(await moduleRows(database.url)).toEqual(['acme-notes:1', 'acme-notes:2']);
  });

  it('a failing module migration leaves nothing of itself behind and names the module, the file and the line', async () => {
    const database = await emptyDatabase();
    const broken = await moduleOf('acme-notes', {
      ...NOTES,
      '0003_broken.up.sql': 'CREATE TABLE acme_broken (id integer);\nSELECT * FROM no_such_table;\n',
      '0003_broken.down.sql': 'DROP TABLE acme_broken;\n',
    });
    const error = await rejection((await runner(database.url, [broken, await moduleOf('@beta/tags', TAGS)])).up());
    expect(isTaskgateError(error, 'TG_MIGRATION_FAILED')).toBe(true);
    expect(error.message).toBe(
      `migration 0003_broken (up) of tool module acme-notes failed at line 2 of ${broken.dir}/0003_broken.up.sql: relation "no_such_table" does not exist — nothing from it was applied`,
    );
    expect(await moduleRows(database.url)).toEqual(['acme-notes:1', 'acme-notes:2']);
    expect(await tableExists(database.url, 'acme_broken')).toBe(false);
    // The module after the failing one was not started.
    expect(await tableExists(database.url, 'beta_tags')).toBe(false);
  });

  it('leaves the rows of a module that is not loaded alone, and reports them as unloaded', async () => {
    const database = await emptyDatabase();
    const notes = await moduleOf('acme-notes', NOTES);
    await (await runner(database.url, [notes, await moduleOf('@beta/tags', TAGS)])).up();
    const withoutTags = await runner(database.url, [notes]);
    const report = await withoutTags.status();
    expect(report.modules.map((entry) => [entry.module, entry.loaded, entry.status.map((row) => row.state)])).toEqual([
      ['acme-notes', true, ['applied', 'applied']],
      ['@beta/tags', false, ['unloaded']],
    ]);
    expect(await withoutTags.up()).toEqual([]);
    expect(await withoutTags.plan()).toEqual([]);
    expect(steps(await withoutTags.down(0, { module: 'acme-notes' }))).toEqual(['acme-notes:2', 'acme-notes:1']);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1']);
    expect(await tableExists(database.url, 'beta_tags')).toBe(true);
    // Nor does a runner without any module touch them.
    expect((await (await runner(database.url, [])).status()).modules[0]?.module).toBe('@beta/tags');
    expect(await (await runner(database.url, [])).up()).toEqual([]);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1']);
  });

  it('two runners racing apply each module migration once: the second waits for the lock, then finds nothing to do', async () => {
    const database = await emptyDatabase();
    const modules = [await moduleOf('acme-notes', NOTES), await moduleOf('@beta/tags', TAGS)];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let signalLocked!: () => void;
    const locked = new Promise<void>((resolve) => {
      signalLocked = resolve;
    });
    let secondWaited = false;
    const first = (
      await runner(database.url, modules, {
        hooks: {
          afterLock: async () => {
            signalLocked();
            await held;
          },
        },
      })
    ).up();
    await locked;
    const second = (
      await runner(database.url, modules, {
        hooks: {
          onLockWait: () => {
            secondWaited = true;
            release();
          },
        },
      })
    )
      .up()
      // Without a lock the second runner would never wait; release the first anyway so the test fails fast.
      .finally(() => release());
    const [firstApplied, secondApplied] = await Promise.all([first, second]);
    expect(secondWaited).toBe(true);
    expect(steps(firstApplied)).toEqual([
      'taskgate:1',
      'taskgate:2',
      'taskgate:3',
      'acme-notes:1',
      'acme-notes:2',
      '@beta/tags:1',
    ]);
    expect(secondApplied).toEqual([]);
    expect(await moduleRows(database.url)).toEqual(['@beta/tags:1', 'acme-notes:1', 'acme-notes:2']);
  });

  it('refuses a module name it cannot key rows by, and two modules of one name', async () => {
    const tags = await moduleOf('@beta/tags', TAGS);
    for (const name of ['', 'Acme', '-acme', 'acme notes', '@beta', '@beta/', 'a/b', 'x'.repeat(65), 'taskgate']) {
      const error = await rejection(runner('postgres://unused', [{ ...tags, module: name }]));
      expect(isTaskgateError(error, 'TG_TOOL_MODULE_INVALID'), name).toBe(true);
    }
    const error = await rejection(runner('postgres://unused', [tags, tags]));
    expect(error.message).toBe('two tool modules are named "@beta/tags"');
    await expect(runner('postgres://unused', [{ ...tags, module: 'a.b_c-1' }])).resolves.toBeInstanceOf(
      MigrationRunner,
    );
  });
});
