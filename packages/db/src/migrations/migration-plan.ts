import { TaskgateError } from '@taskgate/errors';
import type { Migration } from './migration-files.ts';

/** A row of the taskgate_migrations bookkeeping table. */
export interface AppliedMigration {
  readonly version: number;
  readonly name: string;
  readonly checksum: string;
  readonly appliedAt: Date;
}

export type MigrationState = 'applied' | 'pending' | 'edited' | 'unknown' | 'unloaded';

export interface MigrationStatus {
  readonly version: number;
  readonly name: string;
  /**
   * applied: recorded and matching its file; pending: known here, not in the database;
   * edited: applied, but the file's SHA-256 changed since; unknown: in the database, not in this
   * code (the database is ahead of the code); unloaded: applied by a tool module that is not
   * loaded now, so nothing can be said about it (and it is left alone).
   */
  readonly state: MigrationState;
  readonly appliedAt: Date | null;
}

/** Joins the migration files with the bookkeeping rows, ordered by version. Pure. */
export function compareMigrations(
  known: readonly Migration[],
  applied: readonly AppliedMigration[],
): MigrationStatus[] {
  const appliedByVersion = new Map(applied.map((row) => [row.version, row]));
  const rows: MigrationStatus[] = known.map((migration) => {
    const row = appliedByVersion.get(migration.version);
    if (!row) return { version: migration.version, name: migration.name, state: 'pending', appliedAt: null };
    const accepted = row.checksum === migration.checksum || migration.acceptedChecksums?.includes(row.checksum);
    const state = accepted ? 'applied' : 'edited';
    return { version: migration.version, name: migration.name, state, appliedAt: row.appliedAt };
  });
  const knownVersions = new Set(known.map((migration) => migration.version));
  for (const row of applied) {
    if (!knownVersions.has(row.version)) {
      rows.push({ version: row.version, name: row.name, state: 'unknown', appliedAt: row.appliedAt });
    }
  }
  return rows.sort((a, b) => a.version - b.version);
}

/**
 * Refuses to touch a database that this code does not fully understand: one with migrations it
 * does not know (a newer release ran against it), or one whose applied migrations were edited.
 * With `module`, the rows are that tool module's and the messages name it.
 */
export function assertMigratable(status: readonly MigrationStatus[], module?: string): void {
  const unknown = status.filter((row) => row.state === 'unknown');
  if (unknown.length > 0) {
    const list = unknown.map((row) => `${pad(row.version)}_${row.name}`).join(', ');
    throw new TaskgateError(
      'TG_MIGRATION_DB_AHEAD',
      module === undefined
        ? `the database has migrations this code does not know (${list}); it was migrated by a newer Taskgate — run that version, or restore a matching backup`
        : `the database has migrations of tool module ${module} that its code does not know (${list}); it was migrated by a newer version of the module — load that version, or restore a matching backup`,
      { details: { unknownVersions: unknown.map((row) => row.version), ...(module === undefined ? {} : { module }) } },
    );
  }
  const edited = status.filter((row) => row.state === 'edited');
  if (edited.length > 0) {
    const list = edited.map((row) => `${pad(row.version)}_${row.name}`).join(', ');
    throw new TaskgateError(
      'TG_MIGRATION_CHECKSUM_MISMATCH',
      module === undefined
        ? `applied migrations were edited after they ran (${list}); restore the original files and add a new migration instead`
        : `applied migrations of tool module ${module} were edited after they ran (${list}); restore the module's original files and add a new migration instead`,
      { details: { editedVersions: edited.map((row) => row.version), ...(module === undefined ? {} : { module }) } },
    );
  }
}

/**
 * Refuses a `--to` that names no migration: `up --to 9` with no migration 9 would otherwise apply
 * nothing, or everything below 9, and say "up to date". `down` also takes 0 (revert them all).
 * With `module`, the versions are that tool module's and the message names it.
 */
export function assertKnownTarget(
  known: readonly Migration[],
  to: number | undefined,
  options: { readonly allowZero?: boolean; readonly module?: string | undefined } = {},
): void {
  if (to === undefined || (options.allowZero === true && to === 0)) return;
  if (known.some((migration) => migration.version === to)) return;
  const whose = options.module === undefined ? "Taskgate's migrations" : `tool module ${options.module}'s migrations`;
  const first = known[0];
  const last = known.at(-1);
  const range =
    first === undefined || last === undefined
      ? 'there are none'
      : first === last
        ? `there is only ${first.version}`
        : `they are ${first.version} to ${last.version}`;
  const zero = options.allowZero === true ? ', or 0 to revert them all' : '';
  throw new TaskgateError('TG_USAGE', `--to ${to} names none of ${whose} (${range}${zero})`, {
    details: {
      to,
      known: known.map((migration) => migration.version),
      ...(options.module === undefined ? {} : { module: options.module }),
    },
  });
}

/** The migrations `up` would apply, in order; `to` stops at that version (inclusive). */
export function pendingMigrations(
  known: readonly Migration[],
  status: readonly MigrationStatus[],
  to?: number,
): Migration[] {
  const pending = new Set(status.filter((row) => row.state === 'pending').map((row) => row.version));
  return known.filter((migration) => pending.has(migration.version) && (to === undefined || migration.version <= to));
}

/**
 * The migrations `down` would revert, newest first. With `to`, every applied migration above that
 * version; without it, only the newest applied one.
 */
export function revertibleMigrations(
  known: readonly Migration[],
  status: readonly MigrationStatus[],
  to?: number,
): Migration[] {
  const applied = new Set(status.filter((row) => row.state === 'applied').map((row) => row.version));
  const candidates = known.filter((migration) => applied.has(migration.version)).reverse();
  if (to === undefined) return candidates.slice(0, 1);
  return candidates.filter((migration) => migration.version > to);
}

export function pad(version: number): string {
  return String(version).padStart(4, '0');
}
