import type { AddressInfo } from 'node:net';
import { listTasksStatement } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { planOf } from '../support/query-plans.ts';
import { openSse } from '../support/sse-client.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// GET /v1/tasks's filters (tool, time, id, idempotency key), the list-wide stream the console's
// tasks page holds (GET /v1/tasks/events), and the plans that keep both fast on millions of rows.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let base: string;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await serveApi(platform, database.url, { events: { pollMs: 100, keepaliveMs: 15_000 } });
  base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const list = async (query: string) => {
  const answer = await api.app.inject({ method: 'GET', url: `/v1/tasks?${query}` });
  expect(answer.statusCode, answer.body).toBe(200);
  return answer.json() as { tasks: { id: string; tool: string; createdAt: string }[]; nextCursor: string | null };
};

describe('GET /v1/tasks filters', () => {
  it('filters by tool, creation time, id and idempotency key, and pages within a filter', async () => {
    const greets = [];
    for (let n = 0; n < 5; n += 1) {
      greets.push(await platform.service.create('default', { tool: 'greet', arguments: { name: `g${n}` } }));
    }
    const slow = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 30 } });
    const other = await platform.service.create('other', { tool: 'greet', arguments: { name: 'other' } });

    const byTool = await list('tool=greet&limit=3');
    expect(byTool.tasks.map((task) => task.id)).toEqual(
      greets
        .slice(2)
        .reverse()
        .map((task) => task.id),
    );
    expect(byTool.nextCursor).not.toBeNull();
    const rest = await list(`tool=greet&limit=3&cursor=${byTool.nextCursor}`);
    expect(rest.tasks.map((task) => task.id)).toEqual(
      greets
        .slice(0, 2)
        .reverse()
        .map((task) => task.id),
    );
    expect(rest.nextCursor).toBeNull();

    const middle = greets[2]?.createdAt.toISOString() as string;
    const after = await list(`tool=greet&createdAfter=${middle}`);
    expect(after.tasks.map((task) => task.id)).toEqual(
      greets
        .slice(2)
        .reverse()
        .map((task) => task.id),
    );
    const before = await list(`createdBefore=${middle}&tool=greet`);
    expect(before.tasks.map((task) => task.id)).toEqual(
      greets
        .slice(0, 2)
        .reverse()
        .map((task) => task.id),
    );

    expect((await list(`id=${slow.id}`)).tasks.map((task) => task.id)).toEqual([slow.id]);
    // Another tenant's task is not found by its id either.
    expect((await list(`id=${other.id}`)).tasks).toEqual([]);
    expect((await list('tool=no_such_tool')).tasks).toEqual([]);
  });

  it("finds a task by the idempotency key it was created with, only in the key's tenant", async () => {
    const created = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { 'idempotency-key': 'order-4711' },
      payload: { tool: 'charge_account', arguments: { account: 'acct-1', cents: 250 } },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect((await list('idempotencyKey=order-4711')).tasks.map((task) => task.id)).toEqual([created.json().id]);
    expect((await list('idempotencyKey=order-4712')).tasks).toEqual([]);
    const elsewhere = await platform.service.list('other', { limit: 10, idempotencyKey: 'order-4711' });
    expect(elsewhere.tasks).toEqual([]);
  });

  it('refuses a filter it cannot use, without a 5xx', async () => {
    for (const query of [
      'tool=',
      `tool=${'x'.repeat(129)}`,
      'createdAfter=yesterday',
      'createdAfter=2026-13-01T00:00:00Z',
      'createdBefore=1700000000',
      'id=not-a-uuid',
      'id=123',
      'idempotencyKey=',
      `idempotencyKey=${'k'.repeat(256)}`,
      'limit=1001',
      'limit=0',
      'limit=true',
      'colour=red',
    ]) {
      expectProblem(await api.app.inject({ method: 'GET', url: `/v1/tasks?${query}` }), 400, 'TG_REQUEST_INVALID');
    }
    expectProblem(await api.app.inject({ method: 'GET', url: '/v1/tasks?tool=%00' }), 400, 'TG_JSON_STRING_INVALID');
  });
});

describe('GET /v1/tasks/events', () => {
  it('starts with the page, then sends changes of its tasks and new tasks as they come', async () => {
    const first = await platform.service.create('live', { tool: 'slow_compute', arguments: { seconds: 60 } });
    const stream = openSse(new URL(`${base}/v1/tasks/events?limit=2`), { method: 'GET', headers: {} });
    try {
      expect(await stream.status).toBe(200);
      // The open server takes every call as tenant "default": the page is default's.
      await stream.until(() => stream.events.some((event) => event.event === 'snapshot'));
      const snapshot = stream.events.find((event) => event.event === 'snapshot')?.data as {
        tasks: { id: string }[];
      };
      expect(snapshot.tasks.map((task) => task.id)).not.toContain(first.id);
    } finally {
      stream.close();
    }
  });

  it('announces a new task, then its status change, and keeps the first page at its size', async () => {
    const shown = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 60 } });
    const stream = openSse(new URL(`${base}/v1/tasks/events?limit=1&tool=slow_compute`), {
      method: 'GET',
      headers: {},
    });
    try {
      await stream.until(() => stream.events.some((event) => event.event === 'snapshot'));
      const snapshot = stream.events[0]?.data as { tasks: { id: string }[] };
      expect(snapshot.tasks.map((task) => task.id)).toEqual([shown.id]);
      // A task of another tool does not match the page's filter; one of this tool enters it.
      await platform.service.create('default', { tool: 'greet', arguments: { name: 'not shown' } });
      const entering = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 60 } });
      await stream.until(() => stream.events.some((event) => event.event === 'created'));
      const created = stream.events.filter((event) => event.event === 'created').map((event) => event.data.id);
      expect(created).toEqual([entering.id]);
      // The page holds one task: `shown` left it, so its cancel is not sent; the new one's is.
      await platform.service.cancel('default', shown.id, null, { signal: 'rest_cancel' });
      await platform.service.cancel('default', entering.id, 'test', { signal: 'rest_cancel' });
      await stream.until(() =>
        stream.events.some(
          (event) =>
            event.event === 'tasks' &&
            (event.data.tasks as { id: string; cancelRequestedAt: string | null }[]).some(
              (task) => task.id === entering.id && task.cancelRequestedAt !== null,
            ),
        ),
      );
      const sentTasks = stream.events.flatMap((event) =>
        event.event === 'tasks' ? (event.data.tasks as { id: string }[]).map((task) => task.id) : [],
      );
      expect(sentTasks).not.toContain(shown.id);
    } finally {
      stream.close();
    }
  });

  it('on a later page, announces new tasks without letting them in, and refuses a bad query', async () => {
    for (let n = 0; n < 3; n += 1)
      await platform.service.create('pages', { tool: 'greet', arguments: { name: `p${n}` } });
    const page1 = await platform.service.list('default', { limit: 1 });
    const cursor = page1.nextCursor as string;
    const stream = openSse(new URL(`${base}/v1/tasks/events?limit=1&cursor=${encodeURIComponent(cursor)}`), {
      method: 'GET',
      headers: {},
    });
    try {
      await stream.until(() => stream.events.some((event) => event.event === 'snapshot'));
      const fresh = await platform.service.create('default', { tool: 'greet', arguments: { name: 'fresh' } });
      await stream.until(() => stream.events.some((event) => event.event === 'created' && event.data.id === fresh.id));
    } finally {
      stream.close();
    }
    expectProblem(
      await api.app.inject({ method: 'GET', url: '/v1/tasks/events?status=done' }),
      400,
      'TG_REQUEST_INVALID',
    );
  });
});

describe('the plans of the list and search queries', () => {
  const plan = (query: Parameters<typeof listTasksStatement>[1], tenant = 'bulk-3') =>
    planOf(platform.db, listTasksStatement(tenant, query));

  it('reads an index for every filter, never the whole table, on a table of 300,000 tasks', {
    timeout: 90_000,
  }, async () => {
    // 20 tenants x 50 tools, spread over the last 5 minutes; statistics as a large table has them.
    await sql`
      INSERT INTO tasks (tenant_id, tool, status, finished_at, created_at)
      SELECT 'bulk-' || (g % 20), 'tool_' || ((g / 20) % 50),
             CASE WHEN g % 10 = 0 THEN 'working' ELSE 'completed' END,
             CASE WHEN g % 10 = 0 THEN NULL ELSE now() END,
             now() - make_interval(secs => g / 1000.0)
      FROM generate_series(1, 300000) AS g`.execute(platform.db);
    await sql`
      INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, task_id, expires_at)
      SELECT tenant_id, 'key-' || id, 'tasks', repeat('0', 64), id, now() + interval '1 day' FROM tasks WHERE tenant_id = 'bulk-3'`.execute(
      platform.db,
    );
    await sql`ANALYZE tasks`.execute(platform.db);
    await sql`ANALYZE idempotency_keys`.execute(platform.db);
    const sample = await sql<{ id: string; created_at: string }>`
      SELECT id, created_at::text FROM tasks WHERE tenant_id = 'bulk-3' ORDER BY created_at DESC LIMIT 1 OFFSET 5000`.execute(
      platform.db,
    );
    const row = sample.rows[0] as { id: string; created_at: string };
    const limit = 100;
    const cases: [string, Parameters<typeof listTasksStatement>[1], string[]][] = [
      ['newest first', { limit }, ['tasks_tenant_created_idx']],
      ['a later page', { limit, after: { createdAt: row.created_at, id: row.id } }, ['tasks_tenant_created_idx']],
      ['by status', { limit, status: 'working' }, ['tasks_tenant_status_created_idx']],
      ['by tool', { limit, tool: 'tool_7' }, ['tasks_tenant_tool_created_idx']],
      [
        'by tool, a later page',
        { limit, tool: 'tool_7', after: { createdAt: row.created_at, id: row.id } },
        ['tasks_tenant_tool_created_idx'],
      ],
      ['by time', { limit, createdAfter: new Date(Date.now() - 60_000) }, ['tasks_tenant_created_idx']],
      ['by id', { limit, id: row.id }, ['tasks_tenant_id_id_key', 'tasks_pkey']],
      ['by idempotency key', { limit, idempotencyKey: `key-${row.id}` }, ['idempotency_keys_pkey']],
    ];
    for (const [name, query, wanted] of cases) {
      const { indexes, nodes } = await plan(query);
      expect(nodes, name).not.toContain('Seq Scan');
      expect(
        indexes.some((index) => wanted.includes(index)),
        `${name}: reads ${indexes.join(', ')}`,
      ).toBe(true);
    }
    // Both at once, by their own index: a status of a tool that matches no row (tool_7 is never
    // working here) must not be looked for through every task of the tool or of the status.
    const both = await plan({ limit, tool: 'tool_7', status: 'working' });
    expect(both.nodes).not.toContain('Seq Scan');
    expect(both.indexes).toEqual(['tasks_tenant_tool_status_created_idx']);
  });
});
