import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import { CLIENT_FLAGS, clientTarget } from '../client-args.ts';
import type { Command } from '../command.ts';
import { splitServerCommand } from '../server-target.ts';

export const keys: Command = {
  name: 'keys',
  synopsis: 'keys get KEY [options]',
  usage: `  keys get KEY [--json] [--url URL] [--token TOKEN]
                              the ledger's record of an idempotency key: did the call commit, and
                              with what result (GET /v1/idempotency-keys/KEY)`,
  async run(argv, { io }) {
    const { own, server } = splitServerCommand(argv);
    const { values, positionals } = parseCommandArgs('keys', own, CLIENT_FLAGS, true);
    const { url, token } = clientTarget('keys', values, positionals, server, io);
    const { runKeysGet } = await import('../run/tasks.ts');
    if (values.arg !== undefined) throw new TaskgateError('TG_USAGE', '--arg only applies to taskgate call');
    const [action, key, ...extra] = positionals;
    if (action !== 'get' || key === undefined || extra.length > 0) {
      throw new TaskgateError('TG_USAGE', 'keys takes get KEY; run taskgate keys --help');
    }
    return await runKeysGet({ url, ...(token ? { token } : {}), key, json: values.json === true }, io.stdout);
  },
};
