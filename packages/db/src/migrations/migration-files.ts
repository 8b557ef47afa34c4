import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskgateError } from '@taskgate/errors';

/** One numbered migration: `NNNN_name.up.sql` and its `NNNN_name.down.sql`. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly upSql: string;
  readonly downSql: string;
  /** SHA-256 of the up SQL; an applied migration whose file changed afterwards is refused. */
  readonly checksum: string;
  /** Earlier texts of this file that are accepted as applied (see SUPERSEDED_CHECKSUMS). */
  readonly acceptedChecksums?: readonly string[];
  readonly upFile: string;
  readonly downFile: string;
}

/**
 * Taskgate's migrations/ folder, the single source of schema truth: the checkout keeps it at the
 * repository's top level, and packing (scripts/pack-packages.ts) copies it into the installed
 * @taskgate/db package, beside dist/, because an installed package cannot reach the checkout.
 */
const installedMigrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));
export const defaultMigrationsDir = existsSync(installedMigrationsDir)
  ? installedMigrationsDir
  : fileURLToPath(new URL('../../../../migrations/', import.meta.url));

/**
 * Taskgate's own migrations whose text changed after release, and the checksums of the texts they
 * replaced, which an applied row may still carry. 0003 created the example ledger's business tables
 * until those moved to their tool module (examples/ledger): a database migrated before that keeps
 * the tables, and the module's first migration adopts them (CREATE TABLE IF NOT EXISTS). Nothing
 * else may be added here: a changed migration is otherwise a new migration.
 */
const SUPERSEDED_CHECKSUMS: Readonly<Record<string, readonly string[]>> = {
  '0003_ledger_outbox': ['58e8a2d531374436660728a2e42a3f8569afb08dc9087c589798fb3984ad5731'],
};

const FILE_PATTERN = /^(\d{4})_([a-z0-9][a-z0-9_]*)\.(up|down)\.sql$/;

export function checksumOf(sql: string): string {
  // Line endings are normalised so a checkout with CRLF does not look like an edited migration.
  return createHash('sha256').update(sql.replace(/\r\n/g, '\n')).digest('hex');
}

export async function loadMigrations(dir: string = defaultMigrationsDir): Promise<Migration[]> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (error) {
    throw new TaskgateError('TG_MIGRATION_FILES_INVALID', `cannot read the migrations directory ${dir}`, {
      cause: error,
    });
  }

  const byVersion = new Map<number, { name: string; up?: string; down?: string }>();
  for (const file of entries.sort()) {
    if (!file.endsWith('.sql')) continue;
    const match = FILE_PATTERN.exec(file);
    if (!match) {
      throw invalid(`${file} is not named NNNN_name.up.sql or NNNN_name.down.sql`, dir);
    }
    const [, digits, name, direction] = match as unknown as [string, string, string, 'up' | 'down'];
    const version = Number(digits);
    if (version === 0) throw invalid(`${file}: versions start at 0001`, dir);
    const entry = byVersion.get(version) ?? { name };
    if (entry.name !== name) {
      throw invalid(`version ${digits} is used by two names: ${entry.name} and ${name}`, dir);
    }
    entry[direction] = file;
    byVersion.set(version, entry);
  }

  const migrations: Migration[] = [];
  for (const [version, entry] of [...byVersion].sort(([a], [b]) => a - b)) {
    if (!entry.up) throw invalid(`version ${version} (${entry.name}) has a down file but no up file`, dir);
    if (!entry.down) throw invalid(`${entry.up} has no matching .down.sql file`, dir);
    const upSql = await readFile(path.join(dir, entry.up), 'utf8');
    const downSql = await readFile(path.join(dir, entry.down), 'utf8');
    if (upSql.trim() === '') throw invalid(`${entry.up} is empty`, dir);
    const superseded =
      path.resolve(dir) === path.resolve(defaultMigrationsDir)
        ? SUPERSEDED_CHECKSUMS[`${digits(version)}_${entry.name}`]
        : undefined;
    migrations.push({
      version,
      name: entry.name,
      upSql,
      downSql,
      checksum: checksumOf(upSql),
      ...(superseded ? { acceptedChecksums: superseded } : {}),
      upFile: path.join(dir, entry.up),
      downFile: path.join(dir, entry.down),
    });
  }
  return migrations;
}

function digits(version: number): string {
  return String(version).padStart(4, '0');
}

function invalid(problem: string, dir: string): TaskgateError {
  return new TaskgateError('TG_MIGRATION_FILES_INVALID', `invalid migration files in ${dir}: ${problem}`);
}
