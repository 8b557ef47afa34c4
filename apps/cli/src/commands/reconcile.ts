import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import type { Command } from '../command.ts';
import { commandLogger } from '../command-support.ts';
import { serverUrls } from '../server-target.ts';

const FLAGS = {
  state: { type: 'string' },
  tenant: { type: 'string' },
  limit: { type: 'string' },
  before: { type: 'string' },
  json: { type: 'boolean' },
  note: { type: 'string' },
  by: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
} as const;

export const reconcile: Command = {
  name: 'reconcile',
  synopsis: 'reconcile list|show|resolve [options]',
  usage: `  reconcile list [--state open|resolved|all] [--tenant ID] [--limit N] [--before ID] [--json]
                              the calls that left something to decide: unknown outcomes and
                              work abandoned after an irreversible step; newest first, open
                              ones by default; the last line names the --before of the next page
  reconcile … --url URL [--token TOKEN]
                              through a server's /v1/reconciliation-items (TASKGATE_URL,
                              TASKGATE_TOKEN; the token's tenant, scope taskgate:admin); without
                              a URL, every tenant's (or --tenant's) from DATABASE_URL
  reconcile show ID [--json]  one item, with what was known when it opened (ending, last
                              progress, steps and the irreversible steps' results)
  reconcile resolve ID --note TEXT [--by NAME]
                              close an item with what was found and done (--by defaults to
                              the operating-system user)`,
  async run(argv, { io, loadConfig }) {
    const { values, positionals } = parseCommandArgs('reconcile', argv, FLAGS, true);
    // The parse checks item ids by @taskgate/db's rule, so it loads with the run, after the flags.
    const { parseReconcileArgs, runReconcile } = await import('../run/reconcile.ts');
    const args = parseReconcileArgs(values, positionals);
    const given = values.url ?? io.env.TASKGATE_URL;
    const url = given === undefined ? undefined : serverUrls(given).base;
    const token = values.token ?? io.env.TASKGATE_TOKEN;
    if (url !== undefined && values.tenant !== undefined) {
      throw new TaskgateError(
        'TG_USAGE',
        "--tenant reads the database; through --url the token's tenant is the one shown (unset TASKGATE_URL to read the database)",
      );
    }
    if (url === undefined && values.token !== undefined) {
      throw new TaskgateError('TG_USAGE', '--token goes with --url: without one, reconcile reads the database');
    }
    const { config, warnings } = loadConfig(['TASKGATE_URL', 'TASKGATE_TOKEN']);
    const logger = await commandLogger(config, warnings);
    const { asCliError } = await import('../run/tasks.ts');
    return await runReconcile(args, url === undefined ? null : { url, ...(token ? { token } : {}) }, config, logger, {
      write: io.stdout,
      note: io.stderr,
    }).catch((error: unknown) => {
      throw asCliError(error);
    });
  },
};
