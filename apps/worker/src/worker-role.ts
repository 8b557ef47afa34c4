import { PGBOSS_SCHEMA } from '@taskgate/db';
import { PgBoss } from 'pg-boss';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface WorkerRoleOptions {
  readonly connectionString: string;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly error: LogFn };
  /** How long in-flight handlers may run after stop() before pg-boss releases their jobs. */
  readonly graceMs: number;
}

export interface WorkerRole {
  readonly boss: PgBoss;
  stop(): Promise<void>;
}

/**
 * The worker process role: a pg-boss instance that never migrates (the CLI's `migrate up` owns the
 * schema; pg-boss only checks the version) and supervises queue maintenance. Tool handlers are
 * registered on it by the task runtime.
 */
export async function startWorkerRole(options: WorkerRoleOptions): Promise<WorkerRole> {
  const boss = new PgBoss({
    connectionString: options.connectionString,
    schema: PGBOSS_SCHEMA,
    application_name: 'taskgate-worker',
    migrate: false,
    supervise: true,
    schedule: false,
    max: 4,
  });
  boss.on('error', (error) => options.logger.error({ error: error.message }, 'pg-boss error'));
  boss.on('warning', (warning) => options.logger.warn({ warning: warning.message }, 'pg-boss warning'));
  await boss.start();
  options.logger.info({}, 'worker started');
  return {
    boss,
    stop: async () => {
      // pg-boss's own floor for the graceful timeout is 1 s.
      await boss.stop({ graceful: true, close: true, timeout: Math.max(1_000, options.graceMs) });
      options.logger.info({}, 'worker stopped');
    },
  };
}
