import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, REPO_ROOT } from '../support/cli.ts';

// `taskgate --help` and the REST commands start in well under half a second because they load
// nothing but the CLI's own small modules: the MCP SDKs (zod, ajv and some 300 modules with them),
// Fastify, pg and pino load only for the commands that use them. `tasks list` once imported the
// @taskgate/client index for its RestClient and paid for both SDKs on every run
// (bench/cli-start.ts measures the times). This lists every module a command loads, in the
// project's Node, with a load hook, and refuses any from node_modules.
const PROJECT_NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');

const HOOK = `
import { registerHooks } from 'node:module';
registerHooks({
  load(url, context, next) {
    process.stderr.write('loaded ' + url + '\\n');
    return next(url, context);
  },
});
`;

/** A port nothing listens on: the REST commands fail to connect, after loading all they load to ask. */
let closedPort: number;
beforeAll(async () => {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closedPort = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
});

function modulesLoadedBy(args: readonly string[]): string[] {
  const run = spawnSync(PROJECT_NODE, ['--import', `data:text/javascript,${encodeURIComponent(HOOK)}`, CLI, ...args], {
    cwd: REPO_ROOT,
    env: cleanEnv({ NODE_DISABLE_COMPILE_CACHE: '1' }),
    encoding: 'utf8',
    timeout: 30_000,
  });
  const loaded = run.stderr
    .split('\n')
    .filter((line) => line.startsWith('loaded '))
    .map((line) => line.slice('loaded '.length));
  // --help answers; a REST command gets as far as asking (and is told nobody listens: exit 69).
  expect(run.status, run.stderr.slice(-2000)).toBe(args[0] === '--help' ? 0 : 69);
  return loaded.filter((url) => url.startsWith('file:'));
}

describe('what a short command loads', () => {
  it('loads no third-party module for --help, tasks list or tools list', () => {
    const url = `http://127.0.0.1:${closedPort}/mcp`;
    const commands = [
      { args: ['--help'], own: 'apps/cli/src/main.ts' },
      { args: ['tasks', 'list', '--url', url], own: 'apps/cli/src/run/tasks.ts' },
      { args: ['tools', 'list', '--url', url], own: 'apps/cli/src/run/tools.ts' },
    ];
    for (const { args, own } of commands) {
      const loaded = modulesLoadedBy(args);
      expect(
        loaded.some((file) => file.endsWith(own)),
        `${args.join(' ')} loads ${own}`,
      ).toBe(true);
      expect(
        loaded.filter((file) => file.includes('/node_modules/')),
        args.join(' '),
      ).toEqual([]);
    }
  });
});
