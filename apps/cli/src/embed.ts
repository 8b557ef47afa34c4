import { TaskgateError } from '@taskgate/errors';
import { type LogLevel, loadConfig } from './config.ts';
import { Lifecycle, shutdownDeadlineMs } from './lifecycle.ts';
import { createLogger, type Logger } from './logger.ts';
import { ROLES, type Role } from './roles.ts';
import { bootTaskgate, finish } from './run/start.ts';

export interface StartTaskgateOptions {
  /** Tool modules: paths (relative to `cwd`) or package names; empty: TASKGATE_TOOLS, else the project's default modules. */
  readonly tools?: readonly string[];
  /** The roles to run in this process (default: api, worker and relay). */
  readonly roles?: readonly Role[];
  /** A Postgres URL; absent: DATABASE_URL of `env`, else the embedded Postgres in TASKGATE_DATA_DIR. */
  readonly databaseUrl?: string;
  readonly host?: string;
  /** The API's port; 0 picks a free one (the handle's url says which). Default: PORT of `env`, else the configuration's. */
  readonly port?: number;
  /**
   * The other settings, by the names of the configuration table (TASKGATE_TOKENS, ...). Nothing is
   * read from process.env unless it is passed here: an embedding service decides what Taskgate sees.
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where relative module paths and TASKGATE_DATA_DIR start (default: process.cwd()). */
  readonly cwd?: string;
  /** Apply pending migrations first (default true); false only checks that the schema is current. */
  readonly migrate?: boolean;
  /** A pino logger (default: JSON lines on stdout at LOG_LEVEL of `env`, else info). */
  readonly logger?: Logger;
}

export interface TaskgateHandle {
  /** The API's URL, or null without the api role. */
  readonly url: string | null;
  /** The names of the tool modules loaded. */
  readonly modules: readonly string[];
  /** Stops every role gracefully (in-flight work gets TASKGATE_SHUTDOWN_GRACE_MS); resolves once all stopped. */
  stop(): Promise<void>;
}

/**
 * Taskgate inside a Node service: the same start-up as `taskgate start` (modules, database,
 * migrations, roles), with no signal handlers — the host owns the process and calls stop(). A bad
 * module, a bad setting or an unreachable database rejects with the same coded error the CLI prints,
 * after stopping whatever had started.
 */
export async function startTaskgate(options: StartTaskgateOptions = {}): Promise<TaskgateHandle> {
  const env: Record<string, string | undefined> = { ...options.env };
  if (options.databaseUrl !== undefined) env.DATABASE_URL = options.databaseUrl;
  if (options.host !== undefined) env.HOST = options.host;
  if (options.port !== undefined) env.PORT = String(options.port);
  const cwd = options.cwd ?? process.cwd();
  const { config, warnings } = loadConfig(env, cwd);
  const logger = options.logger ?? createLogger(config.logLevel as LogLevel, 1, config.logFormat);
  for (const warning of warnings) logger.warn({}, warning);
  const roles = [...new Set(options.roles ?? ROLES)];
  const unknown = roles.filter((role) => !(ROLES as readonly string[]).includes(role));
  if (unknown.length > 0 || roles.length === 0) {
    throw new TaskgateError(
      'TG_USAGE',
      `roles must be some of ${ROLES.join(', ')} (got ${JSON.stringify(options.roles)})`,
    );
  }
  // A stuck stop must not end the host's process (the CLI exits then): it is logged, and stop() waits on.
  const lifecycle = new Lifecycle(logger, shutdownDeadlineMs(config), (() => undefined) as never);
  const booted = await bootTaskgate(
    { roles, migrate: options.migrate ?? true, tools: options.tools ?? [], cwd },
    config,
    logger,
    lifecycle,
  );
  if (booted === null) throw new TaskgateError('TG_STARTUP_FAILED', 'Taskgate was stopped while it started');
  let stopped: Promise<void> | null = null;
  return {
    url: booted.url,
    modules: booted.modules.map((module) => module.name),
    stop: () => {
      stopped ??= finish(lifecycle, logger).then(() => undefined);
      return stopped;
    },
  };
}
