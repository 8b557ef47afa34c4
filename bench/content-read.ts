// resources/read over HTTP /mcp, closed loop, SECONDS each: p50 and p99 at 1 connection and at
// CONNECTIONS. A module's resource read where the API loaded the module (in the request, no task
// row), and read through the catalog by an API that did not (a platform task a worker runs: the
// queue hop a split deployment pays), next to the durable tools/call of greet on the same worker
// (the same hop, for a tool) and the official SDK v1 server reading the same resource (stateless
// Streamable HTTP, a server and transport per request), driven by the same load generator in the
// same run. The load generator is a process of its own (bench/support/http-load.ts).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- content-read
import type { AddressInfo } from 'node:net';
import { CatalogView } from '@taskgate/db';
import { defineResource } from '@taskgate/sdk';
import { type AnyTool, CatalogTools, contentTool, ToolRegistry } from '@taskgate/tools';
import { silentLogger, startApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { greetCall, type LoadRequest, type LoadResult, loadFromChild } from './support/http-load.ts';
import { below, figure, printTable, reportGoals } from './support/report.ts';
import { startSdkAnchor } from './support/sdk-anchor.ts';

const CONNECTIONS = Number(process.env.CONNECTIONS ?? 8);
const SECONDS = Number(process.env.SECONDS ?? 5);
const rows: Record<string, string | number>[] = [];
const TEXT = 'The readme of the bench module: a few hundred bytes of text. '.repeat(6);
const readme = defineResource({
  uri: 'docs://readme',
  name: 'readme',
  mimeType: 'text/plain',
  read: () => [{ text: TEXT }],
});

const readRequest = (legacy: boolean): LoadRequest => ({
  expect: 'bench module',
  headers: legacy
    ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    : {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'resources/read',
        'mcp-name': 'docs://readme',
      },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: '{{id}}',
    method: 'resources/read',
    params: legacy
      ? { uri: 'docs://readme' }
      : {
          uri: 'docs://readme',
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
  }),
});

const database = await benchDatabase();
try {
  const platform = await startPlatform(database.url);
  // One worker serves greet and the module's content tool, as `taskgate start --role worker` would.
  const served = contentTool('bench-docs', { resources: [readme] }) as AnyTool;
  await platform.startWorker({
    tools: new ToolRegistry([...(platform.tools.list() as AnyTool[]), served]),
    concurrency: 32,
  });
  const view = new CatalogView({
    db: platform.db,
    pollIntervalMs: 1_000,
    listen: { connectionString: database.url, applicationName: 'bench-content-read' },
    logger: silentLogger,
  });
  await view.start();
  const catalog = new CatalogTools(view, { logger: silentLogger });
  const remote = await listen(await startApi(platform, database.url, { tools: catalog }));
  const local = await listen(await startApi(platform, database.url, { content: [{ resources: [readme] }] }));
  await database.analyze();

  for (const connections of [1, CONNECTIONS]) {
    await load(local.origin, readRequest(false), connections, 2);
    rows.push(
      row(
        `taskgate, module loaded by the API (in the request), ${connections} conn.`,
        await load(local.origin, readRequest(false), connections),
      ),
    );
  }
  for (const connections of [1, CONNECTIONS]) {
    await load(remote.origin, readRequest(false), connections, 2);
    rows.push(
      row(
        `taskgate, through the catalog (a worker reads), ${connections} conn.`,
        await load(remote.origin, readRequest(false), connections),
      ),
    );
  }
  await load(remote.origin, greetCall('greet'), 1, 2);
  rows.push(
    row(
      'taskgate, durable tools/call greet (the same hop, for a tool), 1 conn.',
      await load(remote.origin, greetCall('greet'), 1),
    ),
  );
  await remote.close();
  await local.close();
  catalog.close();
  await view.stop();
  await platform.stop();

  const anchor = await startSdkAnchor(
    (mcp) =>
      mcp.registerResource('readme', 'docs://readme', { mimeType: 'text/plain' }, async (uri) => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: TEXT }],
      })),
    { json: true },
  );
  for (const connections of [1, CONNECTIONS]) {
    await load(anchor.url, readRequest(true), connections, 2);
    rows.push(
      row(`SDK v1 stateless server, ${connections} conn.`, await load(anchor.url, readRequest(true), connections)),
    );
  }
  anchor.close();
} finally {
  await database.drop();
}
printTable(`resources/read over HTTP, closed loop, ${SECONDS} s each`, rows);
reportGoals({ CONNECTIONS, SECONDS }, [
  {
    metric: 'MCP resources/read p99 through the catalog (a worker reads), 1 connection',
    unit: 'ms',
    rule: below(100),
    ours: figure(rows, 'taskgate, through the catalog (a worker reads), 1 conn.', 'p99 ms'),
    anchor: { label: 'SDK v1 stateless server', value: figure(rows, 'SDK v1 stateless server, 1 conn.', 'p99 ms') },
  },
  {
    metric: 'MCP resources/read p99, module loaded by the API, 1 connection',
    unit: 'ms',
    rule: below(5),
    ours: figure(rows, 'taskgate, module loaded by the API (in the request), 1 conn.', 'p99 ms'),
    anchor: { label: 'SDK v1 stateless server', value: figure(rows, 'SDK v1 stateless server, 1 conn.', 'p99 ms') },
  },
]);
process.exit(0);

async function listen(api: Awaited<ReturnType<typeof startApi>>) {
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  return { origin: `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`, close: api.close };
}

function load(origin: string, request: LoadRequest, connections: number, seconds = SECONDS): Promise<LoadResult> {
  return loadFromChild(origin, request, { connections, seconds });
}

function row(path: string, result: LoadResult) {
  return {
    path,
    'calls/s': result.calls / result.seconds,
    errors: result.errors,
    'p50 ms': result.p50,
    'p99 ms': result.p99,
  };
}
