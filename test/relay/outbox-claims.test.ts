import {
  addOutboxEvents,
  claimDueOutbox,
  createKysely,
  createPool,
  type Database,
  deleteDeliveredOutbox,
  markDelivered,
  markFailed,
  type OutboxEvent,
} from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier } from '../support/relay-harness.ts';

// The claim and settlement statements alone, against a real Postgres, several connections.
const database = useTestDatabase();
let db: Kysely<Database>;

beforeAll(() => {
  db = createKysely(createPool(database.url, { applicationName: 'outbox-claims-test', max: 6 }));
});
afterAll(async () => {
  await db.destroy();
});
beforeEach(async () => {
  await sql`TRUNCATE outbox`.execute(db);
});

function event(aggregateId: string, eventType = 'thing.happened'): OutboxEvent {
  return { tenantId: 'acme', aggregateType: 'thing', aggregateId, eventType, payload: { aggregateId } };
}

const ids = (rows: readonly { id: string }[]) => rows.map((row) => row.id);

describe('claimDueOutbox', () => {
  it('hands out only the oldest pending event of each aggregate, in id order, and counts the attempt', async () => {
    const [a1, b1, a2, c1, b2] = await addOutboxEvents(db, [
      event('a'),
      event('b'),
      event('a'),
      event('c'),
      event('b'),
    ]);
    const claimed = await claimDueOutbox(db, 'relay-1', 10, 30_000);
    expect(ids(claimed)).toEqual([a1, b1, c1]);
    expect(claimed.map((row) => row.attempts)).toEqual([1, 1, 1]);
    expect(claimed[0]).toMatchObject({
      tenantId: 'acme',
      aggregateType: 'thing',
      aggregateId: 'a',
      payload: { aggregateId: 'a' },
    });

    // Leased rows are not due, and still hold their aggregate's later events back.
    expect(await claimDueOutbox(db, 'relay-2', 10, 30_000)).toEqual([]);
    await markDelivered(db, 'relay-1', claimed.slice(0, 2));
    expect(ids(await claimDueOutbox(db, 'relay-2', 10, 30_000))).toEqual([a2, b2]);
  });

  it('skips rows another open claim has locked instead of waiting for it or taking them too', async () => {
    const all = await addOutboxEvents(
      db,
      ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => event(id)),
    );
    const firstClaimed = barrier();
    const secondDone = barrier();
    const first = db.transaction().execute(async (trx) => {
      const rows = await claimDueOutbox(trx, 'relay-1', 3, 30_000);
      firstClaimed.resolve();
      // Still holding the row locks of its claim while the second relay claims.
      await secondDone.promise;
      return rows;
    });
    await firstClaimed.promise;
    const second = await claimDueOutbox(db, 'relay-2', 6, 30_000);
    secondDone.resolve();
    expect(ids(await first)).toEqual(all.slice(0, 3));
    expect(ids(second)).toEqual(all.slice(3));
  });

  it('gives a row whose lease ran out to the next claim, which bumps attempts again', async () => {
    const [id] = await addOutboxEvents(db, [event('a')]);
    await claimDueOutbox(db, 'relay-dead', 10, 30_000);
    expect(await claimDueOutbox(db, 'relay-2', 10, 30_000)).toEqual([]);
    await sql`UPDATE outbox SET leased_until = now() - interval '1 second'`.execute(db);
    const [again] = await claimDueOutbox(db, 'relay-2', 10, 30_000);
    expect(again).toMatchObject({ id, attempts: 2 });
  });

  it('sees a row that commits after a higher id was claimed and delivered', async () => {
    const inserted = barrier();
    const commit = barrier();
    const slow = db.transaction().execute(async (trx) => {
      const [low] = await addOutboxEvents(trx, [event('slow')]);
      inserted.resolve();
      await commit.promise;
      return low as string;
    });
    await inserted.promise;
    const [high] = await addOutboxEvents(db, [event('fast')]);
    const first = await claimDueOutbox(db, 'relay-1', 10, 30_000);
    expect(ids(first)).toEqual([high]);
    await markDelivered(db, 'relay-1', first);
    commit.resolve();
    const low = await slow;
    expect(BigInt(low)).toBeLessThan(BigInt(high as string));
    expect(ids(await claimDueOutbox(db, 'relay-1', 10, 30_000))).toEqual([low]);
  });
});

describe('settlements', () => {
  it('are fenced by relay and attempt: a stale claim settles nothing', async () => {
    const [id] = await addOutboxEvents(db, [event('a')]);
    const [first] = await claimDueOutbox(db, 'relay-1', 10, 30_000);
    await sql`UPDATE outbox SET leased_until = now() - interval '1 second'`.execute(db);
    const [second] = await claimDueOutbox(db, 'relay-1', 10, 30_000);
    expect(second?.attempts).toBe(2);

    expect(await markDelivered(db, 'relay-2', [second as { id: string; attempts: number }])).toEqual([]);
    expect(await markDelivered(db, 'relay-1', [first as { id: string; attempts: number }])).toEqual([]);
    expect(await markFailed(db, 'relay-1', [{ id: id as string, attempts: 1, error: 'late', retryInMs: 0 }])).toEqual(
      [],
    );
    expect(await markDelivered(db, 'relay-1', [second as { id: string; attempts: number }])).toEqual([id]);
    expect(await markDelivered(db, 'relay-1', [second as { id: string; attempts: number }])).toEqual([]);
  });

  it('a failure delays the row (and its aggregate); a dead-letter keeps the error and releases the aggregate', async () => {
    const [a1, a2, b1] = await addOutboxEvents(db, [event('a'), event('a'), event('b')]);
    const claimed = await claimDueOutbox(db, 'relay-1', 10, 30_000);
    expect(ids(claimed)).toEqual([a1, b1]);
    await markFailed(db, 'relay-1', [
      { id: a1 as string, attempts: 1, error: 'HTTP 500', retryInMs: 60_000 },
      { id: b1 as string, attempts: 1, error: 'HTTP 410: gone', retryInMs: null },
    ]);
    // a1 waits a minute and a2 waits behind it; b1 is dead.
    expect(await claimDueOutbox(db, 'relay-1', 10, 30_000)).toEqual([]);
    const rows = await db
      .selectFrom('outbox')
      .select(['id', 'last_error', 'dead_at', 'delivered_at', 'leased_until'])
      .select(sql<number>`extract(epoch FROM available_at - now())`.as('due_in_s'))
      .orderBy('id')
      .execute();
    expect(rows.map((row) => [row.id, row.last_error, row.dead_at !== null, row.leased_until])).toEqual([
      [a1, 'HTTP 500', false, null],
      [a2, null, false, null],
      [b1, 'HTTP 410: gone', true, null],
    ]);
    expect(Number(rows[0]?.due_in_s)).toBeGreaterThan(58);

    await sql`UPDATE outbox SET available_at = now() WHERE id = ${a1}`.execute(db);
    const [retry] = await claimDueOutbox(db, 'relay-1', 10, 30_000);
    expect(retry).toMatchObject({ id: a1, attempts: 2 });
    await markFailed(db, 'relay-1', [{ id: a1 as string, attempts: 2, error: 'HTTP 500 again', retryInMs: null }]);
    expect(ids(await claimDueOutbox(db, 'relay-1', 10, 30_000))).toEqual([a2]);
  });
});

describe('deleteDeliveredOutbox', () => {
  it('deletes delivered rows past the retention window and keeps pending, dead and recent ones', async () => {
    const [old, recent, pending, dead] = await addOutboxEvents(db, [event('a'), event('b'), event('c'), event('d')]);
    await sql`UPDATE outbox SET delivered_at = now() - interval '2 hours' WHERE id = ${old}`.execute(db);
    await sql`UPDATE outbox SET delivered_at = now() WHERE id = ${recent}`.execute(db);
    await sql`UPDATE outbox SET dead_at = now() - interval '2 hours' WHERE id = ${dead}`.execute(db);
    expect(await deleteDeliveredOutbox(db, 3_600_000)).toBe(1);
    expect(ids(await db.selectFrom('outbox').select('id').orderBy('id').execute())).toEqual([recent, pending, dead]);
  });
});
