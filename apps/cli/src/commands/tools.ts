import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import type { Command } from '../command.ts';
import { stdoutTerminal } from '../command-support.ts';
import { DEFAULT_SERVER_URL, serverUrls } from '../server-target.ts';

const FLAGS = { json: { type: 'boolean' }, url: { type: 'string' }, token: { type: 'string' } } as const;

export const tools: Command = {
  name: 'tools',
  synopsis: 'tools list [options]',
  usage: `  tools list [--json] [--url URL] [--token TOKEN]
                              the tools the server offers, what its workers publish (GET
                              /v1/tools): a table on a terminal, JSON on a pipe or with --json`,
  async run(argv, { io }) {
    const { values, positionals } = parseCommandArgs('tools', argv, FLAGS, true);
    const [action, ...extra] = positionals;
    if (action !== 'list' || extra.length > 0) {
      throw new TaskgateError('TG_USAGE', 'tools takes list; run taskgate tools --help');
    }
    const url = serverUrls(values.url ?? io.env.TASKGATE_URL ?? DEFAULT_SERVER_URL).base;
    const token = values.token ?? io.env.TASKGATE_TOKEN;
    const { runToolsList } = await import('../run/tools.ts');
    return await runToolsList(
      { url, ...(token ? { token } : {}), json: values.json === true },
      io.stdout,
      stdoutTerminal(),
    );
  },
};
