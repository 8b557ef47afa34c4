import type { TaskgateClient } from '@taskgate/client';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import { DEFAULTS } from './settings.ts';
import { printable } from './terminal-text.ts';

/** The server a client command reaches when neither --url nor TASKGATE_URL names one: start's default address. */
export const DEFAULT_SERVER_URL = `http://${DEFAULTS.host}:${DEFAULTS.port}`;

/** A Taskgate server's two entry points, from one URL. */
export interface ServerUrls {
  /** Where /v1 (REST) and /ui live: http://host:port, with a path prefix behind a proxy. */
  readonly base: string;
  /** The MCP endpoint, base + /mcp. */
  readonly mcp: string;
}

/**
 * --url (or TASKGATE_URL) as every command takes it: the server's base URL, or its /mcp URL, which
 * names the same server (a URL an MCP client's configuration holds works as given).
 */
export function serverUrls(given: string): ServerUrls {
  if (!/^https?:\/\//.test(given)) {
    throw new TaskgateError('TG_USAGE', `--url takes an http(s) URL of the server (got ${JSON.stringify(given)})`);
  }
  const base = given.replace(/\/+$/, '').replace(/\/mcp$/, '');
  return { base, mcp: `${base}/mcp` };
}

/**
 * The MCP server a `call` or `tasks` command talks to: a URL (Streamable HTTP), or a command the
 * CLI starts and speaks to on its stdin and stdout, as an MCP client that launches its server
 * does (`taskgate call greet -- npx taskgate mcp-stdio`).
 */
export type ServerTarget =
  | { readonly kind: 'http'; readonly url: string; readonly token?: string }
  | {
      readonly kind: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      /** The child's environment: the CLI's own, as a shell would pass it. */
      readonly env: Readonly<Record<string, string>>;
    };

/**
 * `argv` split at its first `--`: the command's own options before it, the stdio server's
 * command line after it (null when there is none).
 */
export function splitServerCommand(argv: readonly string[]): {
  readonly own: readonly string[];
  readonly server: readonly string[] | null;
} {
  const dash = argv.indexOf('--');
  if (dash === -1) return { own: argv, server: null };
  const server = argv.slice(dash + 1);
  if (server.length === 0) {
    throw new TaskgateError(
      'TG_USAGE',
      '-- takes the command of an MCP server to start on stdio, e.g. -- npx taskgate mcp-stdio',
    );
  }
  return { own: argv.slice(0, dash), server };
}

/** The errors a stdio server's end explains. */
const SERVER_ENDINGS: ReadonlySet<string> = new Set(['TG_SERVER_UNREACHABLE', 'TG_CALL_OUTCOME_UNKNOWN']);

/** The lines of a stdio server's stderr kept for an error message: its last words, not a log. */
const KEPT_LINES = 20;
const KEPT_CHARACTERS = 4_000;

/**
 * A client on the target. A stdio server's stderr is kept, not shown (its logs would tear the
 * progress line), and its last lines are told when it fails to start or the call fails.
 */
export async function connectTarget(
  target: ServerTarget,
): Promise<{ client: TaskgateClient; explain: (error: unknown) => unknown }> {
  const { TaskgateClient } = await import('@taskgate/client');
  if (target.kind === 'http') {
    const client = await TaskgateClient.connectHttp({
      url: target.url,
      ...(target.token ? { token: target.token } : {}),
    });
    return { client, explain: (error) => error };
  }
  let tail = '';
  const keep = (text: string) => {
    tail = (tail + text)
      .slice(-KEPT_CHARACTERS)
      .split('\n')
      .slice(-KEPT_LINES - 1)
      .join('\n');
  };
  const named = [target.command, ...target.args].join(' ');
  // Only where the server's end is the story: it would not start, or it went away mid-call.
  const explain = (error: unknown) => {
    const said = tail.trim();
    if (said === '' || !isTaskgateError(error) || !SERVER_ENDINGS.has(error.code)) return error;
    // What a child wrote is shown with its control characters escaped (colours, a title).
    const lines = said.split('\n').map((line) => `  ${printable(line)}`);
    return new TaskgateError(
      error.code,
      `${error.message}\nthe stdio server's last words on stderr:\n${lines.join('\n')}`,
      {
        cause: error,
        details: error.details,
      },
    );
  };
  try {
    const client = await TaskgateClient.connectStdio(
      { command: target.command, args: target.args, env: target.env, stderr: keep },
      { connectTimeoutMs: 30_000 },
    );
    return { client, explain };
  } catch (error) {
    throw explain(
      isTaskgateError(error)
        ? error
        : new TaskgateError(
            'TG_SERVER_UNREACHABLE',
            `could not start the stdio server ${JSON.stringify(named)}: ${(error as Error).message}`,
            {
              cause: error,
            },
          ),
    );
  }
}
