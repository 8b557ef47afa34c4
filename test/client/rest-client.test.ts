import { REST_ROUTES, RestClient } from '@taskgate/client';
import { openReconciliationItem } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// The typed REST client checked against the document the API serves: every route it calls is in
// /openapi.json with that method and success status, and every answer it returns validates
// against the schema the document gives that response.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let base: string;
let openapi: {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
  components: object;
};
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await serveApi(platform, database.url);
  base = api.mcpUrl.href.replace(/\/mcp$/, '');
  openapi = (await (await fetch(`${base}/openapi.json`)).json()) as typeof openapi;
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const ajv = new Ajv({ strict: false, allErrors: true });
function expectValid(route: keyof typeof REST_ROUTES, value: unknown): void {
  const { method, path, status } = REST_ROUTES[route];
  const schema = openapi.paths[path]?.[method]?.responses[String(status)]?.content?.['application/json']?.schema;
  expect(schema, `${method} ${path} ${status} in /openapi.json`).toBeDefined();
  // Its $refs point into components: the schema is checked with them beside it.
  const validate = ajv.compile({ ...schema, components: openapi.components });
  expect(validate(value), JSON.stringify(validate.errors)).toBe(true);
}

describe('RestClient against /openapi.json', () => {
  it('calls only routes the document has, with their method and success status', () => {
    for (const { method, path, status } of Object.values(REST_ROUTES)) {
      expect(openapi.paths[path]?.[method]?.responses, `${method} ${path}`).toHaveProperty(String(status));
    }
  });

  it('lists, reads and cancels tasks, each answer as the document says', async () => {
    const rest = new RestClient({ baseUrl: api.mcpUrl.href });
    const created = await fetch(`${base}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 30, label: 'rest-client' } }),
    });
    const { id } = (await created.json()) as { id: string };
    const page = await rest.listTasks({ status: 'working', limit: 10 });
    expectValid('listTasks', page);
    expect(page.tasks.map((task) => task.id)).toContain(id);
    const task = await rest.getTask(id);
    expectValid('getTask', task);
    const cancelled = await rest.cancelTask(id, 'a test');
    expectValid('cancelTask', cancelled);
    expect(cancelled.id).toBe(id);
  });

  it('lists the tools offered, as the document says', async () => {
    const listed = await new RestClient({ baseUrl: base }).listTools();
    expectValid('listTools', listed);
    expect(listed.tools.map((tool) => tool.name)).toContain('slow_compute');
  });

  it("reads a key's ledger record, and says TG_IDEMPOTENCY_KEY_NOT_FOUND for none", async () => {
    const rest = new RestClient({ baseUrl: base });
    const charged = await fetch(`${base}/v1/accounts/acct-rest/charges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'rest-client-1' },
      body: JSON.stringify({ cents: 300 }),
    });
    expect(charged.status).toBe(201);
    const record = await rest.getIdempotencyKey('rest-client-1');
    expectValid('getIdempotencyKey', record);
    expect(record).toMatchObject({ key: 'rest-client-1', operation: 'charge_account' });
    const missing = await rest.getIdempotencyKey('no-such-key').then(
      () => null,
      (error: unknown) => error,
    );
    expect(isTaskgateError(missing) && missing.code).toBe('TG_IDEMPOTENCY_KEY_NOT_FOUND');
  });

  it('lists, reads and resolves reconciliation items, and says who resolved one first', async () => {
    const rest = new RestClient({ baseUrl: base });
    const task = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 1 } });
    await openReconciliationItem(platform.db, task.id, 'attempt 1 was lost');
    const page = await rest.listReconciliationItems({ state: 'open', limit: 5 });
    expectValid('listReconciliationItems', page);
    const item = page.items.find((candidate) => candidate.taskId === task.id);
    expect(item).toMatchObject({ kind: 'unknown_outcome', reason: 'attempt 1 was lost' });
    const shown = await rest.getReconciliationItem(item?.id ?? '');
    expectValid('getReconciliationItem', shown);
    const resolved = await rest.resolveReconciliationItem(shown.id, { resolution: 'checked', resolvedBy: 'ana' });
    expectValid('resolveReconciliationItem', resolved);
    expect(resolved).toMatchObject({ resolution: 'checked', resolvedBy: 'ana' });
    const twice = await rest.resolveReconciliationItem(shown.id, { resolution: 'again', resolvedBy: 'bo' }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(isTaskgateError(twice) && twice.code).toBe('TG_RECONCILIATION_ITEM_RESOLVED');
  });
});
