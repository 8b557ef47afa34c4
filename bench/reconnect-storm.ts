// 10,000 clients lose their streams at the same instant (an outage, a deploy) and reconnect on
// @taskgate/client's schedule (packages/client/src/reconnect-schedule.ts, the code the client
// runs, with each client's id as its jitter seed). The server is down for OUTAGE_MS; every
// attempt before that fails and backs off again, the first one after it succeeds. What the
// recovering server sees is the arrival of those successes: counted per 100 ms bucket, its peak
// against the uniform mean — the same number of clients spread evenly over full jitter's
// reconnect window (from recovery until 99 % are back). Full jitter is Taskgate's; equal jitter
// and no jitter run in the same process on the same clients as the anchors.
//
// 2× is the floor for uniform jitter once the ceilings have reached the cap: the time from the
// server's return to a client's next attempt then has a density falling linearly from 2/cap to
// 0. Before that (a 2 s outage) the early attempts' small ceilings crowd the first buckets,
// whatever the cap; the table shows it.
//
//   npm run bench -- reconnect-storm
//   CLIENTS=10000 OUTAGE_MS=10000 npm run bench -- reconnect-storm
import type { Jitter } from '@taskgate/reliability';
import { ReconnectSchedule } from '../packages/client/src/reconnect-schedule.ts';
import { atMost, printTable, reportGoals } from './support/report.ts';

const CLIENTS = Number(process.env.CLIENTS ?? 10_000);
const OUTAGE_MS = Number(process.env.OUTAGE_MS ?? 10_000);
const BUCKET_MS = 100;
const JITTERS: readonly Jitter[] = ['full', 'equal', 'none'];
const OUTAGES = [...new Set([2_000, OUTAGE_MS, 60_000])].sort((a, b) => a - b);

/** When each client is back (ms after the outage began), and how many attempts it made in all. */
function storm(jitter: Jitter, outageMs: number): { back: number[]; attempts: number } {
  const back: number[] = [];
  let attempts = 0;
  for (let client = 0; client < CLIENTS; client += 1) {
    const schedule = new ReconnectSchedule({ clientId: `client-${client}`, jitter });
    let at = 0;
    for (;;) {
      at += schedule.next();
      attempts += 1;
      if (at >= outageMs) break;
    }
    back.push(at);
  }
  return { back: back.sort((a, b) => a - b), attempts };
}

function bucketsOf(back: readonly number[], from: number): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const at of back) {
    const bucket = Math.floor((at - from) / BUCKET_MS);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + 1);
  }
  return buckets;
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;

const rows: Record<string, string | number>[] = [];
const ratioAt = new Map<string, number>();
for (const outageMs of OUTAGES) {
  const runs = new Map(JITTERS.map((jitter) => [jitter, storm(jitter, outageMs)]));
  const full = runs.get('full') as { back: number[] };
  // The window every jitter is measured over: full jitter's, recovery to 99 % of clients back.
  const windowMs = Math.max(BUCKET_MS, quantile(full.back, 0.99) - outageMs);
  const mean = CLIENTS / Math.ceil(windowMs / BUCKET_MS);
  for (const jitter of JITTERS) {
    const { back, attempts } = runs.get(jitter) as { back: number[]; attempts: number };
    const peak = Math.max(...bucketsOf(back, outageMs).values());
    const ratio = peak / mean;
    ratioAt.set(`${jitter}:${outageMs}`, ratio);
    rows.push({
      'outage ms': outageMs,
      jitter,
      clients: CLIENTS,
      'attempts in all': attempts,
      'window ms': windowMs,
      'mean / 100 ms': Math.round(mean * 10) / 10,
      'peak / 100 ms': peak,
      'peak / mean': Math.round(ratio * 100) / 100,
      'back p50 ms after recovery': quantile(back, 0.5) - outageMs,
      'back p99 ms after recovery': quantile(back, 0.99) - outageMs,
    });
  }
}

printTable(
  `${CLIENTS.toLocaleString('en')} clients reconnecting after an outage (the client's schedule: base 250 ms, cap 8 s; window: full jitter's, recovery to 99 % back)`,
  rows,
);

reportGoals({ CLIENTS, OUTAGE_MS }, [
  {
    metric: `reconnect after a ${OUTAGE_MS / 1000} s outage: peak 100 ms bucket / uniform mean, full jitter`,
    unit: '×',
    rule: atMost(2),
    ours: ratioAt.get(`full:${OUTAGE_MS}`) ?? null,
    anchor: { label: 'no jitter, same clients, same run', value: ratioAt.get(`none:${OUTAGE_MS}`) ?? null },
  },
]);
