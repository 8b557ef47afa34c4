import { assertMigratable, type MigrationReport } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';

/**
 * `taskgate start --no-migrate`: a separate `migrate up` owns the schema, so start only checks
 * it — Taskgate's own migrations, pg-boss's schema and every loaded tool module's migrations.
 * A tool module's rows whose module is not loaded are not this process's concern.
 */
export function assertSchemaCurrent(report: MigrationReport): void {
  const { status, pgBoss, modules } = report;
  assertMigratable(status);
  const loaded = modules.filter((entry) => entry.loaded);
  for (const entry of loaded) assertMigratable(entry.status, entry.module);
  const platformPending = status.filter((row) => row.state === 'pending').length;
  const modulePending = loaded.flatMap((entry) => entry.status).filter((row) => row.state === 'pending').length;
  const pgBossBehind = pgBoss.installed !== pgBoss.required;
  if (platformPending + modulePending > 0 || pgBossBehind) {
    const parts = [`${platformPending + modulePending} migration(s) pending`];
    if (modulePending > 0) parts.push(`${modulePending} of them of tool modules`);
    if (pgBossBehind) parts.push('pg-boss schema not current');
    throw new TaskgateError(
      'TG_MIGRATION_PENDING',
      `the database schema is behind this code (${parts.join(', ')}); run taskgate migrate up first`,
    );
  }
}
