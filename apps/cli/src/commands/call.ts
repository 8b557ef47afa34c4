import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import { CALL_FLAGS, clientTarget } from '../client-args.ts';
import type { Command } from '../command.ts';
import { DEFAULT_SERVER_URL, splitServerCommand } from '../server-target.ts';

export const call: Command = {
  name: 'call',
  synopsis: 'call TOOL [options]',
  usage: `  call TOOL [--arg KEY=VALUE]... [--json '{...}'] [--url URL] [--token TOKEN] [-- COMMAND...]
                              call a tool over MCP (TASKGATE_URL, default
                              ${DEFAULT_SERVER_URL}; TASKGATE_TOKEN), or on the stdio of the
                              server COMMAND starts (-- npx taskgate mcp-stdio): progress on one line;
                              Ctrl-C cancels and waits for the task to end, Ctrl-C again leaves
                              it running. A value is JSON unless the tool's schema says string;
                              the result's text on a terminal, its JSON otherwise`,
  async run(argv, { io }) {
    const { own, server } = splitServerCommand(argv);
    const { values, positionals } = parseCommandArgs('call', own, CALL_FLAGS, true);
    const { target } = clientTarget('call', values, positionals, server, io);
    const [tool, ...extra] = positionals;
    if (tool === undefined)
      throw new TaskgateError('TG_USAGE', 'call needs the name of a tool; run taskgate call --help');
    if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
    const { runCall } = await import('../run/call.ts');
    const { asCliError } = await import('../run/tasks.ts');
    return await runCall(
      {
        tool,
        pairs: values.arg ?? [],
        ...(typeof values.json === 'string' ? { json: values.json } : {}),
        target,
      },
      {
        stdout: io.stdout,
        stderr: io.stderr,
        terminal: process.stderr.isTTY === true,
        stdoutTerminal: process.stdout.isTTY === true,
        draw: (text) => process.stderr.write(text),
        onInterrupt: (listener) => {
          process.on('SIGINT', listener);
          return () => process.off('SIGINT', listener);
        },
      },
    ).catch((error: unknown) => {
      throw asCliError(error);
    });
  },
};
