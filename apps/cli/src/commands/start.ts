import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import type { Command } from '../command.ts';
import { toolsOption, withTraces } from '../command-support.ts';
import { ROLES, type Role } from '../roles.ts';

const FLAGS = {
  role: { type: 'string' },
  'no-migrate': { type: 'boolean' },
  tools: { type: 'string', multiple: true },
} as const;

export const start: Command = {
  name: 'start',
  synopsis: 'start [options]',
  usage: `  start [--role api,worker,relay] [--no-migrate] [--tools MODULE[,MODULE]]
                              run migrations, then the chosen roles (default: all three),
                              serving the tools of the given modules (default: TASKGATE_TOOLS,
                              else, in a checkout, the demo modules under examples/; an
                              installed CLI loads none); --tools none loads no module: an API
                              that offers what the workers publish`,
  stopsOnSignals: true,
  async run(argv, { io, loadConfig }) {
    const args = { ...parseStartArgs(argv), cwd: io.cwd };
    const { config, warnings } = loadConfig();
    const { createLogger } = await import('../logger.ts');
    const logger = createLogger(config.logLevel, 1, config.logFormat);
    for (const warning of warnings) logger.warn({}, warning);
    // Loaded only now: usage and configuration errors answer without loading pg-boss, Fastify and PGlite.
    const { runStart } = await import('../run/start.ts');
    return await withTraces(config, () => runStart(args, config, logger));
  },
};

function parseStartArgs(argv: readonly string[]): { roles: Role[]; migrate: boolean; tools: string[] } {
  const { values } = parseCommandArgs('start', argv, FLAGS, false);
  const roles = values.role === undefined ? [...ROLES] : values.role.split(',').map((role) => role.trim());
  const unknown = roles.filter((role) => !(ROLES as readonly string[]).includes(role));
  if (unknown.length > 0 || roles.length === 0) {
    throw new TaskgateError(
      'TG_USAGE',
      `--role takes a comma list of ${ROLES.join(', ')} (got ${JSON.stringify(values.role)})`,
    );
  }
  return {
    roles: [...new Set(roles)] as Role[],
    migrate: values['no-migrate'] !== true,
    tools: toolsOption(values.tools),
  };
}
