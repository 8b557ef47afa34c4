import type pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { ClientRecord } from './client-record.ts';
import { INVARIANTS } from './invariant.ts';
import { databaseInvariants } from './invariants.ts';
import type { Tenant } from './workload-context.ts';

// The SQL invariants of the chaos harness, each shown failing on rows made to break it (and all
// passing on a consistent world), so a green chaos run means something.
const database = useTestDatabase();
const TENANTS: Tenant[] = [{ name: 'alpha', token: 'unused-token-0123456789', stock: { sku: 10 } }];
const FINGERPRINT = 'a'.repeat(64);
let db: pg.Client;
let record: ClientRecord;
let receiver: WebhookReceiver;
let taskId: string;
let chargeId: string;

beforeAll(async () => {
  db = testClient({ connectionString: database.url });
  await db.connect();
});
afterAll(async () => {
  await db.end();
});

// A consistent world: one completed task a client was given and saw end, one keyed charge with its
// key, its outbox event delivered to the receiver, and a SKU with one reservation.
beforeEach(async () => {
  await db.query('BEGIN');
  record = new ClientRecord();
  receiver = new WebhookReceiver('unused-secret-0123456789');
  const task = await db.query<{ id: string }>(
    "INSERT INTO tasks (tenant_id, tool, status, finished_at) VALUES ('alpha', 'greet', 'completed', now()) RETURNING id",
  );
  taskId = task.rows[0]?.id as string;
  record.given(taskId, 'alpha', 'rest create', 0);
  record.sawTerminal(taskId, 'completed', 'rest poll');
  const charge = await db.query<{ id: string }>(
    "INSERT INTO account_charges (tenant_id, account, cents, idempotency_key) VALUES ('alpha', 'acct-1', 5, 'k1') RETURNING id",
  );
  chargeId = charge.rows[0]?.id as string;
  await completedKey('k1', 'charge_account');
  const call = record.keyedCall('alpha', 'k1', 'charge');
  call.state = 'succeeded';
  call.effectId = chargeId;
  await announce('account.charged', { chargeId }, true);
  await db.query("INSERT INTO inventory (tenant_id, sku, available) VALUES ('alpha', 'sku', 8)");
  const reservation = await db.query<{ id: string }>(
    "INSERT INTO inventory_reservations (tenant_id, sku, quantity, idempotency_key) VALUES ('alpha', 'sku', 2, 'r1') RETURNING id",
  );
  await completedKey('r1', 'reserve_inventory', { structuredContent: { reservation: {} } });
  await announce('inventory.reserved', { reservationId: reservation.rows[0]?.id }, true);
});
afterEach(async () => {
  await db.query('ROLLBACK');
});

async function completedKey(key: string, operation: string, result: object = {}) {
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, state, result, completed_at, expires_at)
     VALUES ('alpha', $1, $2, $3, 'completed', $4, now(), now() + interval '1 day')`,
    [key, operation, FINGERPRINT, JSON.stringify(result)],
  );
}

async function announce(eventType: string, payload: object, delivered: boolean) {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO outbox (tenant_id, aggregate_type, aggregate_id, event_type, payload, delivered_at)
     VALUES ('alpha', 'x', 'y', $1, $2, ${delivered ? 'now()' : 'NULL'}) RETURNING id`,
    [eventType, JSON.stringify(payload)],
  );
  if (delivered) receiver.apply(String(rows[0]?.id));
}

async function failing(outages: { from: Date; to: Date }[] = []): Promise<string[]> {
  const { results } = await databaseInvariants(db, record, TENANTS, receiver, outages);
  return results.filter((result) => !result.pass).map((result) => result.name);
}

describe('the chaos invariants', () => {
  it('all hold on a consistent world', async () => {
    expect(await failing()).toEqual([]);
  });

  it('catch a task left working, and a request-mode one separately', async () => {
    await db.query("INSERT INTO tasks (tenant_id, tool, mode) VALUES ('alpha', 'greet', 'request')");
    expect(await failing()).toEqual([INVARIANTS.allTerminal, INVARIANTS.requestModeTerminal]);
  });

  it('catch a task id a client was given that is not in the database', async () => {
    record.given('00000000-0000-4000-8000-000000000000', 'alpha', 'rest create', 0);
    expect(await failing()).toEqual([INVARIANTS.noTaskLost]);
  });

  it('catch a client told another terminal status than the row has', async () => {
    record.seenTerminal.set(taskId, { status: 'cancelled', source: 'mcp listen' });
    expect(await failing()).toEqual([INVARIANTS.clientsAgree]);
  });

  it('catch a task that failed with a connection error', async () => {
    await db.query(
      `INSERT INTO tasks (tenant_id, tool, status, finished_at, error)
       VALUES ('alpha', 'slow_compute', 'failed', now(), '{"code": -32603, "message": "sorry, too many clients already"}')`,
    );
    expect(await failing()).toEqual([INVARIANTS.noOutageFailures]);
  });

  it('catch a slow_compute task failed by its idle clock, and count those whose handler returned in an outage', async () => {
    // Started 10 s before an outage of 8 s, for 12 s of work: its handler returned while Postgres was down.
    const outage = { from: new Date(Date.now() - 9_000), to: new Date(Date.now() - 1_000) };
    await db.query(
      `INSERT INTO tasks (tenant_id, tool, arguments, status, attempt, started_at, finished_at, result)
       VALUES ('alpha', 'slow_compute', '{"seconds": 12}', 'completed', 1, now() - interval '19 s', now(), '{}')`,
    );
    const passing = (await databaseInvariants(db, record, TENANTS, receiver, [outage])).results.find(
      (result) => result.name === INVARIANTS.returnedNotTimedOut,
    );
    expect(passing).toMatchObject({ pass: true });
    expect(passing?.summary).toMatch(
      /0 slow_compute task\(s\) failed by the idle clock; over 1 outage\(s\).*: 1 completed \(of 1 running at the stop\)/,
    );

    await db.query(
      `INSERT INTO tasks (tenant_id, tool, arguments, status, attempt, started_at, finished_at, error)
       VALUES ('alpha', 'slow_compute', '{"seconds": 12}', 'failed', 1, now() - interval '19 s', now(),
               '{"code": -32001, "message": "idle timeout: no progress for 5000 ms", "data": {"clock": "idle", "limitMs": 5000}}')`,
    );
    expect(await failing([outage])).toEqual([INVARIANTS.returnedNotTimedOut]);
  });

  it('catch a keyed call left without an answer', async () => {
    record.keyedCall('alpha', 'k2', 'charge');
    expect(await failing()).toEqual([INVARIANTS.keyedAnswered]);
  });

  it('catch a key charged twice (and the success that no longer matches one row)', async () => {
    const { rows } = await db.query<{ id: string }>(
      "INSERT INTO account_charges (tenant_id, account, cents, idempotency_key) VALUES ('alpha', 'acct-1', 5, 'k1') RETURNING id",
    );
    await announce('account.charged', { chargeId: rows[0]?.id }, true);
    expect(await failing()).toEqual([INVARIANTS.keyedSuccessOnce, INVARIANTS.keyEffectOnce]);
  });

  it('catch a committed key without its effect', async () => {
    await completedKey('k3', 'charge_account');
    expect(await failing()).toEqual([INVARIANTS.keyEffectOnce]);
  });

  it('catch stock that moved without a reservation', async () => {
    await db.query("UPDATE inventory SET available = 7 WHERE tenant_id = 'alpha' AND sku = 'sku'");
    expect(await failing()).toEqual([INVARIANTS.stockConserved]);
  });

  it('catch a charge with no outbox event', async () => {
    await db.query("DELETE FROM outbox WHERE event_type = 'account.charged'");
    expect(await failing()).toEqual([INVARIANTS.effectsAnnounced]);
  });

  it('catch an outbox row still pending, and one marked delivered that the receiver never accepted', async () => {
    await announce('account.noted', {}, false);
    expect(await failing()).toEqual([INVARIANTS.outboxSettled]);
    await db.query('UPDATE outbox SET delivered_at = now() WHERE delivered_at IS NULL');
    expect(await failing()).toEqual([INVARIANTS.outboxSettled]);
  });
});
