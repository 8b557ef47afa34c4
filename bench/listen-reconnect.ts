// 500 real listen clients (@taskgate/client's watchTasks, in a process of their own) subscribed to
// a task each; the API stops, stays down OUTAGE_MS, and comes back on the same port. Measured:
// the time from the API's return until every client is subscribed again (its stream reopened as
// a new request and acknowledged), and the API's peak request rate over 100 ms buckets after the
// return. Full jitter is the client's schedule; the same clients with no jitter, in the same run,
// are the anchor.
//
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- listen-reconnect
import { type ChildProcess, fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Jitter } from '@taskgate/reliability';
import { startRecorder } from '../test/support/http-recorder.ts';
import { serveApi, startPlatform } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, belowAnchor, printTable, reportGoals } from './support/report.ts';

const CLIENTS = Number(process.env.CLIENTS ?? 500);
const OUTAGE_MS = Number(process.env.OUTAGE_MS ?? 3_000);
const BUCKET_MS = 100;

const database = await benchDatabase();
// No worker: the tasks stay `working` for the whole run, so every stream has something to watch.
const platform = await startPlatform(database.url);
const now = () => performance.timeOrigin + performance.now();

function answer<T>(child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve) => {
    const listener = (message: Record<string, unknown>) => {
      if (key in message) {
        child.off('message', listener);
        resolve(message[key] as T);
      }
    };
    child.on('message', listener);
  });
}

async function round(jitter: Jitter): Promise<Record<string, string | number>> {
  let api = await serveApi(platform, database.url);
  const port = (api.app.server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const taskIds: string[] = [];
  for (let i = 0; i < CLIENTS; i += 1) {
    const created = await fetch(`${base}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 600, label: `listen-${jitter}-${i}` } }),
    });
    taskIds.push(((await created.json()) as { id: string }).id);
  }
  // What the API is asked, counted in front of it (the API restarts; this stays).
  const front = await startRecorder(`${base}/mcp`);
  const child = fork(path.join(import.meta.dirname, 'support/reconnect-clients.ts'), { stdio: 'inherit' });
  const ready = answer<boolean>(child, 'ready');
  child.send({ open: { url: front.url, taskIds, jitter } });
  await ready;

  await api.close();
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  api = await serveApi(platform, database.url, { port });
  const back = now();
  const collected = answer<number[]>(child, 'resubscribed');
  child.send({ collect: { expected: CLIENTS, timeoutMs: 60_000 } });
  const resubscribed = (await collected).map((at) => at - back).sort((a, b) => a - b);
  child.send({ stop: true });
  await new Promise((resolve) => child.once('exit', resolve));
  const requests = front.requests.filter((request) => request.at >= back).map((request) => request.at);
  await front.close();
  await api.close();

  const buckets = new Map<number, number>();
  for (const at of requests) {
    const bucket = Math.floor((at - back) / BUCKET_MS);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
  }
  const peak = Math.max(0, ...buckets.values());
  return {
    jitter,
    clients: CLIENTS,
    'outage ms': OUTAGE_MS,
    'subscribed again': resubscribed.length,
    'all back ms': resubscribed.length === CLIENTS ? Math.round(resubscribed.at(-1) as number) : 'never',
    'p50 back ms': Math.round(resubscribed[Math.floor(resubscribed.length / 2)] ?? Number.NaN),
    'API requests after return': requests.length,
    'peak requests / s': peak * (1000 / BUCKET_MS),
  };
}

const rows = [await round('full'), await round('none')];
await platform.stop();
await database.drop();
printTable(`${CLIENTS} listen clients, the API down ${OUTAGE_MS} ms and back on the same port`, rows);

const [full, none] = rows as [Record<string, string | number>, Record<string, string | number>];
reportGoals({ CLIENTS, OUTAGE_MS }, [
  {
    metric: `${CLIENTS} listen clients: the API's peak request rate after it returns, full jitter`,
    unit: 'requests/s',
    rule: belowAnchor(),
    ours: Number(full['peak requests / s']),
    anchor: { label: 'the same clients with no jitter, same run', value: Number(none['peak requests / s']) },
  },
  {
    metric: `${CLIENTS} listen clients: all subscribed again after the API returns (cap 8 s + 2 s)`,
    unit: 'ms',
    rule: below(10_000),
    ours: typeof full['all back ms'] === 'number' ? full['all back ms'] : null,
    anchor: {
      label: 'no jitter, same run',
      value: typeof none['all back ms'] === 'number' ? none['all back ms'] : null,
    },
  },
]);
process.exit(0);
