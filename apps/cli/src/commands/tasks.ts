import { TaskgateError } from '@taskgate/errors';
import { parseCommandArgs } from '../arguments.ts';
import { CLIENT_FLAGS, clientTarget } from '../client-args.ts';
import type { Command } from '../command.ts';
import { stdoutTerminal } from '../command-support.ts';
import { splitServerCommand } from '../server-target.ts';

const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

export const tasks: Command = {
  name: 'tasks',
  synopsis: 'tasks get|cancel|watch|list [TASK_ID] [options]',
  usage: `  tasks get|cancel|watch TASK_ID [--json] [--url URL] [--token TOKEN] [-- COMMAND...]
                              a task (readable on a terminal: progress, times, result; JSON on
                              a pipe); cancel it (the acknowledgement, then the status it ends
                              in); or follow it until it ends
  tasks list [--status S] [--limit N] [--cursor C] [--json]
                              the newest tasks, as a table (GET /v1/tasks); the last line
                              names the --cursor of the next page`,
  async run(argv, { io }) {
    const { own, server } = splitServerCommand(argv);
    const { values, positionals } = parseCommandArgs('tasks', own, CLIENT_FLAGS, true);
    const { listOnly, target, url, token } = clientTarget('tasks', values, positionals, server, io);
    const { asCliError, runTasks, runTasksList } = await import('../run/tasks.ts');
    if (values.arg !== undefined) throw new TaskgateError('TG_USAGE', '--arg only applies to taskgate call');
    const json = values.json === true;
    const [action, taskId, ...extra] = positionals;
    if (action === 'list') {
      if (taskId !== undefined) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(taskId)}`);
      let limit: number | undefined;
      if (values.limit !== undefined) {
        if (!/^(?:[1-9][0-9]?|100)$/.test(values.limit))
          throw new TaskgateError(
            'TG_USAGE',
            `--limit takes a whole number from 1 to 100 (got ${JSON.stringify(values.limit)})`,
          );
        limit = Number(values.limit);
      }
      if (values.status !== undefined && !STATUSES.includes(values.status)) {
        throw new TaskgateError(
          'TG_USAGE',
          `--status takes one of ${STATUSES.join(', ')} (got ${JSON.stringify(values.status)})`,
        );
      }
      return await runTasksList(
        {
          url,
          ...(token ? { token } : {}),
          ...(values.status ? { status: values.status } : {}),
          ...(limit ? { limit } : {}),
          ...(values.cursor ? { cursor: values.cursor } : {}),
          json,
        },
        io.stdout,
        stdoutTerminal(),
      ).catch((error: unknown) => {
        throw asCliError(error);
      });
    }
    if (listOnly) {
      throw new TaskgateError('TG_USAGE', '--status, --limit and --cursor only apply to taskgate tasks list');
    }
    if (action !== 'get' && action !== 'cancel' && action !== 'watch') {
      throw new TaskgateError('TG_USAGE', 'tasks takes one of get, cancel, watch, list; run taskgate tasks --help');
    }
    if (taskId === undefined) throw new TaskgateError('TG_USAGE', `tasks ${action} needs a task id`);
    if (extra.length > 0) throw new TaskgateError('TG_USAGE', `unexpected argument ${JSON.stringify(extra[0])}`);
    return await runTasks({ action, taskId, target, json }, io.stdout, stdoutTerminal()).catch((error: unknown) => {
      throw asCliError(error);
    });
  },
};
