import { addOutboxEvents, type Database } from '@taskgate/db';
import type { RelayRole } from '@taskgate/relay';
import { type Kysely, sql } from 'kysely';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import {
  barrier,
  events,
  eventually,
  outboxRows,
  RELAY_SECRET,
  recordingLogger,
  startTestRelay,
  testDb,
} from '../support/relay-harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

// The relay role in this process against a real Postgres and a real HTTP receiver.
const database = useTestDatabase();
let db: Kysely<Database>;
const relays: RelayRole[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(() => {
  db = testDb(database.url);
});
beforeEach(async () => {
  await sql`TRUNCATE outbox`.execute(db);
});
afterEach(async () => {
  await Promise.all(relays.splice(0).map((relay) => relay.stop()));
  await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()));
});
afterAll(async () => {
  await db.destroy();
});

async function receiver(behaviour?: ConstructorParameters<typeof WebhookReceiver>[1]): Promise<WebhookReceiver> {
  const started = await new WebhookReceiver(RELAY_SECRET, behaviour).start();
  receivers.push(started);
  return started;
}

async function relay(sinks: readonly string[], overrides: Parameters<typeof startTestRelay>[2] = {}) {
  const started = await startTestRelay(database.url, sinks, overrides);
  relays.push(started);
  return started;
}

const allSettled = (rows: Awaited<ReturnType<typeof outboxRows>>) =>
  rows.every((row) => row.delivered_at !== null || row.dead_at !== null);

describe('outbox relay', () => {
  it('retries a sink that applied an event but failed to answer; each event arrives at least once and takes effect once', async () => {
    // The receiver applies the effect and then answers 500 to the first request for each id: the
    // relay cannot tell that from a failure before the effect, so it must retry, and the receiver
    // must deduplicate by Idempotency-Key.
    const sink = await receiver((delivery, self) => {
      if (delivery.attempt > 1) return { status: 200 };
      self.apply(delivery.idempotencyKey);
      return { status: 500, body: 'reply lost' };
    });
    const ids = await addOutboxEvents(db, events(['o1', 'o2', 'o3', 'o1', 'o4', 'o2', 'o5', 'o1']));
    await relay([sink.url]);

    const rows = await eventually(() => outboxRows(db), allSettled);
    expect(rows.map((row) => [row.id, row.attempts, row.last_error, row.delivered_at !== null])).toEqual(
      ids.map((id) => [id, 2, null, true]),
    );
    for (const id of ids) {
      expect(sink.deliveriesOf(id).map((delivery) => delivery.attempt)).toEqual([1, 2]);
    }
    expect([...sink.applied].sort()).toEqual([...ids].sort());
    expect(sink.received.every((delivery) => delivery.signatureValid && delivery.idempotencyKey === delivery.id)).toBe(
      true,
    );
  });

  it('keeps each aggregate in id order across retries', async () => {
    // Every other event fails its first two attempts; nothing of an aggregate may overtake it.
    const sink = await receiver((delivery) =>
      BigInt(delivery.id) % 2n === 0n && delivery.attempt <= 2 ? { status: 503 } : { status: 200 },
    );
    const aggregates = Array.from({ length: 30 }, (_, index) => `agg-${index % 5}`);
    const ids = await addOutboxEvents(db, events(aggregates));
    await relay([sink.url], { concurrency: 32 });
    await eventually(() => outboxRows(db), allSettled);

    for (const aggregate of new Set(aggregates)) {
      const expected = ids.filter((_, index) => aggregates[index] === aggregate);
      const arrivals = sink.received.filter((delivery) => delivery.aggregateId === aggregate).map((d) => d.id);
      // Retries repeat an id; a later id never arrives before an earlier one is accepted.
      expect([...new Set(arrivals)]).toEqual(expected);
      expect(arrivals).toEqual([...arrivals].sort((a, b) => Number(BigInt(a) - BigInt(b))));
    }
    expect(sink.received.length).toBe(ids.length + 2 * ids.filter((id) => BigInt(id) % 2n === 0n).length);
  });

  it('delivers a row that commits after a higher id was already delivered', async () => {
    const sink = await receiver();
    await relay([sink.url]);
    const inserted = barrier();
    const commit = barrier();
    const slow = db.transaction().execute(async (trx) => {
      const [low] = await addOutboxEvents(trx, events(['slow']));
      inserted.resolve();
      await commit.promise;
      return low as string;
    });
    await inserted.promise;
    const [high] = await addOutboxEvents(db, events(['fast']));
    await sink.until((self) => self.applied.includes(high as string));
    expect(sink.received.map((delivery) => delivery.aggregateId)).toEqual(['fast']);

    commit.resolve();
    const low = await slow;
    expect(BigInt(low)).toBeLessThan(BigInt(high as string));
    await sink.until((self) => self.applied.includes(low));
    expect(sink.applied).toEqual([high, low]);
  });

  it('moves a row that keeps failing to dead-letter with its last error, and delivers the others per row', async () => {
    let doomed = '';
    const sink = await receiver((delivery) =>
      delivery.id === doomed ? { status: 500, body: `no (attempt ${delivery.attempt})` } : { status: 200 },
    );
    const [first, other, next] = await addOutboxEvents(db, events(['doomed', 'fine', 'doomed']));
    doomed = first as string;
    await relay([sink.url], { maxAttempts: 3 });

    const rows = await eventually(() => outboxRows(db), allSettled);
    expect(
      rows.map((row) => [row.id, row.attempts, row.last_error, row.dead_at !== null, row.delivered_at !== null]),
    ).toEqual([
      [first, 3, `HTTP 500: no (attempt 3) (${sink.url})`, true, false],
      [other, 1, null, false, true],
      [next, 1, null, false, true],
    ]);
    expect(sink.deliveriesOf(doomed)).toHaveLength(3);
    // The aggregate's next event waited for the dead-letter, then went on.
    const lastDoomed = sink.received.findLastIndex((delivery) => delivery.id === doomed);
    expect(sink.received.findIndex((delivery) => delivery.id === next)).toBeGreaterThan(lastDoomed);
  });

  it('with every sink required, a row one sink refuses is retried to all of them', async () => {
    const accepting = await receiver();
    const refusingOnce = await receiver((delivery) => (delivery.attempt === 1 ? { status: 502 } : { status: 200 }));
    const [id] = await addOutboxEvents(db, events(['o1']));
    await relay([accepting.url, refusingOnce.url]);
    const [row] = await eventually(() => outboxRows(db), allSettled);
    expect(row).toMatchObject({ id, attempts: 2, last_error: null });
    expect(accepting.deliveriesOf(id as string)).toHaveLength(2);
    expect(accepting.applied).toEqual([id]);
    expect(refusingOnce.applied).toEqual([id]);
  });

  it('two relays at once never deliver one row at the same time, and deliver every row', async () => {
    const sink = await receiver(() => 'hold');
    const total = 120;
    const ids = await addOutboxEvents(db, events(Array.from({ length: total }, (_, index) => `o${index}`)));
    const [a, b] = await Promise.all([relay([sink.url], { concurrency: 8 }), relay([sink.url], { concurrency: 8 })]);
    // Waves: hold requests until a relay's worth (8) is on the wire, then answer them all at once,
    // so both relays' claims (each a batch ahead of its deliveries) race for the same rows. More
    // than 8 could wait forever: one relay may hold the last rows claimed ahead behind its 8.
    while (sink.applied.length < total) {
      await sink.until((self) => self.held.length >= Math.min(8, total - self.applied.length));
      for (const entry of sink.held.splice(0)) entry.release();
    }
    expect(sink.overlaps).toEqual([]);
    for (const id of ids) expect(sink.deliveriesOf(id)).toHaveLength(1);
    const rows = await eventually(
      () => outboxRows(db),
      (all) => all.every((row) => row.delivered_at !== null),
    );
    const byRelay = new Set(rows.map((row) => row.leased_by));
    expect(byRelay).toEqual(new Set([a.relayId, b.relayId]));
  });

  it('on stop hands back the rows it claimed but had not sent, and leaves those on the wire to their lease', async () => {
    const sink = await receiver(() => 'hold');
    const ids = await addOutboxEvents(db, events(['o1', 'o2', 'o3', 'o4', 'o5', 'o6']));
    // Two slots: two requests on the wire, the next two claimed ahead for them.
    const { logs, logger } = recordingLogger();
    const stopping = await startTestRelay(database.url, [sink.url], { concurrency: 2, graceMs: 50, logger });
    await sink.until((self) => self.held.length === 2);
    await eventually(
      () => outboxRows(db),
      (rows) => rows.filter((row) => row.attempts === 1).length === 4,
    );
    await stopping.stop();

    const rows = await outboxRows(db);
    const onTheWire = sink.held.map((entry) => entry.delivery.id).sort();
    expect(
      rows
        .filter((row) => row.attempts === 1)
        .map((row) => row.id)
        .sort(),
    ).toEqual(onTheWire);
    expect(rows.filter((row) => row.attempts === 0)).toHaveLength(4);
    expect(rows.every((row) => row.delivered_at === null && row.dead_at === null)).toBe(true);
    expect(logs.map((entry) => entry.msg)).toContain(
      'grace period over: aborting deliveries; their rows are redelivered after the lease',
    );
    // The handed-back rows are due at once for the next relay.
    const next = await receiver();
    await relay([next.url]);
    await next.until((self) => self.applied.length === 4);
    expect([...next.applied].sort()).toEqual(ids.filter((id) => !onTheWire.includes(id)).sort());
  });

  it('with no sinks it says it is idle and claims nothing', async () => {
    const { logs, logger } = recordingLogger();
    await relay([], { logger });
    await addOutboxEvents(db, events(['o1']));
    expect(logs.map((entry) => entry.msg)).toEqual([
      'relay idle: no sinks configured (TASKGATE_RELAY_SINKS), so it claims nothing and outbox rows stay pending',
      'relay started',
    ]);
    const [row] = await outboxRows(db);
    expect(row).toMatchObject({ attempts: 0, leased_by: null, delivered_at: null });
  });
});
