import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { loadToolModules } from './module-loader.ts';

/** A tool as a plain module exports it (no SDK import needed in a .mjs file). */
const tool = (name: string, extra = '') =>
  `{ name: '${name}', description: 'd', inputSchema: { type: 'object' }, retry: 'safe', handler: async () => ({ content: [] })${extra} }`;
const TOOLS = `export const tools = [${tool('notes_add')}];\n`;
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

async function failure(specs: string[], cwd: string): Promise<string> {
  try {
    await loadToolModules(specs, cwd);
  } catch (error) {
    expect(isTaskgateError(error, 'TG_TOOL_MODULE_INVALID'), String(error)).toBe(true);
    expect((error as Error).message).not.toContain('\n');
    return (error as Error).message;
  }
  throw new Error('expected the module to be refused');
}

describe('loadToolModules', () => {
  it('loads a .ts module with a migrations path, an .mjs one with a file: URL, and a module given twice once', async () => {
    const cwd = await folder({
      ...MIGRATIONS,
      'notes.ts': `export const name: string = 'acme-notes';\nexport const migrations = './migrations';\n${TOOLS}`,
      'lib/tags.mjs': `export const name = '@beta/tags';\nexport const migrations = new URL('../migrations/', import.meta.url);\nexport const tools = [${tool('tags_add')}];\n`,
    });
    const modules = await loadToolModules(['./notes.ts', `${cwd}/lib/tags.mjs`, './notes.ts'], cwd);
    expect(modules.map((module) => [module.name, module.migrationsDir, module.tools.map((t) => t.name)])).toEqual([
      ['acme-notes', path.join(cwd, 'migrations'), ['notes_add']],
      ['@beta/tags', path.join(cwd, 'migrations'), ['tags_add']],
    ]);
  });

  it('resolves a package name from the working directory and names a module by its package', async () => {
    const cwd = await folder({
      'node_modules/acme-tools/package.json': JSON.stringify({
        name: 'acme-tools',
        type: 'module',
        exports: './index.js',
      }),
      'node_modules/acme-tools/index.js': TOOLS,
    });
    const [module] = await loadToolModules(['acme-tools'], cwd);
    expect([module?.name, module?.migrationsDir, module?.routes]).toEqual(['acme-tools', null, null]);
  });

  it('takes the fields of a default export object too', async () => {
    const cwd = await folder({ 'd.mjs': `export default { name: 'd', tools: [${tool('d_one')}] };\n` });
    const [module] = await loadToolModules(['./d.mjs'], cwd);
    expect(module?.tools.map((t) => t.name)).toEqual(['d_one']);
  });

  it('refuses, naming the file, a module missing, broken, without tools, or exporting the wrong things', async () => {
    const cwd = await folder({
      ...MIGRATIONS,
      'tools/notes.mjs': TOOLS,
      'broken.mjs': 'export const name = ;\n',
      'empty.mjs': 'export const tools = [];\n',
      'nameless.mjs': `export const migrations = './migrations';\n${TOOLS}`,
      'badname.mjs': `export const name = 'Acme Notes';\n${TOOLS}`,
      'reserved.mjs': `export const name = 'taskgate';\n${TOOLS}`,
      'number.mjs': `export const name = 'acme';\nexport const migrations = 42;\n${TOOLS}`,
      'missing.mjs': `export const name = 'acme';\nexport const migrations = './no-such-folder';\n${TOOLS}`,
      'file.mjs': `export const name = 'acme';\nexport const migrations = './file.mjs';\n${TOOLS}`,
      'routes.mjs': `export const routes = 'nope';\n${TOOLS}`,
    });
    expect(await failure(['./nope.ts'], cwd)).toBe(
      `tool module ${cwd}/nope.ts: no such file (give a path to a .ts or .js file, or a package name)`,
    );
    expect(await failure(['no-such-package'], cwd)).toMatch(
      /^tool module no-such-package: not found as a package from /,
    );
    expect(await failure(['tools/notes.mjs'], cwd)).toMatch(/; for the file, write \.\/tools\/notes\.mjs$/);
    expect(await failure(['./broken.mjs'], cwd)).toMatch(new RegExp(`^tool module ${cwd}/broken\\.mjs: does not load`));
    expect(await failure(['./empty.mjs'], cwd)).toContain('exports no tools');
    expect(await failure(['./nameless.mjs'], cwd)).toContain('exports migrations but no name');
    expect(await failure(['./badname.mjs'], cwd)).toContain('name "Acme Notes" must be 1-64 of');
    expect(await failure(['./reserved.mjs'], cwd)).toContain('reserved');
    expect(await failure(['./number.mjs'], cwd)).toContain('(got number)');
    expect(await failure(['./missing.mjs'], cwd)).toBe(
      `tool module ${cwd}/missing.mjs: its migrations folder ${cwd}/no-such-folder does not exist`,
    );
    expect(await failure(['./file.mjs'], cwd)).toContain('is not a folder');
    expect(await failure(['./routes.mjs'], cwd)).toContain('routes must be a Fastify plugin function');
  });

  it('refuses a bad tool, a schema that does not compile, and one name in two modules, naming file and tool', async () => {
    const cwd = await folder({
      'bad.mjs': `export const tools = [${tool('bad_retry', ", retry: 'sometimes'")}];\n`,
      'schema.mjs': `export const tools = [${tool('bad_schema', ", inputSchema: { type: 'object', properties: { a: { type: 'nonsense' } } }")}];\n`,
      'twice.mjs': `export const tools = [${tool('dup')}, ${tool('dup')}];\n`,
      'a.mjs': `export const tools = [${tool('shared')}];\n`,
      'b.mjs': `export const tools = [${tool('shared')}];\n`,
    });
    expect(await failure(['./bad.mjs'], cwd)).toBe(
      `tool module ${cwd}/bad.mjs: tool bad_retry: retry must be "safe", "conditional" or "unsafe"`,
    );
    expect(await failure(['./schema.mjs'], cwd)).toContain('tool bad_schema: inputSchema does not compile');
    expect(await failure(['./twice.mjs'], cwd)).toContain('tool dup is defined twice');
    expect(await failure(['./a.mjs', './b.mjs'], cwd)).toBe(
      `tool module ${cwd}/b.mjs: tool shared is also defined by ${cwd}/a.mjs; tool names must be unique`,
    );
  });
});
