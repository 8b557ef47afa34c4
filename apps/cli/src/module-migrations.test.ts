import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { loadModuleMigrations } from './module-migrations.ts';

const MIGRATIONS = {
  'migrations/0001_notes.up.sql': 'CREATE TABLE acme_notes (id integer PRIMARY KEY);\n',
  'migrations/0001_notes.down.sql': 'DROP TABLE acme_notes;\n',
};

/** A new folder holding these files (paths may have folders); returns its path. */
async function folder(files: Readonly<Record<string, string>>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'taskgate-module-'));
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true });
    await writeFile(path.join(root, name), text);
  }
  return root;
}

async function failure(specs: string[], cwd: string, code = 'TG_TOOL_MODULE_INVALID'): Promise<string> {
  try {
    await loadModuleMigrations(specs, cwd);
  } catch (error) {
    expect(isTaskgateError(error), String(error)).toBe(true);
    expect((error as { code: string }).code).toBe(code);
    expect((error as Error).message).not.toContain('\n');
    return (error as Error).message;
  }
  throw new Error('expected the module to be refused');
}

describe('loadModuleMigrations', () => {
  it('loads a .ts module whose migrations are a folder path relative to its file, and one with a file: URL', async () => {
    const cwd = await folder({
      ...MIGRATIONS,
      'notes.ts': "export const name: string = 'acme-notes';\nexport const migrations = './migrations';\n",
      'lib/tags.mjs':
        "export const name = '@beta/tags';\nexport const migrations = new URL('../migrations/', import.meta.url);\n",
    });
    const modules = await loadModuleMigrations(['./notes.ts', `${cwd}/lib/tags.mjs`, './notes.ts'], cwd);
    expect(modules.map((entry) => [entry.module, entry.dir, entry.migrations.map((m) => m.name)])).toEqual([
      ['acme-notes', path.join(cwd, 'migrations'), ['notes']],
      ['@beta/tags', path.join(cwd, 'migrations'), ['notes']],
    ]);
  });

  it('resolves a package name from the working directory', async () => {
    const cwd = await folder({
      'node_modules/acme-tools/package.json': JSON.stringify({
        name: 'acme-tools',
        type: 'module',
        exports: './index.js',
      }),
      'node_modules/acme-tools/index.js': "export const name = 'acme-tools';\nexport const migrations = 'sql';\n",
      'node_modules/acme-tools/sql/0001_notes.up.sql': 'SELECT 1;\n',
      'node_modules/acme-tools/sql/0001_notes.down.sql': 'SELECT 1;\n',
    });
    const [entry] = await loadModuleMigrations(['acme-tools'], cwd);
    expect(entry?.module).toBe('acme-tools');
    expect(entry?.dir).toBe(path.join(cwd, 'node_modules/acme-tools/sql'));
  });

  it('lets a module without a migrations export contribute nothing', async () => {
    const cwd = await folder({ 'plain.mjs': 'export const tools = [];\n' });
    expect(await loadModuleMigrations(['./plain.mjs'], cwd)).toEqual([]);
  });

  it('names the file when a module is missing, fails to import, or exports the wrong things', async () => {
    const cwd = await folder({
      ...MIGRATIONS,
      'tools/notes.mjs': "export const name = 'x';\nexport const migrations = '../migrations';\n",
      'broken.mjs': 'export const name = ;\n',
      'nameless.mjs': "export const migrations = './migrations';\n",
      'badname.mjs': "export const name = 'Acme Notes';\nexport const migrations = './migrations';\n",
      'number.mjs': "export const name = 'acme';\nexport const migrations = 42;\n",
      'missing.mjs': "export const name = 'acme';\nexport const migrations = './no-such-folder';\n",
      'file.mjs': "export const name = 'acme';\nexport const migrations = './file.mjs';\n",
    });
    expect(await failure(['./nope.ts'], cwd)).toBe(
      `tool module ${cwd}/nope.ts not found (from --tools or TASKGATE_TOOLS ./nope.ts)`,
    );
    expect(await failure(['no-such-package'], cwd)).toMatch(
      /^tool module no-such-package not found as a package from /,
    );
    expect(await failure(['tools/notes.mjs'], cwd)).toMatch(/; for the file, write \.\/tools\/notes\.mjs$/);
    // Here the module loads through vitest's bundler, whose parse error is not Node's SyntaxError
    // (test/cli/module-migrate-command.test.ts sees Node's).
    expect(await failure(['./broken.mjs'], cwd)).toMatch(
      new RegExp(`^tool module ${cwd}/broken\\.mjs failed to load: \\S`),
    );
    expect(await failure(['./nameless.mjs'], cwd)).toBe(
      `tool module ${cwd}/nameless.mjs exports migrations but no name (the string its migrations are recorded under)`,
    );
    expect(await failure(['./badname.mjs'], cwd)).toContain(
      `tool module ${cwd}/badname.mjs: tool module name "Acme Notes"`,
    );
    expect(await failure(['./number.mjs'], cwd)).toBe(
      `tool module ${cwd}/number.mjs: its migrations export must be a folder path or a file: URL (got number)`,
    );
    expect(await failure(['./missing.mjs'], cwd)).toBe(
      `tool module ${cwd}/missing.mjs: its migrations folder ${cwd}/no-such-folder does not exist`,
    );
    expect(await failure(['./file.mjs'], cwd)).toContain('is not a folder');
  });

  it('names the module when a file in its migrations folder is misnamed', async () => {
    const cwd = await folder({
      'migrations/1_notes.sql': 'SELECT 1;\n',
      'notes.mjs': "export const name = 'acme';\nexport const migrations = './migrations';\n",
    });
    expect(await failure(['./notes.mjs'], cwd, 'TG_MIGRATION_FILES_INVALID')).toMatch(
      new RegExp(`^tool module ${cwd}/notes\\.mjs: invalid migration files in .*1_notes\\.sql is not named`),
    );
  });
});
