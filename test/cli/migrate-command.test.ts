import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadMigrations, type Migration } from '@taskgate/db';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

let migrations: Migration[];
beforeAll(async () => {
  migrations = await loadMigrations();
});

const label = (migration: Migration) => `${String(migration.version).padStart(4, '0')}`;

/** The STATE column of `migrate status` for every known migration of Taskgate's own. */
function states(stdout: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const match = /^taskgate\s+(\d{4})\s+(\S+)\s+(applied|pending|edited|unknown)\b/.exec(line);
    if (match) result[match[1] as string] = match[3] as string;
  }
  return result;
}

function expectAll(stdout: string, state: string): void {
  expect(states(stdout)).toEqual(Object.fromEntries(migrations.map((m) => [label(m), state])));
}

describe('taskgate migrate against DATABASE_URL', () => {
  const database = useTestDatabase({ empty: true });

  it('status lists every migration as pending on a fresh database, and as applied after up', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    const before = await runCli(['migrate', 'status'], env);
    expect(before.code).toBe(0);
    expectAll(before.stdout, 'pending');
    expect(before.stdout).toContain('pg-boss schema: not installed');

    const up = await runCli(['migrate', 'up'], env);
    expect(up.code).toBe(0);
    for (const migration of migrations) expect(up.stdout).toContain(`applied ${label(migration)}_${migration.name}`);

    const after = await runCli(['migrate', 'status'], env);
    expectAll(after.stdout, 'applied');
    expect(after.stdout).toContain('pg-boss schema: version');
    expect(after.stdout).toContain('all migrations applied');

    const json = JSON.parse((await runCli(['migrate', 'status', '--json'], env)).stdout);
    expect(json.status.map((row: { state: string }) => row.state)).toEqual(migrations.map(() => 'applied'));
    expect(json.pgBoss.installed).toBe(json.pgBoss.required);

    const again = await runCli(['migrate', 'up'], env);
    expect(again.stdout).toContain('up to date: nothing to apply');
  });

  it('down reverts the newest migration and --all reverts every one', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    const down = await runCli(['migrate', 'down'], env);
    expect(down.code).toBe(0);
    const newest = migrations.at(-1) as Migration;
    expect(down.stdout).toContain(`reverted ${label(newest)}_${newest.name}`);
    const all = await runCli(['migrate', 'down', '--all'], env);
    expect(all.code).toBe(0);
    expectAll((await runCli(['migrate', 'status'], env)).stdout, 'pending');
    // pg-boss's schema is not Taskgate's to drop: said, and left as it was.
    expect(all.stdout.trimEnd().split('\n').at(-1)).toBe(
      `pg-boss's schema "pgboss" is left in place with its jobs (up reuses it); to remove it too: DROP SCHEMA pgboss CASCADE`,
    );
    expect((await runCli(['migrate', 'status'], env)).stdout).toContain('pg-boss schema: version');
  });

  it('plan prints the pending SQL and runs none of it', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    const plan = await runCli(['migrate', 'plan'], env);
    expect(plan.code).toBe(0);
    for (const migration of migrations) {
      expect(plan.stdout).toContain(`-- ${label(migration)}_${migration.name}`);
      expect(plan.stdout).toContain(migration.upSql.trim().split('\n')[0]);
    }
    expectAll((await runCli(['migrate', 'status'], env)).stdout, 'pending');
  });

  it('refuses a database ahead of the code: up exits 65 with one line, status shows the unknown row', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    await runCli(['migrate', 'up'], env);
    const client = testClient({ connectionString: database.url });
    await client.connect();
    await client.query(
      "INSERT INTO taskgate_migrations (version, name, checksum) VALUES (9999, 'from_the_future', 'x')",
    );
    await client.end();

    const up = await runCli(['migrate', 'up'], env);
    expect(up.code).toBe(65);
    expect(up.stderr.trimEnd().split('\n')).toEqual([
      'taskgate: the database has migrations this code does not know (9999_from_the_future); it was migrated by a newer Taskgate — run that version, or restore a matching backup [TG_MIGRATION_DB_AHEAD]',
    ]);

    const status = await runCli(['migrate', 'status'], env);
    expect(status.code).toBe(65);
    expect(states(status.stdout)['9999']).toBe('unknown');

    const start = await runCli(['start'], cleanEnv({ DATABASE_URL: database.url, PORT: '0' }));
    expect(start.code).toBe(65);
    expect(start.stderr).toContain('[TG_MIGRATION_DB_AHEAD]');
  });
});

describe('taskgate migrate plan and --to on a fresh database', () => {
  const database = useTestDatabase({ empty: true });
  const target = useTestDatabase({ empty: true });

  it('plan writes only SQL on stdout: it runs as it is on another empty database', async () => {
    const plan = await runCli(['migrate', 'plan'], cleanEnv({ DATABASE_URL: database.url }));
    expect(plan.code).toBe(0);
    expect(plan.stdout).not.toContain('database:');
    expect(plan.stderr).toMatch(/^database: /m);
    const client = testClient({ connectionString: target.url });
    await client.connect();
    try {
      await client.query(plan.stdout);
      const tables = await client.query<{ name: string }>(
        "SELECT to_regclass('public.tasks')::text AS name UNION ALL SELECT to_regclass('pgboss.job')::text",
      );
      expect(tables.rows.map((row) => row.name)).toEqual(['tasks', 'pgboss.job']);
    } finally {
      await client.end();
    }
  });

  it('up, plan and down refuse a --to that names no migration, and change nothing', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    const newest = (migrations.at(-1) as Migration).version;
    const range = `they are ${(migrations[0] as Migration).version} to ${newest}`;
    for (const [args, zero] of [
      [['migrate', 'up', '--to', String(newest + 1)], ''],
      [['migrate', 'plan', '--to', '0'], ''],
      [['migrate', 'down', '--to', String(newest + 7)], ', or 0 to revert them all'],
    ] as const) {
      const run = await runCli([...args], env);
      expect(run.code, run.stderr).toBe(64);
      expect(run.stderr.trimEnd().split('\n')).toEqual([
        `taskgate: --to ${args[3]} names none of Taskgate's migrations (${range}${zero}) [TG_USAGE]`,
      ]);
    }
    expectAll((await runCli(['migrate', 'status'], env)).stdout, 'pending');
    expect((await runCli(['migrate', 'up', '--to', String(newest)], env)).code).toBe(0);
  });
});

describe('taskgate migrate on the embedded database', () => {
  it('uses TASKGATE_DATA_DIR when DATABASE_URL is unset', async () => {
    const env = cleanEnv({ TASKGATE_DATA_DIR: await mkdtemp(path.join(tmpdir(), 'taskgate-migrate-')) });
    const before = await runCli(['migrate', 'status'], env);
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(/^database: embedded /);
    expectAll(before.stdout, 'pending');
    expect((await runCli(['migrate', 'up'], env)).code).toBe(0);
    expectAll((await runCli(['migrate', 'status'], env)).stdout, 'applied');
  });
});
