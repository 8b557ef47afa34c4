export { createPool, describeTarget, type PoolOptions, probeDatabase, redactConnectionString } from './connection.ts';
export {
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
  startEmbeddedPostgres,
} from './embedded/embedded-postgres.ts';
export { createKysely } from './kysely.ts';
export { defaultMigrationsDir, loadMigrations, type Migration } from './migrations/migration-files.ts';
export { assertMigratable, type MigrationState, type MigrationStatus } from './migrations/migration-plan.ts';
export {
  type AppliedStep,
  type MigrationLogger,
  type MigrationReport,
  MigrationRunner,
  type MigrationRunnerOptions,
  type PlannedStep,
} from './migrations/migration-runner.ts';
export { PGBOSS_SCHEMA, type PgBossSchemaState, requiredPgBossVersion } from './migrations/pgboss-schema.ts';
export type { Database, TaskEventType, TaskMode, TaskStatus } from './schema.ts';
