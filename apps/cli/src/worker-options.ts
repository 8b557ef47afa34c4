import type { ToolRegistry } from '@taskgate/tools';
import type { WorkerRoleOptions } from '@taskgate/worker';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './database.ts';
import type { Logger } from './logger.ts';

/** The worker role as configured, for every command that runs tool handlers in its process. */
export function workerOptions(
  config: Config,
  database: DatabaseHandle,
  tools: ToolRegistry,
  logger: Logger,
): WorkerRoleOptions {
  return {
    connectionString: database.connectionString,
    logger: logger.child({ role: 'worker' }),
    tools,
    graceMs: config.shutdownGraceMs,
    // NOTIFY crosses connections on a real Postgres only; embedded, everything polls (faster).
    listenNotify: database.kind === 'external',
    concurrency: config.workerConcurrency,
    toolConcurrency: config.toolConcurrency,
    outboxRetentionMs: config.outboxRetentionMs,
    sweeper: { maxQueueMs: config.maxQueueMs },
  };
}
