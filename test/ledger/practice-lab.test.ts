import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  claimAttempt,
  createKysely,
  createPool,
  executeOnce,
  keyFingerprint,
  TaskAnnouncer,
  type TaskRecord,
} from '@taskgate/db';
import { ToolRegistry } from '@taskgate/tools';
import { CancelWatcher, TaskRunner } from '@taskgate/worker';
import type { FastifyInstance } from 'fastify';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerDatabase } from '../../examples/ledger/ledger-schema.ts';
import { reserveStock as reserveOnLedger, setStock as restock } from '../../examples/ledger/ledger-store.ts';
import { cleanEnv, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { builtinTools } from '../support/example-tools.ts';
import {
  barrier,
  type Platform,
  silentLogger,
  startApi,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// The lesson's practice lab, item by item, against the real ledger in Postgres.
const database = useTestDatabase();
/** The ledger module's own SQL, on the platform's Kysely (the tables are the module's). */
const setStock = (db: unknown, tenant: string, sku: string, available: number) =>
  restock(db as Kysely<LedgerDatabase>, tenant, sku, available);
const reserveStock = (db: unknown, input: Parameters<typeof reserveOnLedger>[1]) =>
  reserveOnLedger(db as Kysely<LedgerDatabase>, input);
const TOKEN_ACME = 'acme-secret-token-0001';
const TOKEN_GLOBEX = 'globex-secret-token-002';
const tokens = new Map([
  [TOKEN_ACME, 'acme'],
  [TOKEN_GLOBEX, 'globex'],
]);
let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
let held: { taskId: string | null; gate: ReturnType<typeof barrier>; reached: ReturnType<typeof barrier> } | null =
  null;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await startHookedWorker();
  api = await startApi(platform, database.url, { tokens });
});

function startHookedWorker() {
  return platform.startWorker({
    hooks: {
      // Holds one chosen task inside its final commit (row locked, nothing committed yet).
      afterCompletionLock: async (taskId) => {
        if (held && (held.taskId === null || held.taskId === taskId)) {
          held.reached.resolve();
          await held.gate.promise;
        }
      },
    },
  });
}

/** Runs `fn` with no live worker, so the test itself decides who runs which attempt. */
async function withoutWorker<T>(fn: () => Promise<T>): Promise<T> {
  await platform.worker?.stop();
  try {
    return await fn();
  } finally {
    await startHookedWorker();
  }
}
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const auth = (token = TOKEN_ACME) => ({ authorization: `Bearer ${token}` });
const reserve = (sku: string, quantity: number, key?: string, token = TOKEN_ACME) =>
  api.app.inject({
    method: 'POST',
    url: `/v1/inventory/${sku}/reservations`,
    headers: { ...auth(token), ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload: { quantity },
  });
const done = (tenant: string, id: string) =>
  waitForTask(
    () => platform.service.get(tenant, id),
    (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status),
  );
async function reservations(tenant: string, sku: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    SELECT count(*) AS n FROM inventory_reservations WHERE tenant_id = ${tenant} AND sku = ${sku}`.execute(platform.db);
  return Number(rows[0]?.n);
}
const reservationOf = (task: TaskRecord) =>
  (task.result as { structuredContent: { reservation: Record<string, unknown> } }).structuredContent.reservation;

describe('practice lab: reserve_inventory on the idempotency ledger', () => {
  it('1. the key binds SKU, quantity, tenant and operation name', async () => {
    await setStock(platform.db, 'acme', 'sku-1', 10);
    await setStock(platform.db, 'acme', 'sku-1b', 10);
    await setStock(platform.db, 'globex', 'sku-1', 10);
    const first = await reserve('sku-1', 2, 'key-1');
    expect(first.statusCode).toBe(201);
    await done('acme', first.json().id);

    for (const changed of [reserve('sku-1b', 2, 'key-1'), reserve('sku-1', 3, 'key-1')]) {
      const response = await changed;
      expect(response.statusCode).toBe(422);
      expect(response.json().code).toBe('TG_IDEMPOTENCY_KEY_MISMATCH');
    }
    // Another operation under the same key is another intent: refused too.
    const charge = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { ...auth(), 'idempotency-key': 'key-1' },
      payload: { tool: 'charge_account', arguments: { account: 'sku-1', cents: 2 } },
    });
    expect(charge.statusCode).toBe(422);
    // The tenant is part of the key's identity: globex's key-1 is its own intent.
    const other = await reserve('sku-1', 2, 'key-1', TOKEN_GLOBEX);
    expect(other.statusCode).toBe(201);
    await done('globex', other.json().id);

    expect(await reservations('acme', 'sku-1')).toBe(1);
    expect(await reservations('acme', 'sku-1b')).toBe(0);
    expect(await reservations('globex', 'sku-1')).toBe(1);
    expect(keyFingerprint('reserve_inventory', { sku: 'a', quantity: 1 })).not.toBe(
      keyFingerprint('charge_account', { sku: 'a', quantity: 1 }),
    );
  });

  it('2. a retry with the same key and arguments returns the first reservation', async () => {
    await setStock(platform.db, 'acme', 'sku-2', 10);
    const first = await reserve('sku-2', 2, 'key-2');
    expect(first.statusCode).toBe(201);
    const completed = await done('acme', first.json().id);
    expect(completed.status).toBe('completed');

    const retry = await reserve('sku-2', 2, 'key-2');
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json().id).toBe(first.json().id);
    expect(retry.json().result.structuredContent.reservation).toEqual(reservationOf(completed));
    expect(await reservations('acme', 'sku-2')).toBe(1);
    expect((await platform.service.get('acme', first.json().id)).attempt).toBe(1);
  });

  it('3. a retry with a changed quantity fails without another reservation', async () => {
    await setStock(platform.db, 'acme', 'sku-3', 10);
    const first = await reserve('sku-3', 2, 'key-3');
    await done('acme', first.json().id);
    const changed = await reserve('sku-3', 5, 'key-3');
    expect(changed.statusCode).toBe(422);
    expect(changed.headers['content-type']).toContain('application/problem+json');
    expect(await reservations('acme', 'sku-3')).toBe(1);
    const inventory = await api.app.inject({ method: 'GET', url: '/v1/inventory/sku-3', headers: auth() });
    expect(inventory.json()).toMatchObject({ available: 8, reserved: 2, reservations: 1 });
  });

  it('4. an execution that committed but lost its response can be reconciled by key', async () => {
    await setStock(platform.db, 'acme', 'sku-4', 10);
    // A real socket that sends the request and hangs up without reading the answer.
    const server = await listen(api.app);
    const body = JSON.stringify({ quantity: 4 });
    await new Promise<void>((resolve, reject) => {
      const request = http.request(`${server}/v1/inventory/sku-4/reservations`, {
        method: 'POST',
        headers: { ...auth(), 'idempotency-key': 'key-4', 'content-type': 'application/json' },
      });
      request.on('error', () => resolve());
      request.on('response', () => reject(new Error('the client was meant to have gone')));
      request.end(body, () => {
        request.destroy();
        resolve();
      });
    });
    // The client does not know the task id. It asks the ledger by key until the call has settled.
    const record = await waitForTask(
      async () => api.app.inject({ method: 'GET', url: '/v1/idempotency-keys/key-4', headers: auth() }),
      (response) => response.statusCode === 200 && response.json().state === 'completed',
    );
    const reservation = record.json().result.structuredContent.reservation;
    expect(reservation).toMatchObject({ sku: 'sku-4', quantity: 4 });
    expect(record.json().operation).toBe('reserve_inventory');
    expect(await reservations('acme', 'sku-4')).toBe(1);
    // Retrying now is a replay of that same reservation, not a second one.
    const retry = await reserve('sku-4', 4, 'key-4');
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json().result.structuredContent.reservation).toEqual(reservation);
  });

  it('5. the stored result holds no secret or payment data', async () => {
    await setStock(platform.db, 'acme', 'sku-5', 10);
    const first = await reserve('sku-5', 1, 'key-5');
    const reserved = await done('acme', first.json().id);
    expect(Object.keys(reservationOf(reserved)).sort()).toEqual(['createdAt', 'quantity', 'reservationId', 'sku']);
    const charge = await api.app.inject({
      method: 'POST',
      url: '/v1/accounts/acct-5/charges',
      headers: { ...auth(), 'idempotency-key': 'key-5-charge' },
      payload: { cents: 1200 },
    });
    expect(charge.statusCode).toBe(201);
    expect(Object.keys(charge.json()).sort()).toEqual(['account', 'cents', 'chargeId', 'createdAt']);
    // Nothing the ledger, the task or the outbox kept carries the caller's credentials.
    const { rows } = await sql<{ text: string }>`
      SELECT result::text AS text FROM idempotency_keys WHERE tenant_id = 'acme' AND key IN ('key-5', 'key-5-charge')
      UNION ALL SELECT coalesce(result::text, '') || arguments::text FROM tasks WHERE id = ${first.json().id}
      UNION ALL SELECT payload::text FROM outbox WHERE tenant_id = 'acme'`.execute(platform.db);
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const { text } of rows) {
      expect(text).not.toContain(TOKEN_ACME);
      expect(text).not.toMatch(/token|secret|password|card|authorization/i);
    }
  });

  it('6. automatic retry is disabled when the client gave no key', async () => {
    await setStock(platform.db, 'acme', 'sku-6', 10);
    // A money movement without a key is refused outright.
    const charge = await api.app.inject({
      method: 'POST',
      url: '/v1/accounts/acct-6/charges',
      headers: auth(),
      payload: { cents: 100 },
    });
    expect(charge.statusCode).toBe(400);
    expect(charge.json().code).toBe('TG_IDEMPOTENCY_KEY_MISSING');

    // A reservation without a key runs, but once its attempt is lost it is not run again.
    const [unkeyed, keyed] = await withoutWorker(async () => {
      const tasks = [await createTask('sku-6', 1), await createTask('sku-6', 1, 'key-6')];
      for (const task of tasks) {
        // Attempt 1 went to a worker that died; the re-delivery is attempt 2.
        expect(await claimAttempt(platform.writer, task.id, 'worker-that-died')).not.toBeNull();
        const second = await claimAttempt(platform.writer, task.id, 'worker-after');
        expect(second).toMatchObject({ lostWorker: 'worker-that-died' });
        await runner().run(second);
      }
      return tasks as [TaskRecord, TaskRecord];
    });
    const refused = await platform.service.get('acme', unkeyed.id);
    expect(refused).toMatchObject({ status: 'failed', attempt: 2 });
    expect(JSON.stringify(refused.error)).toContain('never retried automatically');
    const items = await api.app.inject({ method: 'GET', url: '/v1/reconciliation-items', headers: auth() });
    expect(items.json().items).toEqual([
      expect.objectContaining({ taskId: unkeyed.id, tool: 'reserve_inventory', idempotencyKey: null }),
    ]);
    // With a key the same lost attempt is retried: the ledger makes the retry safe.
    expect(await platform.service.get('acme', keyed.id)).toMatchObject({ status: 'completed', attempt: 2 });
    expect(await reservations('acme', 'sku-6')).toBe(1);
  });

  it('7. a simulated subscription drop refetches the inventory record before deciding what to do', async () => {
    await setStock(platform.db, 'acme', 'sku-7', 5);
    held = { taskId: null, gate: barrier(), reached: barrier() };
    const created = await reserve('sku-7', 2, 'key-7');
    const taskId = created.json().id as string;
    await held.reached.promise;
    // The client watches the task; the stream drops while the outcome is still unknown to it.
    const server = await listen(api.app);
    const seen = await watchThenDrop(`${server}/v1/tasks/${taskId}/events`);
    expect(seen).toContain('working');
    expect(seen).not.toMatch(/completed/);
    held.gate.resolve();
    held = null;
    await done('acme', taskId);

    // Reconnect means refetch: the inventory record and the key's record decide, not memory.
    const decision = await decideAfterDrop('sku-7', 'key-7', 2);
    expect(decision.action).toBe('already-reserved');
    expect(decision.inventory).toMatchObject({ available: 3, reserved: 2, reservations: 1 });
    expect(await reservations('acme', 'sku-7')).toBe(1);

    // Had nothing committed, the same refetch says to retry with the same key.
    await setStock(platform.db, 'acme', 'sku-7b', 5);
    expect((await decideAfterDrop('sku-7b', 'key-7b', 2)).action).toBe('retry-with-same-key');
  });

  it('8. two ledger connections started at a barrier with the same key commit one reservation', async () => {
    await setStock(platform.db, 'acme', 'sku-8', 100);
    const [a, b] = [ledgerConnection(), ledgerConnection()];
    try {
      const effectEntered = barrier();
      const effectGate = barrier();
      const claim = claimFor('key-8', 'sku-8', 1);
      const first = executeOnce(a.db, claim, async (trx) => {
        effectEntered.resolve();
        await effectGate.promise;
        return reserveStock(trx, {
          tenantId: 'acme',
          sku: 'sku-8',
          quantity: 1,
          idempotencyKey: 'key-8',
          taskId: null,
        });
      });
      await effectEntered.promise;
      // B starts while A holds the claim uncommitted: B must wait on the key's unique index...
      const second = executeOnce(b.db, claim, async (trx) =>
        reserveStock(trx, { tenantId: 'acme', sku: 'sku-8', quantity: 1, idempotencyKey: 'key-8', taskId: null }),
      );
      await waitForTask(
        async () =>
          (
            await sql<{ n: string }>`
              SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%idempotency_keys%'`.execute(
              platform.db,
            )
          ).rows[0]?.n,
        (n) => Number(n) === 1,
      );
      effectGate.resolve();
      // ...and then find A's committed result instead of running the effect.
      const outcomes = await Promise.all([first, second]);
      expect(outcomes.map((outcome) => outcome.kind)).toEqual(['executed', 'replayed']);
      expect(outcomes[1]).toMatchObject({ result: (outcomes[0] as { result: unknown }).result });
      expect(await reservations('acme', 'sku-8')).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('8. (32 connections) thirty-two ledger connections at a barrier with one key commit one reservation', async () => {
    await setStock(platform.db, 'acme', 'sku-8x', 100);
    const connections = Array.from({ length: 32 }, () => ledgerConnection());
    try {
      await Promise.all(connections.map((connection) => sql`SELECT 1`.execute(connection.db)));
      const start = barrier();
      const claim = claimFor('key-8x', 'sku-8x', 3);
      const runs = connections.map(async (connection) => {
        await start.promise;
        return executeOnce(connection.db, claim, (trx) =>
          reserveStock(trx, { tenantId: 'acme', sku: 'sku-8x', quantity: 3, idempotencyKey: 'key-8x', taskId: null }),
        );
      });
      start.resolve();
      const outcomes = await Promise.all(runs);
      expect(outcomes.filter((outcome) => outcome.kind === 'executed')).toHaveLength(1);
      expect(outcomes.filter((outcome) => outcome.kind === 'replayed')).toHaveLength(31);
      expect(await reservations('acme', 'sku-8x')).toBe(1);
      expect(
        (
          await (platform.db as unknown as Kysely<LedgerDatabase>)
            .selectFrom('inventory')
            .select('available')
            .where('sku', '=', 'sku-8x')
            .executeTakeFirst()
        )?.available,
      ).toBe(97);
    } finally {
      await Promise.all(connections.map((connection) => connection.close()));
    }
  });

  it('8. (over the API) thirty-two concurrent POSTs with one key create one task', async () => {
    await setStock(platform.db, 'acme', 'sku-8y', 100);
    const responses = await Promise.all(Array.from({ length: 32 }, () => reserve('sku-8y', 1, 'key-8y')));
    const created = responses.filter((response) => response.statusCode === 201);
    expect(created).toHaveLength(1);
    // The others were told to come back (409 + Retry-After) or, if it had already finished, got it replayed.
    for (const response of responses.filter((r) => r.statusCode !== 201)) {
      expect([200, 409]).toContain(response.statusCode);
      if (response.statusCode === 409) {
        expect(response.json().code).toBe('TG_IDEMPOTENCY_KEY_IN_PROGRESS');
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      } else expect(response.json().id).toBe(created[0]?.json().id);
    }
    await done('acme', created[0]?.json().id);
    expect(await reservations('acme', 'sku-8y')).toBe(1);
  });

  it('9. mutating the first returned reservation object does not change a later replay', async () => {
    await setStock(platform.db, 'acme', 'sku-9', 10);
    const claim = claimFor('key-9', 'sku-9', 2);
    const effect = (trx: Parameters<Parameters<typeof executeOnce>[2]>[0]) =>
      reserveStock(trx, { tenantId: 'acme', sku: 'sku-9', quantity: 2, idempotencyKey: 'key-9', taskId: null });
    const first = await executeOnce(platform.db, claim, effect);
    expect(first.kind).toBe('executed');
    const original = structuredClone((first as { result: unknown }).result);
    const returned = (first as { result: { reservation: { quantity: number; sku: string } } }).result;
    returned.reservation.quantity = 999;
    returned.reservation.sku = 'tampered';
    const replay = await executeOnce(platform.db, claim, effect);
    expect(replay).toMatchObject({ kind: 'replayed', result: original });
    // Two replays are two objects: changing one leaves the next untouched.
    const again = await executeOnce(platform.db, claim, effect);
    expect((again as { result: unknown }).result).not.toBe((replay as { result: unknown }).result);
    expect(await reservations('acme', 'sku-9')).toBe(1);
  });

  it('10. closing the pool and restarting the process, then reconciling by key, finds the reservation', async () => {
    await setStock(platform.db, 'acme', 'sku-10', 10);
    const env = cleanEnv({ DATABASE_URL: database.url, PORT: '0', TASKGATE_TOKENS: `${TOKEN_ACME}:acme` });
    const first = startCli(['start', '--role', 'api,worker', '--no-migrate'], env);
    try {
      const base = await apiUrl(first);
      const created = await fetch(`${base}/v1/inventory/sku-10/reservations`, {
        method: 'POST',
        headers: { ...auth(), 'idempotency-key': 'key-10', 'content-type': 'application/json' },
        body: JSON.stringify({ quantity: 3 }),
      });
      expect(created.status).toBe(201);
      await done('acme', ((await created.json()) as { id: string }).id);
    } finally {
      await first.stop('SIGTERM');
    }
    const second = startCli(['start', '--role', 'api', '--no-migrate'], env);
    try {
      const base = await apiUrl(second);
      const record = await fetch(`${base}/v1/idempotency-keys/key-10`, { headers: auth() });
      expect(record.status).toBe(200);
      const body = (await record.json()) as { state: string; result: { structuredContent: { reservation: unknown } } };
      expect(body.state).toBe('completed');
      expect(body.result.structuredContent.reservation).toMatchObject({ sku: 'sku-10', quantity: 3 });
      const inventory = (await (await fetch(`${base}/v1/inventory/sku-10`, { headers: auth() })).json()) as unknown;
      expect(inventory).toMatchObject({ available: 7, reservations: 1 });
    } finally {
      await second.stop('SIGTERM');
    }
  }, 60_000);
});

describe('why keys exist', () => {
  it('two calls with new JSON-RPC ids and no key execute twice', async () => {
    await setStock(platform.db, 'acme', 'sku-d', 10);
    // Same arguments, two requests (a retry after a lost response looks exactly like this): two effects.
    const one = await reserve('sku-d', 2);
    const two = await reserve('sku-d', 2);
    expect(one.statusCode).toBe(201);
    expect(two.statusCode).toBe(201);
    expect(two.json().id).not.toBe(one.json().id);
    await Promise.all([done('acme', one.json().id), done('acme', two.json().id)]);
    expect(await reservations('acme', 'sku-d')).toBe(2);
  });
});

describe('the Idempotency-Key header', () => {
  it('answers 409 with Retry-After while the first call with the key still runs, then replays it', async () => {
    await setStock(platform.db, 'acme', 'sku-h', 10);
    held = { taskId: null, gate: barrier(), reached: barrier() };
    const first = await reserve('sku-h', 1, 'key-h');
    await held.reached.promise;
    const meanwhile = await reserve('sku-h', 1, 'key-h');
    expect(meanwhile.statusCode).toBe(409);
    expect(meanwhile.headers['retry-after']).toBe('1');
    held.gate.resolve();
    held = null;
    await done('acme', first.json().id);
    const later = await reserve('sku-h', 1, 'key-h');
    expect(later.statusCode).toBe(200);
    expect(later.headers['idempotent-replayed']).toBe('true');
  });

  it('refuses a header that disagrees with the idempotencyKey argument, and a key on a tool that takes none', async () => {
    const disagree = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { ...auth(), 'idempotency-key': 'one' },
      payload: { tool: 'reserve_inventory', arguments: { sku: 'x', quantity: 1, idempotencyKey: 'two' } },
    });
    expect(disagree.statusCode).toBe(400);
    expect(disagree.json().code).toBe('TG_IDEMPOTENCY_KEY_INVALID');
    const safe = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { ...auth(), 'idempotency-key': 'k' },
      payload: { tool: 'greet', arguments: { name: 'Ada' } },
    });
    expect(safe.statusCode).toBe(400);
    const count = await sql<{ n: string }>`SELECT count(*) AS n FROM tasks WHERE tool = 'greet'`.execute(platform.db);
    expect(Number(count.rows[0]?.n)).toBe(0);
  });

  it('takes the key from the idempotencyKey argument too, and lets a key whose task failed be used again', async () => {
    const first = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: auth(),
      payload: { tool: 'reserve_inventory', arguments: { sku: 'sku-none', quantity: 1, idempotencyKey: 'key-arg' } },
    });
    expect(first.statusCode).toBe(201);
    expect(first.json().idempotencyKey).toBe('key-arg');
    const ended = await done('acme', first.json().id);
    // A business refusal is a committed outcome: stored, and replayed as such.
    expect(ended.result).toMatchObject({ isError: true, structuredContent: { reason: 'unknown-sku' } });
    const replay = await reserve('sku-none', 1, 'key-arg');
    expect(replay.statusCode).toBe(200);
    // A task that ended without committing (cancelled before it ran) frees its key for a real retry.
    await setStock(platform.db, 'acme', 'sku-c', 5);
    const cancelled = await withoutWorker(async () => {
      const created = await reserve('sku-c', 1, 'key-c');
      await platform.service.cancel('acme', created.json().id, 'changed my mind');
      // While it is still working (the flag waits for a worker), the key is held.
      expect((await reserve('sku-c', 1, 'key-c')).statusCode).toBe(409);
      return created;
    });
    expect(await done('acme', cancelled.json().id)).toMatchObject({ status: 'cancelled' });
    const retry = await reserve('sku-c', 1, 'key-c');
    expect(retry.statusCode).toBe(201);
    expect(retry.json().id).not.toBe(cancelled.json().id);
    expect(await done('acme', retry.json().id)).toMatchObject({ status: 'completed' });
    expect(await reservations('acme', 'sku-c')).toBe(1);
  });
});

// --- helpers ---------------------------------------------------------------------------------

function claimFor(key: string, sku: string, quantity: number) {
  return {
    tenantId: 'acme',
    key,
    operation: 'reserve_inventory',
    fingerprint: keyFingerprint('reserve_inventory', { sku, quantity }),
    retentionMs: 86_400_000,
  };
}

/** An independent connection to the ledger, as a second process would have. */
function ledgerConnection() {
  const pool = createPool(database.url, { applicationName: 'ledger-test', max: 1 });
  const db = createKysely(pool);
  return { db, close: () => db.destroy() };
}

async function createTask(sku: string, quantity: number, key?: string): Promise<TaskRecord> {
  const submission = await platform.service.submit(
    'acme',
    { tool: 'reserve_inventory', arguments: { sku, quantity } },
    key === undefined ? {} : { idempotencyKey: key },
  );
  return submission.task;
}

function runner(): TaskRunner {
  const watcher = new CancelWatcher({ db: platform.db, listener: null, pollIntervalMs: 60_000, logger: silentLogger });
  return new TaskRunner({
    db: platform.db,
    announcer: new TaskAnnouncer(platform.db),
    tools: new ToolRegistry(builtinTools),
    watcher,
    logger: silentLogger,
    checkpointReadIntervalMs: 250,
    progressWriteIntervalMs: 100,
  });
}

async function listen(app: FastifyInstance): Promise<string> {
  if (!app.server.listening) await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

/** Opens the SSE stream, reads until the first status event, and drops the connection. */
function watchThenDrop(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: auth() }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (/"status"/.test(text)) {
          request.destroy();
          resolve(text);
        }
      });
    });
    request.on('error', (error) => (error.message.includes('socket hang up') ? undefined : reject(error)));
  });
}

/**
 * What a client does after its subscription dropped: refetch the authoritative records — the
 * inventory as it is now and the key's ledger entry — and only then decide.
 */
async function decideAfterDrop(sku: string, key: string, quantity: number) {
  const inventory = (await api.app.inject({ method: 'GET', url: `/v1/inventory/${sku}`, headers: auth() })).json();
  const record = await api.app.inject({ method: 'GET', url: `/v1/idempotency-keys/${key}`, headers: auth() });
  if (record.statusCode === 200 && record.json().state === 'completed') {
    return { action: 'already-reserved' as const, inventory };
  }
  if (record.statusCode === 200) return { action: 'wait-and-refetch' as const, inventory };
  return {
    action: inventory.available >= quantity ? ('retry-with-same-key' as const) : ('give-up' as const),
    inventory,
  };
}

async function apiUrl(process: ReturnType<typeof startCli>): Promise<string> {
  const line = await process.waitForLog((entry) => entry.msg === 'taskgate started');
  return String(line.url);
}
