import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { assertModuleName, loadMigrations, type ModuleMigrations } from '@taskgate/db';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';

/**
 * The migrations of the tool modules named by `--tools` or TASKGATE_TOOLS, in the order given.
 * The tool module loader is meant to reuse (or replace) this; the contract it keeps:
 *
 * - A spec that starts with `.`, `/` or `file:` is a file, relative to `cwd`; any other spec is a
 *   package name, resolved from `cwd` as `require.resolve` would (so the package's `exports` need a
 *   `default` or `require` entry). Node runs `.ts` modules itself (type stripping).
 * - A module that exports `migrations` must export `name` (see assertModuleName); `migrations` is a
 *   folder: a path relative to the module's own file, or a `file:` URL (`new URL('./migrations/',
 *   import.meta.url)`). Its files are named like Taskgate's (`NNNN_name.up.sql` + `.down.sql`).
 * - A module without a `migrations` export contributes nothing; a spec given twice loads once.
 * - Any problem is one TaskgateError line naming the module's file: TG_TOOL_MODULE_INVALID, or
 *   TG_MIGRATION_FILES_INVALID for the files inside its folder.
 */
export async function loadModuleMigrations(specs: readonly string[], cwd: string): Promise<ModuleMigrations[]> {
  const seen = new Set<string>();
  const result: ModuleMigrations[] = [];
  for (const spec of specs) {
    const file = resolveSpec(spec, cwd);
    if (seen.has(file)) continue;
    seen.add(file);
    const loaded = await migrationsOf(file);
    if (loaded) result.push(loaded);
  }
  return result;
}

function resolveSpec(spec: string, cwd: string): string {
  if (spec.startsWith('file:')) return fileURLToPath(spec);
  if (spec.startsWith('.') || path.isAbsolute(spec)) {
    const file = path.resolve(cwd, spec);
    if (!existsSync(file)) throw invalid(`tool module ${file} not found (from --tools or TASKGATE_TOOLS ${spec})`);
    return file;
  }
  try {
    return createRequire(path.join(cwd, 'noop.js')).resolve(spec);
  } catch (error) {
    // `tools/notes.ts` is a package subpath to Node; the operator most likely meant the file.
    const hint = existsSync(path.resolve(cwd, spec)) ? `; for the file, write ./${spec}` : '';
    throw invalid(`tool module ${spec} not found as a package from ${cwd}: ${firstLine(error)}${hint}`, error);
  }
}

async function migrationsOf(file: string): Promise<ModuleMigrations | null> {
  let exports: Record<string, unknown>;
  try {
    exports = await import(pathToFileURL(file).href);
  } catch (error) {
    throw invalid(`tool module ${file} failed to load${lineIn(file, error)}: ${firstLine(error)}`, error);
  }
  const { name, migrations } = exports;
  if (migrations === undefined) return null;
  if (name === undefined) {
    throw invalid(`tool module ${file} exports migrations but no name (the string its migrations are recorded under)`);
  }
  assertModuleName(name, `tool module ${file}`);
  const dir = folderOf(migrations, file);
  const found = await stat(dir).catch(() => null);
  if (!found?.isDirectory()) {
    throw invalid(`tool module ${file}: its migrations folder ${dir} ${found ? 'is not a folder' : 'does not exist'}`);
  }
  try {
    return { module: name, migrations: await loadMigrations(dir), dir };
  } catch (error) {
    if (!isTaskgateError(error, 'TG_MIGRATION_FILES_INVALID')) throw error;
    throw new TaskgateError('TG_MIGRATION_FILES_INVALID', `tool module ${file}: ${error.message}`, { cause: error });
  }
}

function folderOf(migrations: unknown, file: string): string {
  if (migrations instanceof URL || (typeof migrations === 'string' && migrations.startsWith('file:'))) {
    const url = new URL(migrations);
    if (url.protocol !== 'file:')
      throw invalid(`tool module ${file}: its migrations URL must be a file: URL (got ${url.protocol})`);
    return path.resolve(fileURLToPath(url));
  }
  if (typeof migrations === 'string' && migrations !== '') return path.resolve(path.dirname(file), migrations);
  const got = migrations === null ? 'null' : typeof migrations === 'string' ? 'an empty string' : typeof migrations;
  throw invalid(`tool module ${file}: its migrations export must be a folder path or a file: URL (got ${got})`);
}

function invalid(message: string, cause?: unknown): TaskgateError {
  return new TaskgateError('TG_TOOL_MODULE_INVALID', message, cause === undefined ? {} : { cause });
}

/**
 * " at line N" when Node's stack starts with "<file>:N" above a code frame, as it does
 * for a syntax error that type stripping found (V8's own ESM syntax errors carry no position).
 */
function lineIn(file: string, error: unknown): string {
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  // A path or a file: URL, depending on how Node found the module's format.
  const where = [file, pathToFileURL(file).href].find((prefix) => stack.startsWith(`${prefix}:`));
  const line = where === undefined ? undefined : /^:(\d+)\n/.exec(stack.slice(where.length))?.[1];
  return line === undefined ? '' : ` at line ${line}`;
}

/** The first line of an error: a syntax error's code frame or a require stack would make the CLI's one line many. */
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
