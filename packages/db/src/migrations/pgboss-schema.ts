import type pg from 'pg';
import { getConstructionPlans, getMigrationPlans, PgBoss } from 'pg-boss';
import pgBossPackage from 'pg-boss/package.json' with { type: 'json' };

/** pg-boss lives in its own schema; Taskgate's tables stay in the connection's default schema. */
export const PGBOSS_SCHEMA = 'pgboss';

/** The pg-boss schema version the installed pg-boss package needs. */
export const requiredPgBossVersion: number = pgBossPackage.pgboss.schema;

export interface PgBossSchemaState {
  readonly installed: number | null;
  readonly required: number;
}

export async function readPgBossSchemaState(client: pg.ClientBase): Promise<PgBossSchemaState> {
  const exists = await client.query<{ present: string | null }>('SELECT to_regclass($1) AS present', [
    `${PGBOSS_SCHEMA}.version`,
  ]);
  if (!exists.rows[0]?.present) return { installed: null, required: requiredPgBossVersion };
  const version = await client.query<{ version: string }>(`SELECT version FROM ${PGBOSS_SCHEMA}.version`);
  const installed = version.rows[0] ? Number(version.rows[0].version) : null;
  return { installed, required: requiredPgBossVersion };
}

/** The SQL pg-boss would run to reach the required version, or null when it is current. */
export function pgBossPlan(state: PgBossSchemaState): string | null {
  if (state.installed === null) return getConstructionPlans(PGBOSS_SCHEMA);
  if (state.installed < state.required) return getMigrationPlans(PGBOSS_SCHEMA, state.installed);
  return null;
}

/**
 * Installs or upgrades pg-boss's schema by starting pg-boss once with migrations on and nothing
 * else, so every application process can start pg-boss with `migrate: false` (pg-boss then only
 * checks the version). pg-boss's own installer checks "installed?" and then creates, which races
 * between two processes; callers hold the Taskgate migration lock around this call.
 */
export async function installPgBossSchema(connectionString: string): Promise<void> {
  const boss = new PgBoss({
    connectionString,
    schema: PGBOSS_SCHEMA,
    application_name: 'taskgate-migrate',
    migrate: true,
    supervise: false,
    schedule: false,
    max: 2,
  });
  let failure: unknown;
  boss.on('error', (error) => {
    failure ??= error;
  });
  try {
    await boss.start();
    // An upgrade may queue background (BAM) commands such as concurrent index builds. Application
    // processes run pg-boss with migrate: false, which never runs them, so the migration is not done
    // until they are.
    while (await hasUnfinishedBackgroundCommands(boss)) {
      await new Promise((resolve) => setTimeout(resolve, BAM_POLL_MS));
    }
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
  if (failure) throw failure;
}

const BAM_POLL_MS = 200;

async function hasUnfinishedBackgroundCommands(boss: PgBoss): Promise<boolean> {
  const summary = await boss.getBamStatus();
  const failed = summary.find((row) => row.status === 'failed' && row.count > 0);
  if (failed)
    throw new Error(`pg-boss background migration commands failed (${failed.count}); see ${PGBOSS_SCHEMA}.bam`);
  return summary.some((row) => (row.status === 'pending' || row.status === 'in_progress') && row.count > 0);
}
