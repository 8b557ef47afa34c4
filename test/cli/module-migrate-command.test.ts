import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

/** A tool module as a user writes one: a .ts file (Node strips its types) and its migrations folder. */
async function writeModule(files: Readonly<Record<string, string>>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'taskgate-tool-module-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  return root;
}

const MODULE = {
  'package.json': JSON.stringify({ type: 'module' }),
  'acme-notes.ts': [
    "export const name: string = 'acme-notes';",
    "export const migrations: URL = new URL('./migrations/', import.meta.url);",
    'export const tools = [',
    "  { name: 'notes_add', description: 'adds a note', inputSchema: { type: 'object' }, retry: 'safe',",
    '    handler: async () => ({ content: [] }) },',
    '];',
    '',
  ].join('\n'),
  // The module's table refers to Taskgate's own: module migrations run after Taskgate's.
  'migrations/0001_notes.up.sql':
    'CREATE TABLE acme_notes (id bigint PRIMARY KEY, task_id uuid REFERENCES tasks (id) ON DELETE CASCADE);\n',
  'migrations/0001_notes.down.sql': 'DROP TABLE acme_notes;\n',
  'migrations/0002_note_body.up.sql': 'ALTER TABLE acme_notes ADD COLUMN body text;\n',
  'migrations/0002_note_body.down.sql': 'ALTER TABLE acme_notes DROP COLUMN body;\n',
  'broken.ts': "export const name: string = 'broken';\nexport const migrations = ;\n",
};

/** MODULE, VERSION and STATE of every row of `migrate status` that belongs to acme-notes (the template also has the example ledger's). */
function moduleStates(stdout: string): string[] {
  return stdout
    .split('\n')
    .map((line) => /^(\S+)\s+(\d{4})\s+\S+\s+(\S+)/.exec(line))
    .filter((match) => match !== null && match[1] === 'acme-notes')
    .map((match) => `${match?.[1]} ${match?.[2]} ${match?.[3]}`);
}

describe('taskgate migrate with a tool module', () => {
  // A clone of the migrated template: Taskgate's own migrations are current, the module's are not.
  const database = useTestDatabase();
  let root: string;
  let file: string;
  beforeAll(async () => {
    root = await writeModule(MODULE);
    file = path.join(root, 'acme-notes.ts');
  });

  it('up --tools applies the module, status shows it, down --module reverts it', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    const before = await runCli(['migrate', 'status', '--tools', file], env);
    expect(before.code).toBe(0);
    expect(moduleStates(before.stdout)).toEqual(['acme-notes 0001 pending', 'acme-notes 0002 pending']);
    expect(before.stdout).toContain('2 pending: run taskgate migrate up');

    const plan = await runCli(['migrate', 'plan', '--tools', file], env);
    expect(plan.stdout).toContain(`-- acme-notes: 0001_notes (${root}/migrations/0001_notes.up.sql)`);
    expect(plan.stdout).toContain('ALTER TABLE acme_notes ADD COLUMN body text;');

    const up = await runCli(['migrate', 'up', '--tools', file], env);
    expect(up.stderr).toBe('');
    expect(up.code).toBe(0);
    expect(up.stdout).toMatch(/applied 0001_notes of tool module acme-notes \(\d+ ms\)/);
    expect(up.stdout).toMatch(/applied 0002_note_body of tool module acme-notes \(\d+ ms\)/);
    expect(up.stdout).toContain('applied 2 migration(s)');

    // TASKGATE_TOOLS names the modules when --tools does not.
    const withEnv = { ...env, TASKGATE_TOOLS: ` ${file} ,` };
    const after = await runCli(['migrate', 'status'], withEnv);
    expect(after.stderr).toBe('');
    expect(moduleStates(after.stdout)).toEqual(['acme-notes 0001 applied', 'acme-notes 0002 applied']);
    expect(after.stdout).toMatch(/^MODULE\s+VERSION\s+NAME\s+STATE\s+APPLIED AT$/m);
    expect(after.stdout).toMatch(/^taskgate\s+0001\s+tasks\s+applied/m);
    expect(after.stdout).toContain('all migrations applied');
    const json = JSON.parse((await runCli(['migrate', 'status', '--json'], withEnv)).stdout);
    expect(json.modules.filter((entry: { module: string }) => entry.module === 'acme-notes')).toEqual([
      {
        module: 'acme-notes',
        loaded: true,
        dir: path.join(root, 'migrations'),
        status: [
          expect.objectContaining({ version: 1, name: 'notes', state: 'applied' }),
          expect.objectContaining({ version: 2, name: 'note_body', state: 'applied' }),
        ],
      },
    ]);
    expect((await runCli(['migrate', 'up'], withEnv)).stdout).toContain('up to date: nothing to apply');

    // Without the module, its rows are reported and left alone.
    const unloaded = await runCli(['migrate', 'status'], env);
    expect(unloaded.code).toBe(0);
    expect(moduleStates(unloaded.stdout)).toEqual(['acme-notes 0001 unloaded', 'acme-notes 0002 unloaded']);
    expect(unloaded.stdout).toContain(
      'tool module acme-notes is not loaded: its 2 applied migration(s) are left alone (name it with --tools to manage them)',
    );

    const down = await runCli(['migrate', 'down', '--module', 'acme-notes', '--tools', file], env);
    expect(down.code).toBe(0);
    expect(down.stdout).toMatch(/reverted 0002_note_body of tool module acme-notes/);
    expect(down.stdout).toContain('reverted 1 migration(s)');
    const all = await runCli(['migrate', 'down', '--module', 'acme-notes', '--all'], withEnv);
    expect(all.stdout).toMatch(/reverted 0001_notes of tool module acme-notes/);

    const client = testClient({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT to_regclass('acme_notes') AS notes, to_regclass('tasks') AS tasks");
      expect(rows[0]).toEqual({ notes: null, tasks: 'tasks' });
    } finally {
      await client.end();
    }
    const last = await runCli(['migrate', 'status', '--tools', file], env);
    expect(moduleStates(last.stdout)).toEqual(['acme-notes 0001 pending', 'acme-notes 0002 pending']);
  });

  it('refuses a module it cannot load with one line naming the file, before touching the database', async () => {
    const env = cleanEnv({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/unreachable' });
    const missing = await runCli(['migrate', 'up', '--tools', `${root}/nope.ts`], env);
    expect(missing.code).toBe(78);
    expect(missing.stderr.trimEnd().split('\n')).toEqual([
      `taskgate: tool module ${root}/nope.ts: no such file (give a path to a .ts or .js file, or a package name) [TG_TOOL_MODULE_INVALID]`,
    ]);
    const broken = await runCli(['migrate', 'status', '--tools', `${file},${root}/broken.ts`], env);
    expect(broken.code).toBe(78);
    expect(broken.stderr.trimEnd()).toBe(
      `taskgate: tool module ${root}/broken.ts: does not load at line 2: SyntaxError: Expression expected [TG_TOOL_MODULE_INVALID]`,
    );
  });

  it('refuses down --module for a module that is not loaded, and --module with other actions', async () => {
    const env = cleanEnv({ DATABASE_URL: database.url });
    const down = await runCli(['migrate', 'down', '--module', 'acme-notes'], env);
    expect(down.code).toBe(64);
    expect(down.stderr).toContain('--module acme-notes names no loaded tool module with migrations (loaded: ledger)');
    const up = await runCli(['migrate', 'up', '--module', 'acme-notes', '--tools', file], env);
    expect(up.code).toBe(64);
    expect(up.stderr).toContain('--module only applies to migrate down [TG_USAGE]');
  });
});
