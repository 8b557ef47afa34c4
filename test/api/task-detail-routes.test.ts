import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// What the console's task page reads beside the task: GET /v1/tasks/:id/timeline (events, the two
// clocks, trace, holder), /steps and /logs — tenant-scoped like every /v1/tasks route.
const database = useTestDatabase();
const stepped = defineTool<{ n: number }>({
  name: 'stepped',
  description: 'Two durable steps (one irreversible) and two log messages.',
  inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
  retry: 'safe',
  timeouts: { idleMs: 30_000, maxMs: 120_000 },
  async handler({ n }, ctx) {
    const first = await ctx.step('look-up', async () => ({ found: n }));
    ctx.log('info', { looked: first });
    await ctx.step('charge', async () => ({ charged: n * 2 }), { irreversible: true });
    ctx.log('warning', 'charged', 'billing');
    return { content: [{ type: 'text', text: 'done' }] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
const ACME = 'acme-detail-token-0123456789';
const GLOBEX = 'globex-detail-token-0123456789';
const get = (url: string, token = ACME) =>
  api.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [stepped] as never });
  await platform.startWorker();
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

describe('a finished task', () => {
  let id: string;
  beforeAll(async () => {
    const task = await platform.service.create('acme', {
      tool: 'stepped',
      arguments: { n: 21 },
      logLevel: 'debug',
      traceParent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
    id = task.id;
    await waitForTask(
      () => platform.service.get('acme', id),
      (read) => read.status === 'completed',
    );
  });

  it('has a timeline from created to completed, with its attempt, clocks and trace', async () => {
    const answer = await get(`/v1/tasks/${id}/timeline`);
    expect(answer.statusCode, answer.body).toBe(200);
    const body = answer.json();
    const types = body.events.map((event: { type: string }) => event.type);
    expect(types[0]).toBe('created');
    expect(types).toContain('attempt_started');
    expect(body.events.at(-1)).toMatchObject({ type: 'status_changed', fromStatus: 'working', toStatus: 'completed' });
    expect(body.clocks).toMatchObject({ idleTimeoutMs: 30_000, maxTimeoutMs: 120_000 });
    expect(Date.parse(body.clocks.now)).not.toBeNaN();
    expect(body.traceParent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(body.toolFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(body.next).toBeNull();
    // Paged by the event id.
    const first = (await get(`/v1/tasks/${id}/timeline?limit=1`)).json();
    expect(first.events).toHaveLength(1);
    expect(first.next).toBe(first.events[0].id);
    const after = (await get(`/v1/tasks/${id}/timeline?after=${first.next}`)).json();
    expect(after.events.map((event: { id: string }) => event.id)).toEqual(
      body.events.slice(1).map((event: { id: string }) => event.id),
    );
  });

  it('lists its steps, the irreversible one marked, and its log messages', async () => {
    const steps = (await get(`/v1/tasks/${id}/steps`)).json().steps;
    expect(steps).toEqual([
      expect.objectContaining({
        name: 'look-up',
        state: 'done',
        irreversible: false,
        attempt: 1,
        result: { found: 21 },
      }),
      expect.objectContaining({
        name: 'charge',
        state: 'done',
        irreversible: true,
        attempt: 1,
        result: { charged: 42 },
      }),
    ]);
    const logs = (await get(`/v1/tasks/${id}/logs`)).json();
    expect(logs).toEqual({
      messages: [
        { seq: 1, level: 'info', logger: null, data: { looked: { found: 21 } } },
        { seq: 2, level: 'warning', logger: 'billing', data: 'charged' },
      ],
      next: null,
    });
    expect(
      (await get(`/v1/tasks/${id}/logs?after=1&limit=1`)).json().messages.map((m: { seq: number }) => m.seq),
    ).toEqual([2]);
  });

  it("is another tenant's 404 on every route, and a bad query is a 400, never a 5xx", async () => {
    for (const path of ['timeline', 'steps', 'logs']) {
      expectProblem(await get(`/v1/tasks/${id}/${path}`, GLOBEX), 404, 'TG_TASK_NOT_FOUND');
      expectProblem(await get(`/v1/tasks/not-a-uuid/${path}`), 404, 'TG_TASK_NOT_FOUND');
      expectProblem(await get(`/v1/tasks/0f8c7a4e-1111-4a4a-8b8b-123456789abc/${path}`), 404, 'TG_TASK_NOT_FOUND');
    }
    for (const query of [
      'after=abc',
      'after=-1',
      'after=1.5',
      'after=9999999999999999999',
      'limit=0',
      'limit=1001',
      'limit=true',
      'x=1',
    ]) {
      expectProblem(await get(`/v1/tasks/${id}/timeline?${query}`), 400, 'TG_REQUEST_INVALID');
    }
    for (const query of ['after=abc', 'after=10000000000', 'limit=0', 'limit=1001']) {
      expectProblem(await get(`/v1/tasks/${id}/logs?${query}`), 400, 'TG_REQUEST_INVALID');
    }
  });
});
