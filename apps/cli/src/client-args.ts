import { TaskgateError } from '@taskgate/errors';
import type { Io } from './command.ts';
import { DEFAULT_SERVER_URL, type ServerTarget, serverUrls } from './server-target.ts';

const SHARED_FLAGS = {
  arg: { type: 'string', multiple: true },
  url: { type: 'string' },
  token: { type: 'string' },
  status: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
} as const;

/**
 * The flags call, tasks and keys share. Each takes them all, so that one a command does not use
 * is answered with what it is for (`--status … only apply to taskgate tasks list`) rather than
 * as unknown. `call --json` takes the arguments as JSON; elsewhere it is a switch.
 */
export const CALL_FLAGS = { ...SHARED_FLAGS, json: { type: 'string' } } as const;
export const CLIENT_FLAGS = { ...SHARED_FLAGS, json: { type: 'boolean' } } as const;

interface ClientValues {
  readonly url?: string | undefined;
  readonly token?: string | undefined;
  readonly status?: string | undefined;
  readonly limit?: string | undefined;
  readonly cursor?: string | undefined;
}

/**
 * The server `call`, `tasks` or `keys` reaches, from its parsed flags and the command after its
 * `--` (splitServerCommand), with the checks the three share.
 */
export function clientTarget(
  command: 'call' | 'tasks' | 'keys',
  values: ClientValues,
  positionals: readonly string[],
  serverCommand: readonly string[] | null,
  io: Io,
) {
  const listOnly = values.status !== undefined || values.limit !== undefined || values.cursor !== undefined;
  if (command !== 'tasks' && listOnly) {
    throw new TaskgateError('TG_USAGE', '--status, --limit and --cursor only apply to taskgate tasks list');
  }
  const urls = serverUrls(values.url ?? io.env.TASKGATE_URL ?? DEFAULT_SERVER_URL);
  const token = values.token ?? io.env.TASKGATE_TOKEN;
  if (serverCommand !== null && (values.url !== undefined || values.token !== undefined)) {
    throw new TaskgateError(
      'TG_USAGE',
      '--url and --token reach a server over HTTP; -- COMMAND starts one on stdio: one or the other',
    );
  }
  const [command0, ...commandArgs] = serverCommand ?? [];
  const target: ServerTarget =
    command0 === undefined
      ? { kind: 'http', url: urls.mcp, ...(token ? { token } : {}) }
      : { kind: 'stdio', command: command0, args: commandArgs, env: stringsOf(io.env) };
  const restOnly = command === 'keys' || positionals[0] === 'list';
  if (serverCommand !== null && restOnly) {
    throw new TaskgateError(
      'TG_USAGE',
      `-- COMMAND applies to call and tasks get|cancel|watch: ${command === 'keys' ? 'keys get' : 'tasks list'} reads the REST API (--url)`,
    );
  }
  // The REST commands (keys get, tasks list) read /v1 at the base URL.
  return { listOnly, target, url: urls.base, ...(token ? { token } : {}) };
}

/** The environment a started stdio server inherits: this process's, its unset names left out. */
function stringsOf(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}
