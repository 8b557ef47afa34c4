import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import type { Command } from '../command.ts';
import { DEFAULT_SERVER_URL, serverUrls } from '../server-target.ts';

const FLAGS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  'keepalive-wait': { type: 'string' },
} as const;

export const review: Command = {
  name: 'review',
  synopsis: 'review [options]',
  usage: `  review [--url URL] [--token TOKEN] [--json] [--keepalive-wait MS]
                              the reliability review of a live server: the race table per
                              transport, each tool's retry class, idempotency key and clocks, a
                              stream's SSE headers and keepalive, the buffer policy and the
                              reconnect plan; exits 1 on a finding (a mutation without a key, a
                              tool without a max clock, a stream header missing)`,
  async run(argv, { io }) {
    const { values } = parseCommandArgs('review', argv, FLAGS, false);
    const { mcp } = serverUrls(values.url ?? io.env.TASKGATE_URL ?? DEFAULT_SERVER_URL);
    const wait = values['keepalive-wait'] ?? '20000';
    if (!/^\d{1,6}$/.test(wait))
      throw new TaskgateError('TG_USAGE', `--keepalive-wait takes milliseconds (got ${JSON.stringify(wait)})`);
    const token = values.token ?? io.env.TASKGATE_TOKEN;
    const { runReview } = await import('../run/review.ts');
    const { asCliError } = await import('../run/tasks.ts');
    return await runReview(
      { url: mcp, ...(token ? { token } : {}), json: values.json === true, keepaliveWaitMs: Number(wait) },
      { stdout: io.stdout, stderr: io.stderr },
    ).catch((error: unknown) => {
      throw asCliError(error);
    });
  },
};
