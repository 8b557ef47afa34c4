import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

// mcp-stdio answers `initialize` from a small front (apps/api/src/mcp/transports/stream/stdio-front.ts) while the
// rest loads, because clients give a stdio server about a second. That holds only while what
// apps/cli/src/main.ts loads before the front stays small: one value imported from
// '@taskgate/api' instead of a light subpath once made the first answer wait for Fastify and the
// whole API (bench/stdio-first-answer.ts: p99 50 ms → 381 ms). This lists every module that
// loading main.ts and the front resolves, in the project's Node, with a resolve hook.
const PROJECT_NODE = path.join(REPO_ROOT, 'node_modules/.bin/node');

const HOOK = `
import { registerHooks } from 'node:module';
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    process.stderr.write('resolved ' + result.url + '\\n');
    return result;
  },
});
`;

function modulesLoadedBeforeTheFront(): string[] {
  const main = pathToFileURL(path.join(REPO_ROOT, 'apps/cli/src/main.ts')).href;
  const script = `await import(${JSON.stringify(main)}); await import('@taskgate/api/stdio-front');`;
  const run = spawnSync(
    PROJECT_NODE,
    ['--import', `data:text/javascript,${encodeURIComponent(HOOK)}`, '--input-type=module', '-e', script],
    // From apps/cli, whose node_modules has the workspace packages main.ts imports.
    { cwd: path.join(REPO_ROOT, 'apps/cli'), encoding: 'utf8', timeout: 30_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  return run.stderr
    .split('\n')
    .filter((line) => line.startsWith('resolved '))
    .map((line) => line.slice('resolved '.length));
}

it('loads neither Fastify, pg, pg-boss nor the API before the stdio front answers', () => {
  const urls = modulesLoadedBeforeTheFront();
  // The check sees the front itself, or it checks nothing.
  expect(urls.some((url) => url.endsWith('/apps/api/src/mcp/transports/stream/stdio-front.ts'))).toBe(true);
  const heavy = urls.filter(
    (url) =>
      /\/node_modules\/(fastify|pg|pg-boss|kysely|jose|@modelcontextprotocol)\//.test(url) ||
      url.endsWith('/apps/api/src/index.ts'),
  );
  expect(heavy).toEqual([]);
});
