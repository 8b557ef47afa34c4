import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { isTaskgateError } from '@taskgate/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { contentToolName } from './content-tool.ts';
import { loadToolModules, registryOf } from './module-loader.ts';

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

describe('loadToolModules on a tool package as npm installs it', () => {
  const SDK = path.resolve(import.meta.dirname, '../../sdk');
  const created: string[] = [];
  afterEach(async () => {
    await Promise.all(created.splice(0).map((root) => rm(root, { recursive: true, force: true })));
  });
  async function made(files: Readonly<Record<string, string>>): Promise<string> {
    const root = await realpath(await folder(files));
    created.push(root);
    return root;
  }
  /**
   * Loads in a Node of its own: Vitest imports modules through its own resolver and transform,
   * which strips types under node_modules too and does not resolve as Node does from a real path.
   */
  async function loadInNode(
    specs: string[],
    cwd: string,
  ): Promise<{ names?: string[]; code?: string; message?: string }> {
    const script = `
      import { loadToolModules } from ${JSON.stringify(path.join(import.meta.dirname, 'module-loader.ts'))};
      try {
        const modules = await loadToolModules(${JSON.stringify(specs)}, ${JSON.stringify(cwd)});
        console.log(JSON.stringify({ names: modules.map((module) => module.name) }));
      } catch (error) {
        console.log(JSON.stringify({ code: error.code, message: error.message }));
      }`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd });
    return JSON.parse(stdout);
  }
  async function failure(specs: string[], cwd: string): Promise<string> {
    const result = await loadInNode(specs, cwd);
    expect(result.code, JSON.stringify(result)).toBe('TG_TOOL_MODULE_INVALID');
    expect(result.message).not.toContain('\n');
    return result.message as string;
  }
  const PACKAGE = (name: string, entry: string) => JSON.stringify({ name, type: 'module', exports: entry });
  const SDK_TOOLS = `import { defineTool } from '@taskgate/sdk';\nexport const tools = [defineTool(${tool('linked_add')})];\n`;

  it('says a TypeScript package under node_modules must be compiled, or loaded by path from outside', async () => {
    const cwd = await made({
      'node_modules/ts-tools/package.json': PACKAGE('ts-tools', './index.ts'),
      'node_modules/ts-tools/index.ts': `export const tools: unknown[] = [${tool('ts_add')}];\n`,
      // The same file outside node_modules loads: type stripping applies there.
      'tools.ts': `export const tools: unknown[] = [${tool('ts_add')}];\n`,
    });
    for (const spec of ['ts-tools', './node_modules/ts-tools/index.ts']) {
      const message = await failure([spec], cwd);
      expect(message).toMatch(/^tool module \S+\/node_modules\/ts-tools\/index\.ts: does not load: Stripping types /);
      expect(message).toMatch(
        /; a tool package installed under node_modules must be JavaScript: compile it before packing it, or keep the \.ts file outside node_modules and give its path$/,
      );
    }
    expect(await loadInNode(['./tools.ts'], cwd)).toEqual({ names: ['tools'] });
  });

  it('says a linked folder dependency resolves its imports from its real folder, and to install it or the packed tarballs, never the registry', async () => {
    // npm installs a `file:` folder dependency as a link: the project has @taskgate/sdk, the
    // module's real folder (outside the project) has no node_modules.
    const outside = await made({ 'package.json': PACKAGE('linked-tools', './index.mjs'), 'index.mjs': SDK_TOOLS });
    const cwd = await made({
      'node_modules/copied-tools/package.json': PACKAGE('copied-tools', './index.mjs'),
      'node_modules/copied-tools/index.mjs': SDK_TOOLS.replace('linked_add', 'copied_add'),
      'inside/index.mjs': `import 'no-such-package-anywhere';\n${TOOLS}`,
    });
    await mkdir(path.join(cwd, 'node_modules/@taskgate'));
    await symlink(SDK, path.join(cwd, 'node_modules/@taskgate/sdk'));
    await symlink(outside, path.join(cwd, 'node_modules/linked-tools'));

    const hint =
      `; its imports resolve from its real folder ${outside}, outside ${cwd}, not from this project's node_modules, ` +
      `so install it packed (npm pack in its folder, then npm install the .tgz) or install Taskgate's packed tarballs there too ` +
      `(npm install /path/to/taskgate/dist/packs/*.tgz in ${outside}, after npm run pack:packages in the Taskgate checkout; ` +
      '@taskgate/sdk is not on the npm registry)';
    for (const spec of ['linked-tools', './node_modules/linked-tools/index.mjs']) {
      const message = await failure([spec], cwd);
      expect(message).toContain(
        `does not load: Cannot find package '@taskgate/sdk' imported from ${outside}/index.mjs`,
      );
      expect(message.endsWith(hint), message).toBe(true);
    }
    // Installed as a copy (what installing the packed tarball does), the same file loads.
    expect(await loadInNode(['copied-tools'], cwd)).toEqual({ names: ['copied-tools'] });
    // A package of the registry missing there: npm install in its folder is what works.
    const registry = await made({
      'package.json': PACKAGE('registry-tools', './index.mjs'),
      'index.mjs': `import 'some-registry-package';\n${TOOLS}`,
    });
    await symlink(registry, path.join(cwd, 'node_modules/registry-tools'));
    expect(await failure(['registry-tools'], cwd)).toMatch(
      new RegExp(`or give it a node_modules of its own \\(npm install in ${registry}\\)$`),
    );
    // A package missing for a module inside the project is only that: no word about real folders.
    const missing = await failure(['./inside/index.mjs'], cwd);
    expect(missing).toMatch(/Cannot find package 'no-such-package-anywhere' imported from \S+$/);
  });
});

describe('loadToolModules: resources, resource templates and prompts', () => {
  const resource = (uri: string) => `{ uri: '${uri}', name: 'r', read: () => [{ text: 'x' }] }`;
  const prompt = (name: string) => `{ name: '${name}', get: () => ({ messages: [] }) }`;

  it('loads a module that serves only resources and prompts, and keeps them with the module', async () => {
    const cwd = await folder({
      'docs.mjs': `export const resources = [${resource('docs://readme')}];\nexport const resourceTemplates = [{ uriTemplate: 'docs://{page}', name: 'page', read: () => null }];\nexport const prompts = [${prompt('summarize')}];\n`,
    });
    const [module] = await loadToolModules(['./docs.mjs'], cwd);
    expect(module?.tools).toEqual([]);
    expect(module?.content?.resources?.map((r) => r.uri)).toEqual(['docs://readme']);
    expect(module?.content?.resourceTemplates?.map((t) => t.uriTemplate)).toEqual(['docs://{page}']);
    expect(module?.content?.prompts?.map((p) => p.name)).toEqual(['summarize']);
  });

  it('refuses a bad declaration, a URI or prompt twice across modules, and the taskgate: scheme', async () => {
    const cwd = await folder({
      'a.mjs': `export const resources = [${resource('docs://readme')}];\nexport const prompts = [${prompt('p')}];\n`,
      'b.mjs': `export const resources = [${resource('docs://readme')}];\n`,
      'c.mjs': `export const prompts = [${prompt('p')}];\n`,
      'own.mjs': `export const resourceTemplates = [{ uriTemplate: 'taskgate://x/{id}', name: 't', read: () => null }];\n`,
      'relative.mjs': `export const resources = [${resource('readme.md')}];\n`,
      'operator.mjs': `export const resourceTemplates = [{ uriTemplate: 'docs://{+path}', name: 't', read: () => null }];\n`,
      'notarray.mjs': `export const prompts = { p: ${prompt('p')} };\n`,
      'noread.mjs': `export const resources = [{ uri: 'docs://x', name: 'x' }];\n`,
      'nothing.mjs': 'export const tools = [];\nexport const prompts = [];\n',
    });
    expect(await failure(['./a.mjs', './b.mjs'], cwd)).toContain('resource docs://readme is defined twice');
    expect(await failure(['./a.mjs', './c.mjs'], cwd)).toContain('prompt p is defined twice');
    expect(await failure(['./own.mjs'], cwd)).toContain("the taskgate: scheme is the platform's own");
    expect(await failure(['./relative.mjs'], cwd)).toContain('must be an absolute URI');
    expect(await failure(['./operator.mjs'], cwd)).toContain('{+path} is not a simple {name} expression');
    expect(await failure(['./notarray.mjs'], cwd)).toContain('its prompts export must be an array');
    expect(await failure(['./noread.mjs'], cwd)).toContain('resource docs://x: read must be a function');
    expect(await failure(['./nothing.mjs'], cwd)).toContain('exports no tools');
  });

  it('serves a module’s content by one platform tool, and refuses a tool named like one', async () => {
    const cwd = await folder({
      'docs.mjs': `export const name = 'docs';\nexport const resources = [${resource('docs://readme')}];\n`,
      'mimic.mjs': `export const tools = [{ name: 'taskgate.content.docs', description: 'd', inputSchema: { type: 'object' }, retry: 'safe', handler: async () => ({ content: [] }) }];\n`,
    });
    const registry = registryOf(await loadToolModules(['./docs.mjs'], cwd));
    const [tool] = registry.list();
    // What the catalog gets: the declarations, not their functions.
    const [entry] = registry.catalogEntries();
    const published = {
      module: 'docs',
      resources: [{ uri: 'docs://readme', name: 'r' }],
      resourceTemplates: [],
      prompts: [],
    };
    expect(entry?.definition.content).toEqual(published);
    // Named by the module and its declarations: another version, or another module of the same
    // name, is another tool (and queue).
    expect(tool?.name).toBe(contentToolName('docs', published));
    expect(tool?.name).toMatch(/^taskgate\.content\.docs\.[0-9a-f]{16}$/);
    expect(contentToolName('docs', { ...published, resources: [{ uri: 'docs://other', name: 'r' }] })).not.toBe(
      tool?.name,
    );
    expect(await failure(['./mimic.mjs'], cwd)).toContain(
      "tool taskgate.content.docs: names beginning taskgate. are the platform's own",
    );
  });
});
