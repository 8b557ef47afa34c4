import type pg from 'pg';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface RelayRoleOptions {
  readonly pool: pg.Pool;
  readonly logger: { readonly info: LogFn };
}

export interface RelayRole {
  stop(): Promise<void>;
}

/**
 * The outbox relay role. Its delivery loop arrives with the outbox table; today it proves its
 * database connection at start-up and takes part in the process lifecycle like the other roles.
 */
export async function startRelayRole(options: RelayRoleOptions): Promise<RelayRole> {
  await options.pool.query('SELECT 1');
  options.logger.info({}, 'relay started');
  return {
    stop: async () => {
      options.logger.info({}, 'relay stopped');
    },
  };
}
