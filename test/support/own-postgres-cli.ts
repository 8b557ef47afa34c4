import { cleanEnv, type RunningProcess, startCli } from './cli.ts';
import { PostgresCluster } from './postgres-cluster.ts';
import { migrateAsDefault } from './test-run.ts';

/** `taskgate start` on a Postgres of the test's own, which the test may stop and start again. */
export interface CliOnOwnPostgres {
  readonly server: PostgresCluster;
  readonly taskgate: RunningProcess;
  /** The API's origin, as the CLI logged it. */
  readonly base: string;
}

/**
 * A temporary cluster, migrated as `taskgate migrate up` would, and `taskgate start --no-migrate`
 * (api, worker and relay in one process) against it, once it says it started.
 */
export async function startCliOnOwnPostgres(
  logLevel: 'info' | 'debug',
  env: Record<string, string> = {},
): Promise<CliOnOwnPostgres> {
  const server = await PostgresCluster.temporary();
  try {
    const url = server.url('postgres');
    await migrateAsDefault(url);
    const taskgate = startCli(
      ['start', '--no-migrate'],
      cleanEnv({ DATABASE_URL: url, PORT: '0', LOG_LEVEL: logLevel, ...env }),
    );
    const base = (await taskgate.waitForLog((line) => line.msg === 'taskgate started')).url as string;
    return { server, taskgate, base };
  } catch (error) {
    server.destroy();
    throw error;
  }
}

/** Kills the CLI (nothing it does after matters) and removes the cluster. */
export function stopCliOnOwnPostgres(running: CliOnOwnPostgres | undefined): void {
  running?.taskgate.child.kill('SIGKILL');
  running?.server.destroy();
}
