import type pg from 'pg';
import type { Migration } from './migration-files.ts';
import type { AppliedModuleMigration } from './module-migrations.ts';

/**
 * The one owner of taskgate_module_migrations, the tool modules' bookkeeping table. Like
 * taskgate_migrations it is created by the runner (under its advisory lock), not by a numbered
 * migration: it must exist before a module's 0001 can be recorded, whatever Taskgate's version.
 */
const TABLE = 'taskgate_module_migrations';

export async function createModuleMigrationTable(client: pg.ClientBase): Promise<void> {
  await client.query(`CREATE TABLE IF NOT EXISTS ${TABLE} (
    module text NOT NULL,
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (module, version)
  )`);
}

/** Every module's rows, loaded or not; none while the table does not exist (read-only callers never create it). */
export async function readModuleApplied(client: pg.ClientBase): Promise<AppliedModuleMigration[]> {
  const exists = await client.query<{ present: string | null }>('SELECT to_regclass($1) AS present', [TABLE]);
  if (!exists.rows[0]?.present) return [];
  const result = await client.query<{
    module: string;
    version: number;
    name: string;
    checksum: string;
    applied_at: Date;
  }>(`SELECT module, version, name, checksum, applied_at FROM ${TABLE} ORDER BY module, version`);
  return result.rows.map((row) => ({
    module: row.module,
    version: row.version,
    name: row.name,
    checksum: row.checksum,
    appliedAt: row.applied_at,
  }));
}

/** Records one applied module migration; runs inside that migration's transaction. */
export async function recordModuleUp(client: pg.ClientBase, module: string, migration: Migration): Promise<void> {
  await client.query(`INSERT INTO ${TABLE} (module, version, name, checksum) VALUES ($1, $2, $3, $4)`, [
    module,
    migration.version,
    migration.name,
    migration.checksum,
  ]);
}

/** Forgets one reverted module migration; runs inside that migration's transaction. */
export async function recordModuleDown(client: pg.ClientBase, module: string, version: number): Promise<void> {
  await client.query(`DELETE FROM ${TABLE} WHERE module = $1 AND version = $2`, [module, version]);
}
