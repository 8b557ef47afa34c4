// Gateway cancel: from a cancel request of a gateway tool's task (TaskService.cancel, what
// POST /v1/tasks/:id/cancel runs) to the downstream MCP server's own handler seeing its abort
// signal — through the database flag, the worker, ctx.signal, the SDK client's
// notifications/cancelled and the downstream's SDK server. The downstream is the SDK-built stdio
// fixture (test/fixtures/downstream-stdio-server.ts); its handler writes the instant it aborted.
// Anchor, same run: the same downstream server called directly by an SDK client, whose
// AbortController aborts: the floor of a cancel reaching that server at all.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- gateway-cancel
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DownstreamConnection, gatewayTools } from '@taskgate/gateway';
import { defineGateway } from '@taskgate/sdk';
import { startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const TOTAL = Number(process.env.TOTAL ?? 100);
const FIXTURE = path.resolve(import.meta.dirname, '../test/fixtures/downstream-stdio-server.ts');
const now = () => performance.timeOrigin + performance.now();

function downstreamLog(): { file: string; at: (event: string, label: string) => number | undefined } {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'bench-gateway-')), 'log');
  writeFileSync(file, '');
  return {
    file,
    at: (event, label) => {
      const line = readFileSync(file, 'utf8')
        .split('\n')
        .find((entry) => entry.startsWith(`${event} ${label} `));
      return line === undefined ? undefined : Number(line.split(' ')[2]);
    },
  };
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
try {
  // Ours: a gateway tool's task, cancelled over the service; the downstream handler's abort timed.
  const ours = downstreamLog();
  const gateway = defineGateway({
    name: 'bench',
    prefix: 'gw_',
    stdio: { command: process.execPath, args: [FIXTURE], env: { DOWNSTREAM_LOG: ours.file, DOWNSTREAM_TIMES: '1' } },
    defaults: { retry: 'safe' },
  });
  const connection = new DownstreamConnection({
    name: gateway.name,
    stdio: gateway.stdio,
    log: { info: () => {}, warn: () => {} },
  });
  const tools = gatewayTools(gateway, connection, await connection.start(), () => {});
  const taskgate = await startPlatform(database.url, { tools: tools as never });
  await taskgate.startWorker({ concurrency: 8 });
  const latencies: number[] = [];
  let leftInMap = 0;
  for (let run = 0; run < TOTAL; run++) {
    const task = await taskgate.service.create('bench', {
      tool: 'gw_slow_echo',
      arguments: { text: 'bench', steps: 10_000 },
    });
    await until(() => ours.at('started', task.id));
    const requested = now();
    await taskgate.service.cancel('bench', task.id, 'bench');
    const aborted = await until(() => ours.at('aborted', task.id));
    latencies.push(aborted - requested);
  }
  // Every downstream request over once the tasks ended: the id map is empty.
  await until(() => (connection.inFlight.length === 0 ? true : undefined)).catch(() => {
    leftInMap = connection.inFlight.length;
  });
  await taskgate.stop();
  await connection.close();
  const s = summary(latencies);
  rows.push({
    path: 'taskgate: cancel request → downstream handler aborted (through the gateway)',
    n: s.n,
    'p50 ms': s.p50,
    'p99 ms': s.p99,
    'max ms': s.max,
    'left in id map': leftInMap,
  });

  // Anchor: the same server, called by an SDK client directly; its AbortController aborts.
  const direct = downstreamLog();
  const client = new Client({ name: 'bench-direct', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [FIXTURE],
      env: { PATH: process.env.PATH ?? '', DOWNSTREAM_LOG: direct.file, DOWNSTREAM_TIMES: '1' },
    }),
  );
  const anchor: number[] = [];
  for (let run = 0; run < TOTAL; run++) {
    const label = `direct-${run}`;
    const stop = new AbortController();
    const call = client
      .callTool(
        { name: 'slow_echo', arguments: { text: 'bench', steps: 10_000 }, _meta: { 'dev.taskgate/call': label } },
        undefined,
        {
          signal: stop.signal,
          timeout: 600_000,
        },
      )
      .catch(() => {});
    await until(() => direct.at('started', label));
    const requested = now();
    stop.abort();
    const aborted = await until(() => direct.at('aborted', label));
    anchor.push(aborted - requested);
    await call;
  }
  await client.close();
  const a = summary(anchor);
  rows.push({
    path: 'direct: SDK client abort → the same downstream handler aborted',
    n: a.n,
    'p50 ms': a.p50,
    'p99 ms': a.p99,
    'max ms': a.max,
    'left in id map': '-',
  });
} finally {
  await database.drop();
}
printTable('Gateway cancel (stdio downstream built with the MCP SDK)', rows);
reportGoals({ TOTAL }, [
  {
    metric: 'gateway cancel → downstream handler aborted p99',
    unit: 'ms',
    rule: below(50),
    ours: figure(rows, 'taskgate:', 'p99 ms'),
    anchor: { label: 'SDK client abort → same downstream aborted', value: figure(rows, 'direct:', 'p99 ms') },
  },
]);
