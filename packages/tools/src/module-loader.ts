import { existsSync, realpathSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { TaskgateError } from '@taskgate/errors';
import { type GatewayDefinition, gatewayDefinitionProblem } from '@taskgate/sdk';
import type { AnyTool } from './any-tool.ts';
import { ContentRegistry, type ContentSet } from './content-registry.ts';
import { contentTool, PLATFORM_TOOL_PREFIX } from './content-tool.ts';
import type { ModuleErrorDefinition, ModuleRoutes, ToolModule } from './tool-module.ts';
import { ToolRegistry } from './tool-registry.ts';

const MODULE_NAME = /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*$/;

/**
 * Loads tool modules (`--tools`, TASKGATE_TOOLS): each spec is a file path (relative to `cwd`) or
 * a package name resolved from `cwd`. Everything is checked before anything is served: a module
 * that does not import, exports no tools, or has a tool that fails defineTool's checks or whose
 * schema does not compile, and two tools of one name (within or across modules), each stop
 * start-up with one line naming the file and the tool.
 */
export async function loadToolModules(specs: readonly string[], cwd: string): Promise<ToolModule[]> {
  const modules: ToolModule[] = [];
  const seen = new Map<string, string>();
  const codes = new Map<string, string>();
  for (const spec of specs) {
    const file = resolveSpec(spec, cwd);
    if (modules.some((module) => module.file === file)) continue;
    const loaded = await loadOne(file, cwd);
    const sameName = modules.find((module) => module.name === loaded.name);
    if (sameName) throw invalid(file, `its name ${JSON.stringify(loaded.name)} is also the name of ${sameName.file}`);
    for (const code of Object.keys(loaded.errors)) {
      const other = codes.get(code);
      if (other !== undefined) throw invalid(file, `error code ${code} is also defined by ${other}`);
      codes.set(code, file);
    }
    for (const tool of loaded.tools) {
      const other = seen.get(tool.name);
      if (other !== undefined) {
        throw invalid(file, `tool ${tool.name} is also defined by ${other}; tool names must be unique`);
      }
      seen.set(tool.name, file);
    }
    modules.push(loaded);
  }
  // A resource URI, template or prompt name defined by two modules stops start-up here too.
  contentRegistryOf(modules);
  return modules;
}

/**
 * The tools of the loaded modules, checked and compiled together, with one platform tool per
 * module that has resources, templates or prompts (content-tool.ts): a worker serving the module
 * publishes its content through the catalog and reads it for API processes that did not load it.
 */
export function registryOf(modules: readonly ToolModule[], extra: readonly AnyTool[] = []): ToolRegistry {
  return new ToolRegistry([
    ...extra,
    ...modules.flatMap((module) => {
      const content = module.content ? contentTool(module.name, module.content) : null;
      return content ? [...module.tools, content] : module.tools;
    }),
  ]);
}

function resolveSpec(spec: string, cwd: string): string {
  const trimmed = spec.trim();
  if (trimmed === '') throw invalid(spec, 'an empty module name');
  if (trimmed.startsWith('file:')) return fileURLToPath(trimmed);
  if (trimmed.startsWith('.') || path.isAbsolute(trimmed)) return path.resolve(cwd, trimmed);
  try {
    return createRequire(path.join(cwd, 'noop.js')).resolve(trimmed);
  } catch (error) {
    // `tools/notes.ts` is a package subpath to Node; the operator most likely meant the file.
    const hint = existsSync(path.resolve(cwd, trimmed)) ? `; for the file, write ./${trimmed}` : '';
    throw invalid(trimmed, `not found as a package from ${cwd}: ${firstLine(error)}${hint}`, error);
  }
}

async function loadOne(file: string, cwd: string): Promise<ToolModule> {
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw invalid(file, 'no such file (give a path to a .ts or .js file, or a package name)');
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw invalid(file, `does not load${lineIn(file, error)}: ${firstLine(error)}${loadHint(file, error, cwd)}`, error);
  }
  // Named exports, or the same fields on a default export object.
  const fallback = namespace.default;
  const source =
    namespace.tools === undefined &&
    namespace.gateways === undefined &&
    typeof fallback === 'object' &&
    fallback !== null
      ? (fallback as Record<string, unknown>)
      : namespace;
  const tools = source.tools ?? [];
  const content = contentOf(source, file);
  if (!Array.isArray(tools)) throw invalid(file, 'its tools export must be an array of defineTool({...})');
  const gateways = gatewaysOf(source.gateways, file);
  if (tools.length === 0 && gateways.length === 0 && !hasContent(content)) {
    throw invalid(
      file,
      'exports no tools (export const tools = [defineTool({...}), ...]), no gateways, and no resources, resourceTemplates or prompts',
    );
  }
  try {
    // Checks each declaration, compiles its schema, and refuses a name defined twice.
    new ToolRegistry(tools as AnyTool[]);
    new ContentRegistry([content]);
  } catch (error) {
    throw invalid(file, (error as Error).message, error);
  }
  const reserved = [
    ...(content.resources ?? []).map((resource) => resource.uri),
    ...(content.resourceTemplates ?? []).map((template) => template.uriTemplate),
  ].find((uri) => /^taskgate:/i.test(uri));
  if (reserved !== undefined) throw invalid(file, `${reserved}: the taskgate: scheme is the platform's own`);
  const platformTool = (tools as AnyTool[]).find((tool) => tool.name.startsWith(PLATFORM_TOOL_PREFIX));
  if (platformTool !== undefined) {
    throw invalid(file, `tool ${platformTool.name}: names beginning ${PLATFORM_TOOL_PREFIX} are the platform's own`);
  }
  const name = await nameOf(source.name, file);
  const migrationsDir = await migrationsOf(source.migrations, file);
  if (migrationsDir !== null && source.name === undefined) {
    throw invalid(
      file,
      'exports migrations but no name: its migrations are tracked under the name, so it must not change',
    );
  }
  const routes = source.routes;
  if (routes !== undefined && typeof routes !== 'function') {
    throw invalid(file, 'routes must be a Fastify plugin function (app, services) => Promise<void>');
  }
  return {
    name,
    file,
    tools: tools as AnyTool[],
    content,
    migrationsDir,
    routes: (routes as ModuleRoutes | undefined) ?? null,
    errors: errorsOf(source.errors, file),
    gateways,
  };
}

/** The downstream MCP servers a module publishes tools of (defineGateway), each checked. */
function gatewaysOf(value: unknown, file: string): GatewayDefinition[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalid(file, 'its gateways export must be an array of defineGateway({...})');
  const names = new Set<string>();
  for (const gateway of value) {
    const problem = gatewayDefinitionProblem(gateway);
    if (problem !== null) throw invalid(file, problem);
    const { name } = gateway as GatewayDefinition;
    if (names.has(name)) throw invalid(file, `gateway ${name} is declared twice`);
    names.add(name);
  }
  return value as GatewayDefinition[];
}

/** The resources, templates and prompts a module exports: arrays, each entry checked later. */
function contentOf(source: Record<string, unknown>, file: string): ContentSet {
  const content: Record<string, unknown[]> = {};
  for (const field of ['resources', 'resourceTemplates', 'prompts'] as const) {
    const value = source[field];
    if (value === undefined) continue;
    if (!Array.isArray(value)) throw invalid(file, `its ${field} export must be an array`);
    content[field] = value;
  }
  return content as ContentSet;
}

function hasContent(content: ContentSet): boolean {
  return (
    (content.resources?.length ?? 0) + (content.resourceTemplates?.length ?? 0) + (content.prompts?.length ?? 0) > 0
  );
}

/** The resources, templates and prompts of the loaded modules, checked together (no URI or name twice). */
export function contentRegistryOf(modules: readonly ToolModule[], own: readonly ContentSet[] = []): ContentRegistry {
  try {
    return new ContentRegistry([...own, ...modules.map((module) => module.content ?? {})]);
  } catch (error) {
    throw new TaskgateError('TG_TOOL_MODULE_INVALID', `tool modules: ${(error as Error).message}`, { cause: error });
  }
}

const ERROR_CODE = /^[A-Z][A-Z0-9_]{2,63}$/;

function errorsOf(exported: unknown, file: string): Record<string, ModuleErrorDefinition> {
  if (exported === undefined) return {};
  if (typeof exported !== 'object' || exported === null || Array.isArray(exported)) {
    throw invalid(file, 'errors must be an object of { title, httpStatus } by code');
  }
  const errors: Record<string, ModuleErrorDefinition> = {};
  for (const [code, definition] of Object.entries(exported)) {
    if (!ERROR_CODE.test(code) || code.startsWith('TG_')) {
      throw invalid(file, `error code ${code} must be 3-64 of A-Z 0-9 _ and not start with TG_ (the platform's)`);
    }
    const { title, httpStatus } = (definition ?? {}) as { title?: unknown; httpStatus?: unknown };
    if (typeof title !== 'string' || title === '') throw invalid(file, `error ${code}: title must be a string`);
    if (!Number.isInteger(httpStatus) || (httpStatus as number) < 400 || (httpStatus as number) > 499) {
      // A module's own errors are the caller's to fix; 5xx stays the platform's (outages, bugs).
      throw invalid(file, `error ${code}: httpStatus must be a 4xx status`);
    }
    errors[code] = { title, httpStatus: httpStatus as number };
  }
  return errors;
}

async function nameOf(exported: unknown, file: string): Promise<string> {
  if (exported !== undefined) {
    if (typeof exported !== 'string' || exported.length > 64 || !MODULE_NAME.test(exported)) {
      throw invalid(file, `name ${JSON.stringify(exported)} must be 1-64 of a-z 0-9 . _ - (an npm-style name)`);
    }
    if (exported === 'taskgate') throw invalid(file, 'the name taskgate is reserved for the platform itself');
    return exported;
  }
  // The file's name (its folder's, for an index file): what the logs call it. A package.json up
  // the tree names the package, not necessarily this module (inside a checkout, the checkout).
  const base = path.basename(file).replace(/\.[cm]?[jt]s$/, '');
  return base === 'index' ? path.basename(path.dirname(file)) : base;
}

async function migrationsOf(exported: unknown, file: string): Promise<string | null> {
  if (exported === undefined || exported === null) return null;
  let dir: string;
  if (exported instanceof URL) {
    if (exported.protocol !== 'file:') throw invalid(file, 'migrations must be a file: URL or a path');
    dir = path.resolve(fileURLToPath(exported));
  } else if (typeof exported === 'string' && exported !== '') {
    dir = exported.startsWith('file:')
      ? path.resolve(fileURLToPath(exported))
      : path.resolve(path.dirname(file), exported);
  } else {
    const got = exported === '' ? 'an empty string' : typeof exported;
    throw invalid(
      file,
      `its migrations export must be a folder path (relative to the module) or a file: URL (got ${got})`,
    );
  }
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) {
    throw invalid(file, `its migrations folder ${dir} ${info ? 'is not a folder' : 'does not exist'}`);
  }
  return dir;
}

/**
 * What to do about the two load failures a tool package meets once installed, which Node's own
 * message leaves a newcomer to puzzle out; '' for any other.
 */
function loadHint(file: string, error: unknown, cwd: string): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING') {
    return '; a tool package installed under node_modules must be JavaScript: compile it before packing it, or keep the .ts file outside node_modules and give its path';
  }
  // Node resolves a module's imports from its real path. npm links a `file:` folder dependency, so
  // such a module's imports look in its own folder and above, never in the project's node_modules.
  if (code === 'ERR_MODULE_NOT_FOUND' && /^Cannot find package /.test((error as Error).message)) {
    const real = realOrNull(file);
    const base = realOrNull(cwd) ?? path.resolve(cwd);
    if (real === null || isWithin(base, real)) return '';
    const folder = path.dirname(real);
    const missing = /^Cannot find package '([^']+)'/.exec((error as Error).message)?.[1] ?? '';
    // The @taskgate packages are not on the npm registry: `npm install` in that folder would fail
    // to find them. What installs them is the checkout's packed tarballs (scripts/pack-packages.ts).
    const own = missing.startsWith('@taskgate/')
      ? `install Taskgate's packed tarballs there too (npm install /path/to/taskgate/dist/packs/*.tgz in ${folder}, after npm run pack:packages in the Taskgate checkout; ${missing} is not on the npm registry)`
      : `give it a node_modules of its own (npm install in ${folder})`;
    return `; its imports resolve from its real folder ${folder}, outside ${base}, not from this project's node_modules, so install it packed (npm pack in its folder, then npm install the .tgz) or ${own}`;
  }
  return '';
}

function realOrNull(file: string): string | null {
  try {
    return realpathSync(file);
  } catch {
    return null;
  }
}

function isWithin(folder: string, file: string): boolean {
  const relative = path.relative(folder, file);
  return relative !== '' && !relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative);
}

/** The first line of an error: a syntax error's code frame or a require stack would make one line many. */
function firstLine(error: unknown): string {
  const text =
    error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error);
  return (
    text
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? text
  );
}

/**
 * " at line N" when Node's stack starts with "<file>:N" above a code frame, as it does for a
 * syntax error that type stripping found (V8's own ESM syntax errors carry no position).
 */
function lineIn(file: string, error: unknown): string {
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  // A path or a file: URL, depending on how Node found the module's format.
  const where = [file, pathToFileURL(file).href].find((prefix) => stack.startsWith(`${prefix}:`));
  const line = where === undefined ? undefined : /^:(\d+)\n/.exec(stack.slice(where.length))?.[1];
  return line === undefined ? '' : ` at line ${line}`;
}

function invalid(file: string, problem: string, cause?: unknown): TaskgateError {
  return new TaskgateError('TG_TOOL_MODULE_INVALID', `tool module ${file}: ${problem}`, cause ? { cause } : {});
}
