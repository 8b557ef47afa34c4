// tools/call of greet over HTTP, closed loop, 32 connections for 10 s: calls/s, p50 and p99.
// Taskgate's durable path (every call a task row, run by the worker) next to the official SDK v1
// server (stateless Streamable HTTP, a transport per request), driven by the same load generator in
// the same run. The load generator is a process of its own (bench/support/http-load.ts); the
// servers run in this one (Taskgate's API and worker together, as `taskgate start` runs them).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- mcp-throughput
import type { AddressInfo } from 'node:net';
import { defineTool } from '@taskgate/sdk';
import { z } from 'zod';
import { startApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { greetCall, type LoadRequest, type LoadResult, loadFromChild } from './support/http-load.ts';
import { aheadOfAnchor, atLeast, figure, printTable, reportGoals } from './support/report.ts';
import { startSdkAnchor } from './support/sdk-anchor.ts';

const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const SECONDS = Number(process.env.SECONDS ?? 10);
const rows: Record<string, string | number>[] = [];

const database = await benchDatabase();
try {
  // The same greeting as the built-in greet, declared inline: it runs in the API process, no task row.
  const greetInline = defineTool<{ name: string }>({
    name: 'greet_inline',
    description: 'greet, inline',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    retry: 'safe',
    inline: true,
    async handler({ name }) {
      return { content: [{ type: 'text', text: `Hello, ${name}!` }] };
    },
  });
  const platform = await startPlatform(database.url, { tools: [greetInline] as never });
  await platform.startWorker({ concurrency: 32 });
  const api = await startApi(platform, database.url);
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const ours = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const inline = greetCall('greet_inline');
  await load(ours, inline, 2); // warm-up
  rows.push(row('taskgate /mcp, inline (safe tool, API process, no task row)', await load(ours, inline, SECONDS)));
  const durable = greetCall('greet');
  await load(ours, durable, 2);
  // First on the brand-new database (no statistics yet, as in a deployment's first minute), then
  // after the ANALYZE autovacuum would have run by then (see BenchDatabase.analyze).
  rows.push(row('taskgate /mcp, durable, new database (no statistics yet)', await load(ours, durable, SECONDS)));
  await database.analyze();
  await load(ours, durable, 2);
  rows.push(row('taskgate /mcp, durable (a task row per call, run by the worker)', await load(ours, durable, SECONDS)));
  await api.close();
  await platform.stop();

  const anchor = await startSdkAnchor(
    (mcp) =>
      mcp.registerTool('greet', { inputSchema: { name: z.string() } }, async ({ name }) => ({
        content: [{ type: 'text', text: `Hello, ${name}!` }],
      })),
    { json: true },
  );
  const anchorUrl = anchor.url;
  const legacy: LoadRequest = {
    expect: 'Hello',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: '{{id}}',
      method: 'tools/call',
      params: { name: 'greet', arguments: { name: 'bench' } },
    }),
  };
  await load(anchorUrl, legacy, 2);
  rows.push(row('SDK v1 stateless server (in-process handler, no durability)', await load(anchorUrl, legacy, SECONDS)));
  anchor.close();
} finally {
  await database.drop();
}
printTable(`tools/call greet over HTTP, ${CONNECTIONS} connections, ${SECONDS} s`, rows);
{
  const sdk = { label: 'SDK v1 stateless server', value: figure(rows, 'SDK v1', 'calls/s') };
  reportGoals({ CONNECTIONS, SECONDS }, [
    {
      metric: 'MCP tools/call inline',
      unit: 'calls/s',
      rule: aheadOfAnchor(),
      ours: figure(rows, 'taskgate /mcp, inline', 'calls/s'),
      anchor: sdk,
    },
    {
      metric: 'MCP tools/call durable (after ANALYZE)',
      unit: 'calls/s',
      rule: atLeast(1_000),
      ours: figure(rows, 'taskgate /mcp, durable (', 'calls/s'),
      anchor: sdk,
    },
  ]);
}
process.exit(0);

/** Drives `origin` from a separate process, CONNECTIONS connections for `seconds`. */
function load(origin: string, request: LoadRequest, seconds: number): Promise<LoadResult> {
  return loadFromChild(origin, request, { connections: CONNECTIONS, seconds });
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
