import { probeDatabase } from '@taskgate/db';

export interface PostgresServer {
  /** A URL whose user may CREATE DATABASE; the tests never write to its own database. */
  readonly adminUrl: string;
  readonly source: string;
  stop(): Promise<void>;
}

const HOW_TO =
  'Tests need PostgreSQL: set TEST_DATABASE_URL (for example postgres://postgres@127.0.0.1:5432/postgres, ' +
  'a user allowed to CREATE DATABASE), or start a Docker engine so Testcontainers can run one.';

/**
 * TEST_DATABASE_URL or DATABASE_URL when set; otherwise a Testcontainers PostgreSQL when a Docker
 * engine answers; otherwise a clear message saying how to provide one.
 */
export async function findPostgres(
  env: NodeJS.ProcessEnv,
  probeDocker: () => Promise<boolean> = dockerAnswers,
): Promise<PostgresServer> {
  for (const name of ['TEST_DATABASE_URL', 'DATABASE_URL'] as const) {
    const url = env[name];
    if (url) {
      await probeDatabase(url, name).catch((error: Error) => {
        throw new Error(`${error.message}. ${HOW_TO}`);
      });
      return { adminUrl: url, source: name, stop: async () => {} };
    }
  }

  if (!(await probeDocker())) throw new Error(`No PostgreSQL found. ${HOW_TO}`);
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:15-alpine').start();
  return {
    adminUrl: container.getConnectionUri(),
    source: `Testcontainers ${container.getId().slice(0, 12)}`,
    stop: async () => {
      await container.stop();
    },
  };
}

async function dockerAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), 15_000);
    });
    try {
      await Promise.race([getContainerRuntimeClient(), timeout]);
    } finally {
      clearTimeout(timer);
    }
    return true;
  } catch {
    return false;
  }
}
