// Gateway cancel: from a cancel request of a gateway tool's task (TaskService.cancel, what
// POST /v1/tasks/:id/cancel runs) to the downstream MCP server's own handler seeing its abort
// signal — through the database flag, the worker, ctx.signal, the SDK client's cancel and the
// downstream's SDK server. Two downstreams, each built with the official SDK and writing the
// instant its handler aborted: v1 over stdio (test/fixtures/downstream-stdio-server.ts; the cancel
// is notifications/cancelled) and v2 over Streamable HTTP 2026-07-28
// (test/fixtures/downstream-http-server.ts; the cancel is the close of the request's stream).
// Anchor, same run, for each: the same downstream server called directly by an SDK client, whose
// AbortController aborts: the floor of a cancel reaching that server at all.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- gateway-cancel
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as HttpClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DownstreamConnection, type DownstreamOptions, gatewayTools } from '@taskgate/gateway';
import { defineGateway } from '@taskgate/sdk';
import { startHttpDownstream } from '../test/support/http-downstream.ts';
import { startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const TOTAL = Number(process.env.TOTAL ?? 100);
const FIXTURE = path.resolve(import.meta.dirname, '../test/fixtures/downstream-stdio-server.ts');
const now = () => performance.timeOrigin + performance.now();

type At = (event: string, label: string) => number | undefined;

/** When the downstream wrote `<event> <label> <time>`, from its lines. */
const atIn =
  (lines: () => string[]): At =>
  (event, label) => {
    const line = lines().find((entry) => entry.startsWith(`${event} ${label} `));
    return line === undefined ? undefined : Number(line.split(' ')[2]);
  };

function downstreamLog(): { file: string; at: At } {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'bench-gateway-')), 'log');
  writeFileSync(file, '');
  return { file, at: atIn(() => readFileSync(file, 'utf8').split('\n')) };
}

async function until<T>(read: () => T | undefined): Promise<T> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error('the downstream never wrote the line waited for');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const rows: Record<string, string | number>[] = [];
const database = await benchDatabase();

/** Ours: a gateway tool's task, cancelled over the service; the downstream handler's abort timed. */
async function throughTheGateway(
  kind: string,
  downstream: Pick<DownstreamOptions, 'stdio' | 'http'>,
  at: At,
): Promise<void> {
  const gateway = defineGateway({ name: `bench-${kind}`, prefix: 'gw_', ...downstream, defaults: { retry: 'safe' } });
  const connection = new DownstreamConnection({
    name: gateway.name,
    ...downstream,
    log: { info: () => {}, warn: () => {} },
  });
  const tools = gatewayTools(gateway, connection, await connection.start(), () => {});
  const taskgate = await startPlatform(database.url, { tools: tools as never });
  await taskgate.startWorker({ concurrency: 8 });
  const latencies: number[] = [];
  let leftInMap = 0;
  try {
    for (let run = 0; run < TOTAL; run++) {
      const task = await taskgate.service.create('bench', {
        tool: 'gw_slow_echo',
        arguments: { text: 'bench', steps: 10_000 },
      });
      await until(() => at('started', task.id));
      const requested = now();
      await taskgate.service.cancel('bench', task.id, 'bench');
      const aborted = await until(() => at('aborted', task.id));
      latencies.push(aborted - requested);
    }
    // Every downstream request over once the tasks ended: the id map is empty.
    await until(() => (connection.inFlight.length === 0 ? true : undefined)).catch(() => {
      leftInMap = connection.inFlight.length;
    });
  } finally {
    await taskgate.stop();
    await connection.close();
  }
  const s = summary(latencies);
  rows.push({
    path: `taskgate ${kind}: cancel request → downstream handler aborted (through the gateway)`,
    n: s.n,
    'p50 ms': s.p50,
    'p99 ms': s.p99,
    'max ms': s.max,
    'left in id map': leftInMap,
  });
}

/** Anchor: the same server, called by an SDK client directly; its AbortController aborts. */
async function direct(
  kind: string,
  at: At,
  call: (label: string, signal: AbortSignal) => Promise<unknown>,
): Promise<void> {
  const anchor: number[] = [];
  for (let run = 0; run < TOTAL; run++) {
    const label = `direct-${run}`;
    const stop = new AbortController();
    const pending = call(label, stop.signal).catch(() => {});
    await until(() => at('started', label));
    const requested = now();
    stop.abort();
    const aborted = await until(() => at('aborted', label));
    anchor.push(aborted - requested);
    await pending;
  }
  const a = summary(anchor);
  rows.push({
    path: `direct ${kind}: SDK client abort → the same downstream handler aborted`,
    n: a.n,
    'p50 ms': a.p50,
    'p99 ms': a.p99,
    'max ms': a.max,
    'left in id map': '-',
  });
}

const slowEcho = (label: string) => ({
  name: 'slow_echo',
  arguments: { text: 'bench', steps: 10_000 },
  _meta: { 'dev.taskgate/call': label },
});

try {
  // stdio, SDK v1: the cancel is notifications/cancelled.
  const ours = downstreamLog();
  await throughTheGateway(
    'stdio',
    {
      stdio: { command: process.execPath, args: [FIXTURE], env: { DOWNSTREAM_LOG: ours.file, DOWNSTREAM_TIMES: '1' } },
    },
    ours.at,
  );
  const anchorLog = downstreamLog();
  const client = new Client({ name: 'bench-direct', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [FIXTURE],
      env: { PATH: process.env.PATH ?? '', DOWNSTREAM_LOG: anchorLog.file, DOWNSTREAM_TIMES: '1' },
    }),
  );
  await direct('stdio', anchorLog.at, (label, signal) =>
    client.callTool(slowEcho(label), undefined, { signal, timeout: 600_000 }),
  );
  await client.close();

  // Streamable HTTP 2026-07-28, SDK v2: the cancel is the close of the request's stream.
  const server = await startHttpDownstream({ DOWNSTREAM_TIMES: '1' });
  try {
    await throughTheGateway('http', { http: { url: server.url } }, atIn(server.lines));
    const httpClient = new HttpClient(
      { name: 'bench-direct', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await httpClient.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    await direct('http', atIn(server.lines), (label, signal) =>
      httpClient.callTool(slowEcho(label), { signal, timeout: 600_000 }),
    );
    await httpClient.close();
  } finally {
    await server.kill();
  }
} finally {
  await database.drop();
}
printTable('Gateway cancel (downstreams built with the MCP SDKs: v1 over stdio, v2 over Streamable HTTP)', rows);
reportGoals({ TOTAL }, [
  {
    metric: 'gateway cancel → downstream handler aborted p99 (stdio)',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'taskgate stdio:', 'p99 ms'),
    anchor: { label: 'SDK client abort → same downstream aborted', value: figure(rows, 'direct stdio:', 'p99 ms') },
  },
  {
    metric: 'gateway cancel → downstream handler aborted p99 (Streamable HTTP 2026-07-28)',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'taskgate http:', 'p99 ms'),
    anchor: { label: 'SDK v2 client abort → same downstream aborted', value: figure(rows, 'direct http:', 'p99 ms') },
  },
]);
