import { deleteExpiredKeys } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LedgerDatabase } from '../../examples/ledger/ledger-schema.ts';
import { listCharges as listLedgerCharges } from '../../examples/ledger/ledger-store.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// charge_account: the synchronous REST operation (one-statement ledger) and the tool (a task) share
// one ledger, one result shape and one outbox.
const database = useTestDatabase();
const listCharges = (db: unknown, tenant: string, account: string) =>
  listLedgerCharges(db as Kysely<LedgerDatabase>, tenant, account);
let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const charge = (account: string, cents: number, key?: string) =>
  api.app.inject({
    method: 'POST',
    url: `/v1/accounts/${account}/charges`,
    headers: key === undefined ? {} : { 'idempotency-key': key },
    payload: { cents },
  });

describe('POST /v1/accounts/:account/charges', () => {
  it('charges once per key: 201, then 200 with the stored charge and Idempotent-Replayed', async () => {
    const first = await charge('acct-1', 1200, 'checkout-7');
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const retry = await charge('acct-1', 1200, 'checkout-7');
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect(await listCharges(platform.db, 'default', 'acct-1')).toHaveLength(1);
    // The charge and its event committed together.
    const { rows } = await sql<{ payload: { chargeId: string } }>`
      SELECT payload FROM outbox WHERE event_type = 'account.charged' AND aggregate_id = 'acct-1'`.execute(platform.db);
    expect(rows.map((row) => row.payload.chargeId)).toEqual([first.json().chargeId]);
  });

  it('refuses another amount under the same key, and a charge without a key', async () => {
    await charge('acct-2', 500, 'k-2');
    const other = await charge('acct-2', 501, 'k-2');
    expect(other.statusCode).toBe(422);
    expect(other.json()).toMatchObject({ code: 'TG_IDEMPOTENCY_KEY_MISMATCH' });
    const missing = await charge('acct-2', 500);
    expect(missing.statusCode).toBe(400);
    expect(missing.json()).toMatchObject({ code: 'TG_IDEMPOTENCY_KEY_MISSING' });
    expect(await listCharges(platform.db, 'default', 'acct-2')).toHaveLength(1);
  });

  it('replays across paths: a key first used by the tool is replayed by the REST operation, and back', async () => {
    const created = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      payload: { tool: 'charge_account', arguments: { account: 'acct-3', cents: 300, idempotencyKey: 'k-3' } },
    });
    expect(created.statusCode).toBe(201);
    const done = await waitForTask(
      () => platform.service.get('default', created.json().id),
      (task) => task.status === 'completed',
    );
    const viaRest = await charge('acct-3', 300, 'k-3');
    expect(viaRest.statusCode).toBe(200);
    expect(viaRest.json()).toEqual(
      (done.result as { structuredContent: { charge: unknown } }).structuredContent.charge,
    );

    const restFirst = await charge('acct-4', 400, 'k-4');
    const viaTool = await platform.service.submit('default', {
      tool: 'charge_account',
      arguments: { account: 'acct-4', cents: 400, idempotencyKey: 'k-4' },
    });
    expect(viaTool.replayed).toBe(true);
    expect(viaTool.task.result).toMatchObject({ structuredContent: { charge: restFirst.json() } });
    expect(await listCharges(platform.db, 'default', 'acct-4')).toHaveLength(1);
  });

  it('answers 409 while a task still holds the key', async () => {
    await platform.worker?.stop();
    try {
      await platform.service.submit('default', {
        tool: 'charge_account',
        arguments: { account: 'acct-5', cents: 500, idempotencyKey: 'k-5' },
      });
      const meanwhile = await charge('acct-5', 500, 'k-5');
      expect(meanwhile.statusCode).toBe(409);
      expect(meanwhile.headers['retry-after']).toBe('1');
    } finally {
      await platform.startWorker();
    }
  });

  it('takes over a key whose retention window ended', async () => {
    expect((await charge('a6', 6, 'k-6')).statusCode).toBe(201);
    await sql`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'k-6'`.execute(
      platform.db,
    );
    // The key exists, so this goes the general path, which takes the expired key over.
    expect((await charge('a6', 6, 'k-6')).statusCode).toBe(201);
    expect(await listCharges(platform.db, 'default', 'a6')).toHaveLength(2);
  });

  it('group-commits concurrent charges: distinct keys each commit once, a key repeated in one batch replays', async () => {
    const responses = await Promise.all([
      ...Array.from({ length: 40 }, (_, n) => charge('acct-7', 100 + n, `k-7-${n}`)),
      charge('acct-7', 999, 'k-7-dup'),
      charge('acct-7', 999, 'k-7-dup'),
      charge('acct-7', 998, 'k-7-dup'),
    ]);
    const statuses = responses.map((response) => response.statusCode);
    expect(statuses.slice(0, 40).every((status) => status === 201)).toBe(true);
    expect(statuses.slice(40).sort()).toEqual([200, 201, 422]);
    const charges = await listCharges(platform.db, 'default', 'acct-7');
    expect(charges).toHaveLength(41);
    expect(new Set(charges.map((c) => c.chargeId)).size).toBe(41);
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM outbox WHERE aggregate_id = 'acct-7'`.execute(platform.db);
    expect(Number(rows[0]?.n)).toBe(41);
  });

  it('sweeps keys past their retention window, but not a pending key whose task still runs', async () => {
    await charge('acct-8', 800, 'k-8-old');
    await platform.worker?.stop();
    try {
      await platform.service.submit('default', {
        tool: 'charge_account',
        arguments: { account: 'acct-8', cents: 801, idempotencyKey: 'k-8-running' },
      });
      await sql`UPDATE idempotency_keys SET expires_at = now() - interval '1 second'
                WHERE key IN ('k-8-old', 'k-8-running')`.execute(platform.db);
      expect(await deleteExpiredKeys(platform.db)).toBe(1);
      const { rows } = await sql<{ key: string }>`
        SELECT key FROM idempotency_keys WHERE key IN ('k-8-old', 'k-8-running')`.execute(platform.db);
      expect(rows.map((row) => row.key)).toEqual(['k-8-running']);
    } finally {
      await platform.startWorker();
    }
  });
});
