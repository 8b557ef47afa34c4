// Stream close → cancellation: a client POSTs tools/call to /mcp and closes the response stream
// while the handler runs; measured from the close to the worker's ctx.signal aborting (p50/p99).
// Anchor, same run: the official SDK v1 stateless Streamable HTTP server serving the same tool, a
// transport per request closed on the response's 'close' (its documented stateless pattern): does
// the handler's signal abort when the client closes the stream, and how soon? Its handler runs in
// the HTTP process; Taskgate's runs in a worker, behind a durable task row and its cancel flag.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- mcp-stream-close
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineTool } from '@taskgate/sdk';
import { z } from 'zod';
import { startApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';
import { startSdkAnchor } from './support/sdk-anchor.ts';

const TOTAL = Number(process.env.TOTAL ?? 200);
const AT_ONCE = 8;
const ANCHOR_CALLS = 200;
const ANCHOR_WAIT_MS = 2_000;

const rows: Record<string, string | number>[] = [];
const database = await benchDatabase();
try {
  const started = new Map<number, () => void>();
  const aborted = new Map<number, () => void>();
  const abortedAt = new Map<number, number>();
  const spinner = defineTool<{ seq: number }>({
    name: 'spinner',
    description: 'runs until its signal aborts',
    inputSchema: { type: 'object', properties: { seq: { type: 'integer' } }, required: ['seq'] },
    retry: 'safe',
    async handler({ seq }, ctx) {
      await new Promise<void>((resolve) => {
        ctx.signal.addEventListener('abort', () => {
          abortedAt.set(seq, performance.now());
          aborted.get(seq)?.();
          resolve();
        });
        started.get(seq)?.();
      });
      return { content: [] };
    },
  });
  const platform = await startPlatform(database.url, { tools: [spinner] as never });
  await platform.startWorker({ concurrency: AT_ONCE });
  const api = await startApi(platform, database.url);
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const port = (api.app.server.address() as AddressInfo).port;

  const latencies: number[] = [];
  for (let batch = 0; batch < TOTAL / AT_ONCE; batch++) {
    await Promise.all(
      Array.from({ length: AT_ONCE }, async (_, i) => {
        const seq = batch * AT_ONCE + i;
        const running = new Promise<void>((resolve) => started.set(seq, resolve));
        const stopped = new Promise<void>((resolve) => aborted.set(seq, resolve));
        const request = postCall(port, seq, modernHeaders('spinner'), modernBody(seq));
        await running;
        const closedAt = performance.now();
        request.destroy();
        await stopped;
        latencies.push((abortedAt.get(seq) as number) - closedAt);
      }),
    );
  }
  await api.close();
  await platform.stop();
  const s = summary(latencies);
  rows.push({
    path: 'taskgate /mcp (2026-07-28): close → ctx.signal aborted',
    n: s.n,
    aborted: s.n,
    'p50 ms': s.p50,
    'p99 ms': s.p99,
    'max ms': s.max,
  });

  // The anchor: the SDK v1 server, a fresh stateless transport per request (its documented pattern).
  const anchorAborted = new Map<number, number>();
  const anchorClosedAt = new Map<number, number>();
  const anchorStarted = new Map<number, () => void>();
  const sdkServer = await startSdkAnchor(
    (mcp) => {
      mcp.registerTool('spinner', { inputSchema: { seq: z.number() } }, async ({ seq }, extra) => {
        await new Promise<void>((resolve) => {
          extra.signal.addEventListener('abort', () => {
            anchorAborted.set(seq, performance.now());
            resolve();
          });
          anchorStarted.get(seq)?.();
          setTimeout(resolve, ANCHOR_WAIT_MS + 500);
        });
        return { content: [] };
      });
    },
    { json: false },
  );
  const anchorPort = sdkServer.port;
  for (let batch = 0; batch < ANCHOR_CALLS / AT_ONCE; batch++) {
    await Promise.all(
      Array.from({ length: AT_ONCE }, async (_, i) => {
        const seq = batch * AT_ONCE + i;
        const running = new Promise<void>((resolve) => anchorStarted.set(seq, resolve));
        const request = postCall(anchorPort, seq, legacyHeaders(), {
          jsonrpc: '2.0',
          id: seq,
          method: 'tools/call',
          params: { name: 'spinner', arguments: { seq } },
        });
        await running;
        anchorClosedAt.set(seq, performance.now());
        request.destroy();
      }),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, ANCHOR_WAIT_MS));
  const anchor = summary([...anchorAborted].map(([seq, at]) => at - (anchorClosedAt.get(seq) as number)));
  sdkServer.close();
  rows.push({
    path: `SDK v1 stateless server: close → handler signal aborted within ${ANCHOR_WAIT_MS} ms`,
    n: ANCHOR_CALLS,
    aborted: anchorAborted.size,
    'p50 ms': anchorAborted.size === 0 ? 'never' : anchor.p50,
    'p99 ms': anchorAborted.size === 0 ? 'never' : anchor.p99,
    'max ms': anchorAborted.size === 0 ? 'never' : anchor.max,
  });
} finally {
  await database.drop();
}
printTable('Stream close → handler cancelled', rows);
reportGoals({ TOTAL }, [
  {
    metric: 'MCP stream close → ctx.signal aborted p99',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'taskgate', 'p99 ms'),
    anchor: { label: 'SDK v1 stateless server', value: figure(rows, 'SDK v1', 'p99 ms') },
  },
]);
process.exit(0);

function modernHeaders(tool: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': tool,
  };
}

function modernBody(seq: number) {
  return {
    jsonrpc: '2.0',
    id: seq,
    method: 'tools/call',
    params: {
      name: 'spinner',
      arguments: { seq },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };
}

function legacyHeaders(): Record<string, string> {
  return { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
}

function postCall(port: number, _seq: number, headers: Record<string, string>, body: unknown): http.ClientRequest {
  const payload = JSON.stringify(body);
  const request = http.request({
    host: '127.0.0.1',
    port,
    path: '/mcp',
    method: 'POST',
    headers: { ...headers, 'content-length': Buffer.byteLength(payload) },
  });
  request.on('error', () => {});
  request.on('response', (response) => response.resume());
  request.end(payload);
  return request;
}
