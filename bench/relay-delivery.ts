// Outbox relay delivery: events/s draining a backlog into a local webhook sink, and the lag from an
// event's created_at to the sink receiving it under a steady insert rate. Goals: ≥ 5,000 events/s
// and lag p99 < 100 ms. Anchors, in the same run on the same machine: the same sink driven directly
// by the same HTTP client at the same concurrency (no database), the raw INSERT rate of the outbox
// rows that make the backlog, and the direct client's own send → received time at the same rate.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- relay-delivery
import { addOutboxEvents, type ClaimedOutboxEvent, createKysely, createPool, type OutboxEvent } from '@taskgate/db';
import { startRelayRole, WebhookSink } from '@taskgate/relay';
import { sql } from 'kysely';
import { benchDatabase } from './support/bench-database.ts';
import { type SinkReport, startBenchSink } from './support/bench-sink.ts';
import { atLeast, atRate, below, figure, printTable, reportGoals, summary } from './support/report.ts';

const TOTAL = Number(process.env.TOTAL ?? 20_000);
const RATE = Number(process.env.RATE ?? 2_000);
const STEADY_SECONDS = Number(process.env.SECONDS ?? 5);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 64);
const INSERT_BATCH = 100;
const AGGREGATES = Math.max(1, Math.floor(TOTAL / 4));
const SECRET = 'bench-relay-secret-0123456789';
const silent = { info: () => {}, warn: () => {} };

const event = (index: number): OutboxEvent => ({
  tenantId: 'bench',
  aggregateType: 'order',
  aggregateId: `order-${index % AGGREGATES}`,
  eventType: 'order.changed',
  payload: { index, note: 'a payload of a typical size for a domain event, with a few fields' },
});

const database = await benchDatabase();
const sink = await startBenchSink();
const db = createKysely(createPool(database.url, { applicationName: 'bench-relay', max: 4 }));
const rows: Record<string, string | number>[] = [];
try {
  // Anchor 1: the same client (WebhookSink) and concurrency against the same sink, no database.
  const direct = new WebhookSink({ url: sink.url, secret: SECRET, timeoutMs: 10_000, maxSockets: CONCURRENCY });
  const fake = (index: number): ClaimedOutboxEvent => ({
    id: String(index + 1),
    ...event(index),
    createdAt: new Date(),
    attempts: 1,
  });
  let next = 0;
  const directDone = sink.expect(TOTAL);
  const directStart = Date.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < TOTAL) await direct.send(fake(next++));
    }),
  );
  rows.push(
    throughput(`anchor: same sink, WebhookSink direct, ${CONCURRENCY} in flight`, await directDone, directStart),
  );

  // Anchor 2: the raw INSERT rate of the backlog (addOutboxEvents, 100 rows a transaction).
  const insertStart = performance.now();
  for (let index = 0; index < TOTAL; index += INSERT_BATCH) {
    await addOutboxEvents(
      db,
      Array.from({ length: Math.min(INSERT_BATCH, TOTAL - index) }, (_, offset) => event(index + offset)),
    );
  }
  const insertMs = performance.now() - insertStart;
  rows.push({
    path: `anchor: raw INSERT into outbox, ${INSERT_BATCH} rows/transaction`,
    events: TOTAL,
    'events/s': Math.round((TOTAL * 1000) / insertMs),
    'p50 ms': '',
    'p99 ms': '',
    'max ms': '',
  });

  // Taskgate: one relay drains the backlog (claim → POST → settle), then keeps up with a steady rate.
  const drained = sink.expect(TOTAL);
  const relayStart = Date.now();
  const relay = await startRelayRole({
    connectionString: database.url,
    logger: silent,
    listenNotify: true,
    sinks: [sink.url],
    secret: SECRET,
    maxAttempts: 10,
    leaseMs: 30_000,
    concurrency: CONCURRENCY,
    graceMs: 1_000,
  });
  rows.push(
    throughput(`taskgate relay: backlog of ${TOTAL} → sink, ${CONCURRENCY} in flight`, await drained, relayStart),
  );
  await waitForSettled();

  const steadyTotal = RATE * STEADY_SECONDS;
  const batch = 10;
  const steady = sink.expect(steadyTotal);
  await atRate(steadyTotal / batch, RATE / batch, async (index) => {
    await addOutboxEvents(
      db,
      Array.from({ length: batch }, (_, offset) => event(index * batch + offset)),
    );
  });
  const report = await steady;
  const lag = summary(report.lags);
  rows.push({
    path: `taskgate relay: created_at → sink received at ${RATE}/s (${batch}/transaction)`,
    events: lag.n,
    'events/s': Math.round((report.count * 1000) / (report.lastAt - report.firstAt)),
    'p50 ms': lag.p50,
    'p99 ms': lag.p99,
    'max ms': lag.max,
  });

  await relay.stop();

  // Anchor 3: the same sink and client at the same rate with no database: the HTTP part of the lag.
  const directSteady = sink.expect(steadyTotal);
  await atRate(steadyTotal, RATE, async (index) => {
    await direct.send(fake(index));
  });
  const floor = summary((await directSteady).lags);
  rows.push({
    path: `anchor: same sink, WebhookSink direct at ${RATE}/s: send → received`,
    events: floor.n,
    'events/s': '',
    'p50 ms': floor.p50,
    'p99 ms': floor.p99,
    'max ms': floor.max,
  });
  direct.close();
} finally {
  await db.destroy();
  await sink.stop();
  await database.drop();
}

printTable('Outbox relay delivery to a local webhook sink', rows);
reportGoals({ TOTAL, RATE, SECONDS: STEADY_SECONDS, CONCURRENCY }, [
  {
    metric: 'relay: backlog drained',
    unit: 'events/s',
    rule: atLeast(5_000),
    ours: figure(rows, 'taskgate relay: backlog', 'events/s'),
    anchor: {
      label: 'same sink, WebhookSink direct',
      value: figure(rows, 'anchor: same sink, WebhookSink direct,', 'events/s'),
    },
  },
  {
    metric: 'relay: delivery lag p99 (created_at → sink received)',
    unit: 'ms',
    rule: below(100),
    ours: figure(rows, 'taskgate relay: created_at', 'p99 ms'),
    anchor: {
      label: 'same sink, WebhookSink direct, send → received',
      value: figure(rows, 'anchor: same sink, WebhookSink direct at', 'p99 ms'),
    },
  },
]);
process.exit(0);

function throughput(label: string, report: SinkReport, startedAt: number) {
  return {
    path: label,
    events: report.count,
    'events/s': Math.round((report.count * 1000) / (report.lastAt - startedAt)),
    'p50 ms': '',
    'p99 ms': '',
    'max ms': '',
  };
}

async function waitForSettled(): Promise<void> {
  for (;;) {
    const {
      rows: [row],
    } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox WHERE delivered_at IS NULL`.execute(db);
    if (row?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
