import { randomBytes } from 'node:crypto';
import { TaskEventsHub, TaskService } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testCore } from '../support/stdio-client.ts';
import { barrier, type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// A 2026-07-28 retry (R2) answers a durable task's input and goes away during an outage: its
// cancel cannot be written and waits for a retry (apps/api/src/tasks/cancel-retries.ts). Before
// the retry fires, the client sends its retry again with the same requestState (R3), which adopts
// the task and waits on it. The late cancel is R2's: it must not end the task R3 waits on. Each
// cancel is fenced by the task's adoptions as its request saw them (migration 0017).
const working = barrier();
const finish = barrier();
const askThenWork = defineTool({
  name: 'ask_then_work',
  description: 'asks a name, then works until the test lets it finish',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  retry: 'safe',
  async handler(_input, ctx) {
    const { who } = await ctx.input({
      who: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'Name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
        },
      },
    });
    working.resolve();
    await Promise.race([
      finish.promise,
      new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    ]);
    return { content: [{ type: 'text', text: `Hello, ${(who as { content: { name: string } }).content.name}` }] };
  },
});

const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [askThenWork] });
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
});
afterAll(async () => {
  await hub.stop();
  await platform.stop();
});

describe('a cancel retried after an outage', () => {
  it('does not end a task that a newer retry adopted meanwhile', async () => {
    const service = new TaskService({
      db: platform.db,
      boss: platform.boss,
      announcer: platform.announcer,
      tools: platform.tools,
      defaultTtlMs: 3_600_000,
      pollIntervalMs: 500,
      instanceId: 'api-a',
      cancelRetryDelaysMs: { first: 100, max: 100 },
    });
    const core = testCore(platform, hub, { requestStateKey: randomBytes(32), service });
    const call = (signal: AbortSignal, extra: Record<string, unknown> = {}) =>
      core.request(
        'tools/call',
        { name: 'ask_then_work', arguments: {}, ...extra },
        { tenantId: 'default', signal, revision: '2026-07-28', clientCapabilities: { elicitation: {} } },
      );
    // R1 parks the task and is answered input_required, with a state naming it.
    const first = (await call(new AbortController().signal)) as unknown as { result: { requestState: string } };
    const { requestState } = first.result;
    const { rows } = await sql<{ id: string }>`
      SELECT id FROM tasks WHERE tool = 'ask_then_work' AND status = 'input_required'`.execute(platform.db);
    const id = rows[0]?.id as string;
    const answers = { who: { action: 'accept', content: { name: 'Ada' } } };

    // R2 answers it; the handler runs on.
    const gone = new AbortController();
    const second = call(gone.signal, { requestState, inputResponses: answers });
    await working.promise;
    // The database is unreachable as R2's client goes away: the cancel's first write fails.
    const real = service.cancel.bind(service);
    service.cancel = async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    };
    gone.abort(new Error('the client went away'));
    expect(await second).toBeNull();
    expect(service.cancelsPending).toBe(1);
    service.cancel = real;

    // R3, the same retry sent again, adopts the task (its second adoption) and waits on it.
    const third = call(new AbortController().signal, { requestState, inputResponses: answers });
    await waitForTask(
      async () =>
        (await sql<{ adoptions: number }>`SELECT adoptions FROM tasks WHERE id = ${id}::uuid`.execute(platform.db))
          .rows[0]?.adoptions,
      (adoptions) => adoptions === 2,
    );
    // R2's cancel is retried now, and finds the task adopted since: it changes nothing.
    await waitForTask(
      async () => service.cancelsPending,
      (pending) => pending === 0,
    );
    const now = await platform.service.get('default', id);
    expect(now).toMatchObject({ status: 'working', cancelRequestedAt: null });

    finish.resolve();
    expect(await third).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'Hello, Ada' }] } });
    service.stop();
  }, 30_000);
});
