import {
  addOutboxEvents,
  claimDueOutbox,
  markFailed,
  OUTBOX_CHANNEL,
  outboxEventsStatement,
  outboxSummaryStatement,
  redeliverOutboxEvent,
} from '@taskgate/db';
import { type RawBuilder, sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restScopeOf } from '../../apps/api/src/http/oauth/scopes.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { expectProblem } from '../support/problems.ts';
import { planOf } from '../support/query-plans.ts';
import { barrier, type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// /v1/outbox: pending and dead-lettered events per event type, the events, and redelivering a
// dead-lettered one — each tenant's own only, and never by reading the delivered rows.
const database = useTestDatabase();
const ACME = 'acme-outbox-token-0123456789';
const GLOBEX = 'globex-outbox-token-0123456789';
const SUMMARY = 'summary-outbox-token-0123456789';

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
let listener: pg.Client;
const heard: string[] = [];
let wakeListener: (() => void) | null = null;
let aggregates = 0;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
      [SUMMARY, 'summary-co'],
    ]),
  });
  // The channel the relay's OutboxListener listens on, heard here as a relay would hear it.
  listener = testClient({ connectionString: database.url });
  await listener.connect();
  listener.on('notification', (message) => {
    heard.push(message.payload ?? '');
    wakeListener?.();
  });
  await listener.query(`LISTEN ${OUTBOX_CHANNEL}`);
});
afterAll(async () => {
  await listener?.end();
  await api?.close();
  await platform?.stop();
});

const get = (url: string, token = ACME) =>
  api.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
const redeliver = (id: string, token = ACME, payload: unknown = {}) =>
  api.app.inject({
    method: 'POST',
    url: `/v1/outbox/events/${id}/redeliver`,
    headers: { authorization: `Bearer ${token}` },
    payload: payload as Record<string, unknown>,
  });

type Seeded = 'pending' | 'dead' | 'delivered';

/** One event of `tenant` in the given state (as the relay would have left it); its id. */
async function seed(tenant: string, eventType: string, state: Seeded, payload: unknown = {}): Promise<string> {
  aggregates += 1;
  const [id] = await addOutboxEvents(platform.db, [
    { tenantId: tenant, aggregateType: 'order', aggregateId: `order-${aggregates}`, eventType, payload },
  ]);
  if (id === undefined) throw new Error('nothing inserted');
  if (state === 'dead') {
    await sql`
      UPDATE outbox SET attempts = 10, leased_by = 'relay-1', dead_at = now(),
        last_error = 'HTTP 503 Service Unavailable (http://sink.example/hook)'
      WHERE id = ${id}::bigint`.execute(platform.db);
  } else if (state === 'delivered') {
    await sql`UPDATE outbox SET attempts = 1, leased_by = 'relay-1', delivered_at = now() WHERE id = ${id}::bigint`.execute(
      platform.db,
    );
  }
  return id;
}

/** Everything notified so far has been heard: a marker sent now arrives after it. */
async function heardUpTo(marker: string): Promise<string[]> {
  await sql`SELECT pg_notify(${OUTBOX_CHANNEL}, ${marker})`.execute(platform.db);
  while (!heard.includes(marker)) {
    await new Promise<void>((resolve) => {
      wakeListener = resolve;
    });
  }
  return heard.splice(0, heard.indexOf(marker) + 1);
}

async function row(id: string) {
  const { rows } = await sql<{
    dead_at: Date | null;
    delivered_at: Date | null;
    attempts: number;
    last_error: string | null;
    leased_by: string | null;
    due: boolean;
  }>`SELECT dead_at, delivered_at, attempts, last_error, leased_by, available_at <= now() AS due
     FROM outbox WHERE id = ${id}::bigint`.execute(platform.db);
  return rows[0];
}

describe('GET /v1/outbox', () => {
  it('counts pending and dead events per event type, of the tenant only, leaving delivered ones out', async () => {
    const oldest = await seed('summary-co', 'order.created', 'pending');
    await sql`UPDATE outbox SET created_at = now() - interval '10 minutes' WHERE id = ${oldest}::bigint`.execute(
      platform.db,
    );
    await seed('summary-co', 'order.created', 'pending');
    await seed('summary-co', 'order.created', 'pending');
    await seed('summary-co', 'order.created', 'dead');
    await seed('summary-co', 'order.created', 'dead');
    await seed('summary-co', 'invoice.sent', 'dead');
    for (let n = 0; n < 4; n += 1) await seed('summary-co', 'order.created', 'delivered');
    await seed('summary-co', 'only.delivered', 'delivered');
    await seed('acme', 'order.created', 'dead');

    const answer = await get('/v1/outbox', SUMMARY);
    expect(answer.statusCode, answer.body).toBe(200);
    const { groups } = answer.json();
    expect(groups).toEqual([
      {
        eventType: 'invoice.sent',
        pending: 0,
        dead: 1,
        oldestPendingAt: null,
        oldestPendingAgeSeconds: null,
        newestDeadAt: expect.any(String),
      },
      {
        eventType: 'order.created',
        pending: 3,
        dead: 2,
        oldestPendingAt: expect.any(String),
        oldestPendingAgeSeconds: expect.any(Number),
        newestDeadAt: expect.any(String),
      },
    ]);
    expect(groups[1].oldestPendingAgeSeconds).toBeGreaterThanOrEqual(600);
    expect(groups[1].oldestPendingAgeSeconds).toBeLessThan(700);
  });

  it('needs the admin scope, and a token', async () => {
    expect(restScopeOf('GET', '/v1/outbox')).toBe('admin');
    expect(restScopeOf('GET', '/v1/outbox/events')).toBe('admin');
    expect(restScopeOf('POST', '/v1/outbox/events/:id/redeliver')).toBe('admin');
    expectProblem(await api.app.inject({ method: 'GET', url: '/v1/outbox' }), 401, 'TG_UNAUTHORIZED');
    expectProblem(
      await api.app.inject({ method: 'POST', url: '/v1/outbox/events/1/redeliver', payload: {} }),
      401,
      'TG_UNAUTHORIZED',
    );
  });
});

describe('GET /v1/outbox/events', () => {
  const dead: string[] = [];
  const pending: string[] = [];
  let shipped: string;
  beforeAll(async () => {
    for (let n = 0; n < 3; n += 1) dead.push(await seed('globex', 'parcel.shipped', 'dead', { n }));
    shipped = await seed('globex', 'parcel.lost', 'dead', { big: 'x'.repeat(3000) });
    pending.push(await seed('globex', 'parcel.shipped', 'pending', { n: 10 }));
    pending.push(await seed('globex', 'parcel.shipped', 'pending', { n: 11 }));
    await seed('globex', 'parcel.shipped', 'delivered');
  });

  it('lists dead-lettered events newest first by default, with what the relay left, and pages with after', async () => {
    const first = (await get('/v1/outbox/events?limit=2', GLOBEX)).json();
    expect(first.events.map((event: { id: string }) => event.id)).toEqual([shipped, dead[2]]);
    expect(first.events[1]).toEqual({
      id: dead[2],
      state: 'dead',
      eventType: 'parcel.shipped',
      aggregateType: 'order',
      aggregateId: expect.stringMatching(/^order-/),
      attempts: 10,
      lastError: 'HTTP 503 Service Unavailable (http://sink.example/hook)',
      createdAt: expect.any(String),
      availableAt: expect.any(String),
      leasedBy: 'relay-1',
      leasedUntil: null,
      deadAt: expect.any(String),
      payload: { n: 2 },
    });
    expect(first.next).toBe(dead[2]);
    const second = (await get(`/v1/outbox/events?state=dead&limit=2&after=${first.next}`, GLOBEX)).json();
    expect(second.events.map((event: { id: string }) => event.id)).toEqual([dead[1], dead[0]]);
    const third = (await get(`/v1/outbox/events?state=dead&limit=2&after=${second.next}`, GLOBEX)).json();
    expect(third).toEqual({ events: [], next: null });
  });

  it('filters by event type, and lists pending events oldest first (the next to be delivered)', async () => {
    const lost = (await get('/v1/outbox/events?eventType=parcel.lost', GLOBEX)).json();
    expect(lost.events.map((event: { id: string }) => event.id)).toEqual([shipped]);
    expect(lost.events[0].payload.big).toHaveLength(3000);
    expect(lost.next).toBeNull();
    const waiting = (await get('/v1/outbox/events?state=pending&eventType=parcel.shipped', GLOBEX)).json();
    expect(
      waiting.events.map((event: { id: string; state: string; deadAt: string | null }) => [
        event.id,
        event.state,
        event.deadAt,
      ]),
    ).toEqual([
      [pending[0], 'pending', null],
      [pending[1], 'pending', null],
    ]);
    const paged = (await get(`/v1/outbox/events?state=pending&limit=1&after=${pending[0]}`, GLOBEX)).json();
    expect(paged.events.map((event: { id: string }) => event.id)).toEqual([pending[1]]);
    expect((await get('/v1/outbox/events?eventType=nothing.such', GLOBEX)).json()).toEqual({ events: [], next: null });
  });

  it("shows another tenant nothing of globex's", async () => {
    const mine = (await get('/v1/outbox/events?state=dead&limit=200')).json();
    const ids = mine.events.map((event: { id: string }) => event.id);
    for (const id of [...dead, shipped]) expect(ids).not.toContain(id);
    const summary = (await get('/v1/outbox')).json();
    expect(summary.groups.map((group: { eventType: string }) => group.eventType)).not.toContain('parcel.shipped');
  });

  it('refuses a query it cannot use with a 400, never a 5xx', async () => {
    for (const query of [
      'state=delivered',
      'state=',
      'state=DEAD',
      'limit=0',
      'limit=201',
      'limit=abc',
      'limit=1.5',
      'limit=-1',
      'limit=true',
      'after=abc',
      'after=0',
      'after=-3',
      'after=01',
      'after=9223372036854775808',
      'after=99999999999999999999',
      'eventType=',
      `eventType=${'x'.repeat(201)}`,
      'colour=red',
    ]) {
      expectProblem(await get(`/v1/outbox/events?${query}`), 400, 'TG_REQUEST_INVALID');
    }
  });
});

describe('POST /v1/outbox/events/:id/redeliver', () => {
  it('makes a dead-lettered event pending, due now, with its attempts reset, and wakes the relay', async () => {
    const id = await seed('acme', 'order.paid', 'dead', { order: 7 });
    await heardUpTo('seeded');
    const answer = await redeliver(id);
    expect(answer.statusCode, answer.body).toBe(202);
    expect(answer.json()).toMatchObject({
      id,
      state: 'pending',
      eventType: 'order.paid',
      attempts: 0,
      deadAt: null,
      leasedBy: null,
      // Why it died stays visible until the next attempt replaces it.
      lastError: 'HTTP 503 Service Unavailable (http://sink.example/hook)',
      payload: { order: 7 },
    });
    expect(await row(id)).toMatchObject({ dead_at: null, delivered_at: null, attempts: 0, leased_by: null, due: true });
    // The relay's wake-up: the redeliver's own NOTIFY, heard before a marker sent after it.
    expect(await heardUpTo('after redeliver')).toEqual(['', 'after redeliver']);
    // Listed among the pending now, and no longer among the dead.
    const pendingIds = (await get('/v1/outbox/events?state=pending&eventType=order.paid')).json();
    expect(pendingIds.events.map((event: { id: string }) => event.id)).toEqual([id]);
    const deadIds = (await get('/v1/outbox/events?state=dead&eventType=order.paid')).json();
    expect(deadIds.events).toEqual([]);

    // Once: the second finds it pending, changes nothing, and wakes nobody.
    const again = expectProblem(await redeliver(id), 409, 'TG_OUTBOX_EVENT_NOT_DEAD');
    expect(again.detail).toContain('pending');
    expect(await heardUpTo('after second')).toEqual(['after second']);
  });

  it('answers 409 for a pending or a delivered event, and leaves it as it was', async () => {
    const pending = await seed('acme', 'order.paid', 'pending');
    const delivered = await seed('acme', 'order.paid', 'delivered');
    expect(expectProblem(await redeliver(pending), 409, 'TG_OUTBOX_EVENT_NOT_DEAD').detail).toContain('pending');
    expect(expectProblem(await redeliver(delivered), 409, 'TG_OUTBOX_EVENT_NOT_DEAD').detail).toContain('delivered');
    expect(await row(pending)).toMatchObject({ dead_at: null, delivered_at: null, attempts: 0 });
    expect((await row(delivered))?.delivered_at).not.toBeNull();
  });

  it("answers 404 for another tenant's event, and for an id that names none", async () => {
    const theirs = await seed('globex', 'order.paid', 'dead');
    expectProblem(await redeliver(theirs, ACME), 404, 'TG_OUTBOX_EVENT_NOT_FOUND');
    expect((await row(theirs))?.dead_at).not.toBeNull();
    expectProblem(await redeliver('9223372036854775807'), 404, 'TG_OUTBOX_EVENT_NOT_FOUND');
    // The owner still can.
    expect((await redeliver(theirs, GLOBEX)).statusCode).toBe(202);
  });

  it('refuses an id or a body it cannot use with a 400, never a 5xx', async () => {
    for (const id of ['abc', '0', '-1', '1.5', '01', '1e3', '%20', '9223372036854775808', '99999999999999999999']) {
      expectProblem(await redeliver(id), 400, 'TG_REQUEST_INVALID');
    }
    const id = await seed('acme', 'order.paid', 'dead');
    expectProblem(await redeliver(id, ACME, { force: true }), 400, 'TG_REQUEST_INVALID');
    expect((await row(id))?.dead_at).not.toBeNull();
    // A bare POST, no body at all, is a redeliver.
    const bare = await api.app.inject({
      method: 'POST',
      url: `/v1/outbox/events/${id}/redeliver`,
      headers: { authorization: `Bearer ${ACME}` },
    });
    expect(bare.statusCode, bare.body).toBe(202);
  });
});

describe('a redeliver racing the relay or another redeliver', () => {
  /** Resolves once a statement like `pattern` waits for a row lock. */
  const waitsForLock = (pattern: string) =>
    waitForTask(
      async () => {
        const { rows } = await sql<{ waiting: number }>`
          SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${pattern}`.execute(
          platform.db,
        );
        return rows[0]?.waiting ?? 0;
      },
      (waiting) => waiting > 0,
    );

  /** The row as a relay's claim leaves it (leased, its attempt counted), without claiming others. */
  async function claimedByRelay(relayId: string): Promise<string> {
    const id = await seed('acme', 'order.raced', 'pending');
    await sql`
      UPDATE outbox SET leased_by = ${relayId}, leased_until = now() + interval '30 seconds', attempts = 10
      WHERE id = ${id}::bigint`.execute(platform.db);
    return id;
  }

  /** Runs `work` in a transaction held open until the returned `end` is called (commit, or roll back). */
  async function heldOpen(work: (trx: typeof platform.db) => Promise<unknown>) {
    const hold = barrier();
    const started = barrier();
    let commit = true;
    const done = platform.db
      .transaction()
      .execute(async (trx) => {
        await work(trx);
        started.resolve();
        await hold.promise;
        if (!commit) throw new Error('rolled back on purpose');
      })
      .catch((error: Error) => {
        if (commit) throw error;
      });
    await started.promise;
    return {
      end: async (how: 'commit' | 'rollback') => {
        commit = how === 'commit';
        hold.resolve();
        await done;
      },
    };
  }

  it("answers 409 at once while the relay's dead-lettering is uncommitted, and redelivers once it commits", async () => {
    const id = await claimedByRelay('relay-race');
    const relay = await heldOpen(async (trx) => {
      const settled = await markFailed(trx, 'relay-race', [
        { id, attempts: 10, error: 'HTTP 500 (sink)', retryInMs: null },
      ]);
      expect(settled).toEqual([id]);
    });
    // Not dead as far as any other transaction can see: the answer comes while the relay's
    // transaction is still open (it does not wait for it), and changes nothing.
    expect(expectProblem(await redeliver(id), 409, 'TG_OUTBOX_EVENT_NOT_DEAD').detail).toContain('pending');
    await relay.end('commit');
    expect((await row(id))?.dead_at).not.toBeNull();
    const answer = await redeliver(id);
    expect(answer.statusCode, answer.body).toBe(202);
    expect(answer.json()).toMatchObject({ id, state: 'pending', attempts: 0, lastError: 'HTTP 500 (sink)' });
  });

  it('makes a second redeliver wait for the first one, then end in exactly one outcome', async () => {
    for (const [how, status] of [
      ['commit', 409],
      ['rollback', 202],
    ] as const) {
      const id = await seed('acme', 'order.raced', 'dead');
      const first = await heldOpen(async (trx) => {
        expect(await redeliverOutboxEvent(trx, 'acme', id)).toMatchObject({ kind: 'redelivered' });
      });
      const second = redeliver(id);
      // Forced order: the second is blocked on the first's row lock before the first ends.
      await waitsForLock('%WITH redelivered AS%');
      await first.end(how);
      const answer = await second;
      expect(answer.statusCode, `${how}: ${answer.body}`).toBe(status);
      expect(await row(id)).toMatchObject({ dead_at: null, attempts: 0 });
    }
  });

  it("keeps a relay's claim off a redeliver until it commits; then the claim takes it with a fresh count", async () => {
    const id = await seed('acme', 'order.raced', 'dead');
    // Only this row may become due: every other pending row waits an hour.
    await sql`UPDATE outbox SET available_at = now() + interval '1 hour'
              WHERE delivered_at IS NULL AND dead_at IS NULL`.execute(platform.db);
    const operator = await heldOpen(async (trx) => {
      expect(await redeliverOutboxEvent(trx, 'acme', id)).toMatchObject({ kind: 'redelivered' });
    });
    // The claim sees the row dead (the redeliver has not committed) and neither takes nor waits for it.
    expect(await claimDueOutbox(platform.db, 'relay-next', 10, 30_000)).toEqual([]);
    await operator.end('commit');
    const claimed = await claimDueOutbox(platform.db, 'relay-next', 10, 30_000);
    expect(claimed.map((event) => [event.id, event.attempts])).toEqual([[id, 1]]);
    // A settlement of the lease from before the dead-letter (relay-1, attempt 10) cannot touch it.
    expect(await markFailed(platform.db, 'relay-1', [{ id, attempts: 10, error: 'late', retryInMs: null }])).toEqual(
      [],
    );
  });
});

describe('the plans of the outbox reads', () => {
  const plan = (statement: RawBuilder<unknown>) => planOf(platform.db, statement);

  it('reads only the pending and dead partial indexes on an outbox of 100,000 delivered rows', {
    timeout: 60_000,
  }, async () => {
    // The tenant's own history, delivered, as the retention period keeps it; a few live rows.
    await sql`
      INSERT INTO outbox (tenant_id, aggregate_type, aggregate_id, event_type, payload, attempts, delivered_at)
      SELECT 'bulk', 'order', 'bulk-' || g, 'order.' || (g % 5), '{}'::jsonb, 1, now()
      FROM generate_series(1, 100000) AS g`.execute(platform.db);
    for (let n = 0; n < 20; n += 1) {
      await seed('bulk', `order.${n % 5}`, n % 2 === 0 ? 'dead' : 'pending');
    }
    await sql`ANALYZE outbox`.execute(platform.db);
    const pendingIndexes = ['outbox_pending_idx', 'outbox_pending_aggregate_idx'];
    const cases: [string, RawBuilder<unknown>, string[]][] = [
      ['dead, newest first', outboxEventsStatement('bulk', { state: 'dead', limit: 50 }), ['outbox_dead_idx']],
      [
        'dead, a later page of one type',
        outboxEventsStatement('bulk', { state: 'dead', eventType: 'order.2', after: '100010', limit: 50 }),
        ['outbox_dead_idx'],
      ],
      ['pending, oldest first', outboxEventsStatement('bulk', { state: 'pending', limit: 200 }), pendingIndexes],
      [
        'pending of one type, a later page',
        outboxEventsStatement('bulk', { state: 'pending', eventType: 'order.1', after: '100001', limit: 50 }),
        pendingIndexes,
      ],
    ];
    for (const [name, statement, allowed] of cases) {
      const { indexes, nodes } = await plan(statement);
      expect(nodes, name).not.toContain('Seq Scan');
      expect(indexes.length, name).toBeGreaterThan(0);
      expect(
        indexes.every((index) => allowed.includes(index)),
        `${name}: reads ${indexes.join(', ')}`,
      ).toBe(true);
    }
    const summary = await plan(outboxSummaryStatement('bulk'));
    expect(summary.nodes).not.toContain('Seq Scan');
    expect(summary.indexes).toContain('outbox_dead_idx');
    expect(summary.indexes.some((index) => pendingIndexes.includes(index))).toBe(true);
    expect(summary.indexes.every((index) => [...pendingIndexes, 'outbox_dead_idx'].includes(index))).toBe(true);
  });
});
