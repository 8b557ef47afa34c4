import { openReconciliationItem } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// /v1/reconciliation-items: list, show and resolve what a lost or abandoned call left behind.
const database = useTestDatabase();
const ACME = 'acme-token-0123456789';
const GLOBEX = 'globex-token-0123456789';
const auth = (token = ACME) => ({ authorization: `Bearer ${token}` });
const transfer = defineTool({
  name: 'wire_transfer',
  description: 'an unsafe call nobody runs here',
  inputSchema: { type: 'object' },
  retry: 'unsafe',
  async handler() {
    return { content: [] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
const itemIds: string[] = [];

beforeAll(async () => {
  // No worker: the items are opened as the worker would open them, for tasks nobody runs.
  platform = await startPlatform(database.url, { tools: [transfer] as never });
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
  for (let n = 0; n < 3; n += 1) {
    const task = await platform.service.create('acme', { tool: 'wire_transfer', arguments: { n } });
    await openReconciliationItem(platform.db, task.id, `attempt 1 was lost (${n})`);
    const { rows } = await sql<{ id: string }>`
      SELECT id::text AS id FROM reconciliation_items WHERE task_id = ${task.id}`.execute(platform.db);
    itemIds.push(rows[0]?.id as string);
  }
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const get = (url: string, token = ACME) => api.app.inject({ method: 'GET', url, headers: auth(token) });
const resolve = (id: string, payload: Record<string, unknown>, token = ACME) =>
  api.app.inject({ method: 'POST', url: `/v1/reconciliation-items/${id}/resolve`, headers: auth(token), payload });

describe('GET /v1/reconciliation-items', () => {
  it('lists open items newest first, with what is known, and pages with before', async () => {
    const page = await get('/v1/reconciliation-items?limit=2');
    expect(page.statusCode).toBe(200);
    const body = page.json();
    expect(body.items.map((item: { id: string }) => item.id)).toEqual([itemIds[2], itemIds[1]]);
    expect(body.items[0]).toMatchObject({
      tool: 'wire_transfer',
      kind: 'unknown_outcome',
      reason: 'attempt 1 was lost (2)',
      details: { status: 'working', attempt: 0, steps: [] },
      resolvedAt: null,
      resolvedBy: null,
    });
    expect(body.next).toBe(itemIds[1]);
    const rest = (await get(`/v1/reconciliation-items?limit=2&before=${body.next}`)).json();
    expect(rest).toEqual({ items: [expect.objectContaining({ id: itemIds[0] })], next: null });
  });

  it("shows another tenant nothing of acme's", async () => {
    expect((await get('/v1/reconciliation-items?state=all', GLOBEX)).json()).toEqual({ items: [], next: null });
    expectProblem(await get(`/v1/reconciliation-items/${itemIds[0]}`, GLOBEX), 404, 'TG_RECONCILIATION_ITEM_NOT_FOUND');
    expectProblem(
      await resolve(itemIds[0] as string, { resolution: 'x', resolvedBy: 'mallory' }, GLOBEX),
      404,
      'TG_RECONCILIATION_ITEM_NOT_FOUND',
    );
  });

  it('refuses a query it cannot use, without a 5xx', async () => {
    for (const query of [
      'state=closed',
      'limit=0',
      'limit=501',
      'limit=true',
      'before=abc',
      'before=0',
      'before=9223372036854775808',
      'before=9999999999999999999',
      'colour=red',
    ]) {
      expectProblem(await get(`/v1/reconciliation-items?${query}`), 400, 'TG_REQUEST_INVALID');
    }
    expectProblem(await get('/v1/reconciliation-items?before=%00'), 400, 'TG_JSON_STRING_INVALID');
  });
});

describe('GET /v1/reconciliation-items/:id', () => {
  it('shows one item, and answers 404 for an id that names none', async () => {
    const shown = await get(`/v1/reconciliation-items/${itemIds[1]}`);
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toMatchObject({ id: itemIds[1], reason: 'attempt 1 was lost (1)' });
    for (const id of ['0', 'abc', '99999999999999999999', '9223372036854775807', '1.5', '-2']) {
      expectProblem(await get(`/v1/reconciliation-items/${id}`), 404, 'TG_RECONCILIATION_ITEM_NOT_FOUND');
    }
  });
});

describe('POST /v1/reconciliation-items/:id/resolve', () => {
  it('resolves an open item once, with the note and who decided', async () => {
    const id = itemIds[0] as string;
    const resolved = await resolve(id, {
      resolution: '  the bank shows no transfer; refunded nothing ',
      resolvedBy: 'ana',
    });
    expect(resolved.statusCode).toBe(200);
    expect(resolved.json()).toMatchObject({
      id,
      resolution: 'the bank shows no transfer; refunded nothing',
      resolvedBy: 'ana',
      resolvedAt: expect.any(String),
    });
    const again = expectProblem(
      await resolve(id, { resolution: 'second opinion', resolvedBy: 'bo' }),
      409,
      'TG_RECONCILIATION_ITEM_RESOLVED',
    );
    expect(again.detail).toContain('by "ana"');
    // Gone from the open list, there in the resolved one.
    const open = (await get('/v1/reconciliation-items')).json();
    expect(open.items.map((item: { id: string }) => item.id)).not.toContain(id);
    const done = (await get('/v1/reconciliation-items?state=resolved')).json();
    expect(done.items.map((item: { id: string }) => item.id)).toEqual([id]);
  });

  it('refuses a body of the wrong shape instead of coercing it', async () => {
    const id = itemIds[1] as string;
    for (const payload of [
      {},
      { resolution: 'ok' },
      { resolution: 5, resolvedBy: 'ana' },
      { resolution: true, resolvedBy: 'ana' },
      { resolution: 'ok', resolvedBy: ['ana'] },
      { resolution: '', resolvedBy: 'ana' },
      { resolution: '   ', resolvedBy: 'ana' },
      { resolution: 'x'.repeat(4001), resolvedBy: 'ana' },
      { resolution: 'ok', resolvedBy: 'ana', extra: 1 },
    ]) {
      expectProblem(await resolve(id, payload), 400, 'TG_REQUEST_INVALID');
    }
    expectProblem(await resolve(id, { resolution: 'a\u0000b', resolvedBy: 'ana' }), 400, 'TG_JSON_STRING_INVALID');
    expect((await get(`/v1/reconciliation-items/${id}`)).json()).toMatchObject({ resolvedAt: null });
  });
});
