import path from 'node:path';
import { TaskgateError } from '@taskgate/errors';
import { parseConfig, type Variables } from './config-parse.ts';
import type { Config } from './config-types.ts';

export { isLoopbackHost, splitList } from './config-fields.ts';
export { type ParsedConfig, parseConfig, type Variables } from './config-parse.ts';
export type { Config, ConfigProblem, RelayConfig } from './config-types.ts';
export { DEFAULT_TENANT, DEFAULTS, LOG_LEVELS, type LogLevel, NO_TOOLS, SETTINGS } from './settings.ts';

export interface LoadedConfig {
  readonly config: Config;
  /** Not errors, but worth a log line (an unknown TASKGATE_* variable is usually a typo). */
  readonly warnings: readonly string[];
}

/**
 * The configuration of a process from its environment and working directory: parseConfig's, with
 * its paths resolved against `cwd`, or TG_CONFIG_INVALID naming every problem in one line that
 * never contains a secret (tokens, passwords).
 */
export function loadConfig(env: Variables, cwd: string, readsAlso: readonly string[] = []): LoadedConfig {
  const parsed = parseConfig(env, readsAlso);
  if (!parsed.ok) {
    throw new TaskgateError(
      'TG_CONFIG_INVALID',
      `invalid configuration: ${parsed.problems.map((p) => `${p.field} ${p.message}`).join('; ')}`,
      { details: { problems: parsed.problems } },
    );
  }
  const { config, warnings } = parsed;
  return {
    config: {
      ...config,
      dataDir: path.resolve(cwd, config.dataDir),
      gatewaysFile: config.gatewaysFile === null ? null : path.resolve(cwd, config.gatewaysFile),
    },
    warnings,
  };
}

/** The server's clock ceilings as the task services take them. */
export function clockCaps(config: Config): { maxMs: number; idleMs?: number } {
  return { maxMs: config.maxCallMs, ...(config.maxIdleMs === null ? {} : { idleMs: config.maxIdleMs }) };
}
