import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import type { Command } from '../command.ts';
import { commandLogger, toolsOption } from '../command-support.ts';

const FLAGS = {
  to: { type: 'string' },
  all: { type: 'boolean' },
  json: { type: 'boolean' },
  tools: { type: 'string', multiple: true },
  module: { type: 'string' },
} as const;

export const migrate: Command = {
  name: 'migrate',
  synopsis: 'migrate up|down|status|plan [options]',
  usage: `  migrate up [--to N]         apply pending migrations and install/upgrade pg-boss's schema,
                              then each tool module's (once Taskgate's are all applied)
  migrate down [--to N|--all] revert Taskgate's newest migration, those above N, or all of
                              them (a tool module's tables may depend on Taskgate's: revert
                              the module first, with down --module NAME --all); pg-boss's
                              schema "pgboss" and its jobs stay (DROP SCHEMA pgboss CASCADE)
  migrate down --module NAME [--to N|--all]
                              the same for the migrations of tool module NAME
  migrate status [--json]     list every migration, Taskgate's and each tool module's, as
                              applied, pending, edited, unknown, or unloaded (its module is
                              not loaded now: left alone)
  migrate plan [--to N]       print the SQL that 'up' would run, without running it: only
                              SQL on stdout (the database it was read from on stderr)
  migrate … --tools SPEC      tool modules whose migrations to include: a path (./tools.ts)
                              or a package name, repeatable or comma-separated (default:
                              TASKGATE_TOOLS, else, in a checkout, the demo modules; an
                              installed CLI includes none)`,
  async run(argv, { io, loadConfig }) {
    const args = parseMigrateArgs(argv);
    const { config, warnings } = loadConfig();
    const logger = await commandLogger(config, warnings);
    const { runMigrate } = await import('../run/migrate.ts');
    return await runMigrate({ ...args, cwd: io.cwd }, config, logger, { write: io.stdout, note: io.stderr });
  },
};

function parseMigrateArgs(argv: readonly string[]) {
  const { values, positionals } = parseCommandArgs('migrate', argv, FLAGS, true);
  const [action, ...extra] = positionals;
  if (action !== 'up' && action !== 'down' && action !== 'status' && action !== 'plan') {
    throw new TaskgateError('TG_USAGE', 'migrate takes one of up, down, status, plan; run taskgate migrate --help');
  }
  if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
  let to: number | undefined;
  if (values.to !== undefined) {
    if (!/^\d+$/.test(values.to))
      throw new TaskgateError('TG_USAGE', `--to takes a migration version number (got ${JSON.stringify(values.to)})`);
    to = Number(values.to);
  }
  if (values.all && action !== 'down') throw new TaskgateError('TG_USAGE', '--all only applies to migrate down');
  if (values.json && action !== 'status') throw new TaskgateError('TG_USAGE', '--json only applies to migrate status');
  if (values.module !== undefined && action !== 'down')
    throw new TaskgateError('TG_USAGE', '--module only applies to migrate down');
  if (values.module === '') throw new TaskgateError('TG_USAGE', '--module takes the name of a tool module');
  const tools = toolsOption(values.tools);
  return { action, to, all: values.all === true, json: values.json === true, tools, module: values.module } as const;
}
