import { describeTarget, probeDatabase, startEmbeddedPostgres } from '@taskgate/db';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';

export interface DatabaseHandle {
  readonly connectionString: string;
  readonly kind: 'external' | 'embedded';
  /** host:port/database, or the embedded data directory; never a password. */
  readonly description: string;
  stop(): Promise<void>;
}

/**
 * DATABASE_URL when it is set (checked for reachability now, so a wrong URL fails at start-up with
 * one line instead of at the first query), otherwise the embedded Postgres in TASKGATE_DATA_DIR.
 */
export async function openDatabase(config: Config, logger: Logger): Promise<DatabaseHandle> {
  if (config.databaseUrl !== null) {
    await probeDatabase(config.databaseUrl, 'DATABASE_URL');
    return {
      connectionString: config.databaseUrl,
      kind: 'external',
      description: describeTarget(config.databaseUrl),
      stop: async () => {},
    };
  }
  const log = logger.child({ component: 'embedded-postgres' });
  const embedded = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    logger: {
      debug: (fields, message) => log.debug(fields, message),
      info: (fields, message) => log.info(fields, message),
      warn: (fields, message) => log.warn(fields, message),
    },
  });
  logger.info(
    { dataDir: config.dataDir },
    `embedded single-machine mode: PGlite keeps the data in ${config.dataDir} and runs one transaction at a time; ` +
      'for several processes or machines set DATABASE_URL=postgres://user:password@host:5432/database',
  );
  return {
    connectionString: embedded.connectionString,
    kind: 'embedded',
    description: `embedded ${config.dataDir}`,
    stop: () => embedded.stop(),
  };
}
