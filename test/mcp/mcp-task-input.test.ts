import { listTaskEvents } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { conformanceTools } from '../support/example-tools.ts';
import { injectMcp } from '../support/mcp-http.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// input_required through the Tasks extension: a handler's ctx.input() parks its task (no worker
// waits), tasks/get shows the requests, tasks/update answers them (all at once or some at a time),
// and the task runs again and completes. Also the ask-first round trip of test_tool_with_task.
const database = useTestDatabase();
const CAPABILITIES = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } };

let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: conformanceTools });
  await platform.startWorker();
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function call(method: string, params: Record<string, unknown>, capabilities: object = CAPABILITIES) {
  const response = await injectMcp(api.app, method, params, { capabilities });
  return response.json() as { result?: Record<string, unknown>; error?: { code: number; data?: unknown } };
}

async function get(taskId: string): Promise<Record<string, unknown>> {
  return (await call('tasks/get', { taskId })).result as Record<string, unknown>;
}

function until(taskId: string, status: string) {
  return waitForTask(
    () => get(taskId),
    (task) => task.status === status || ['completed', 'failed', 'cancelled'].includes(task.status as string),
  );
}

async function jobsOf(taskId: string): Promise<string[]> {
  const { rows } = await sql<{ state: string }>`
    SELECT state FROM pgboss.job WHERE data->>'taskId' = ${taskId} ORDER BY created_on`.execute(platform.db);
  return rows.map((row) => row.state);
}

describe('input_required', () => {
  it('parks the task with its requests, frees the worker, and completes once tasks/update answers', async () => {
    const created = (await call('tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } })).result;
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created?.taskId as string;
    const parked = await until(taskId, 'input_required');
    expect(parked).toMatchObject({
      status: 'input_required',
      inputRequests: {
        confirm: {
          method: 'elicitation/create',
          params: { mode: 'form', message: 'Delete a.txt?', requestedSchema: { type: 'object' } },
        },
      },
    });
    // Nothing holds the task while it waits: no worker, and its job is done.
    const row = await platform.service.get('default', taskId);
    expect(row.workerId).toBeNull();
    // (The job is retired right after the attempt returns, in the worker's next completion batch.)
    expect(
      await waitForTask(
        () => jobsOf(taskId),
        (states) => states[0] === 'completed',
      ),
    ).toEqual(['completed']);

    const ack = await call('tasks/update', {
      taskId,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    });
    expect(ack.result).toEqual({ resultType: 'complete' });
    const done = await until(taskId, 'completed');
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: 'a.txt would be deleted' }] } });
    expect(done).not.toHaveProperty('inputRequests');
    const history = (await listTaskEvents(platform.db, 'default', taskId))
      .filter((event) => event.type === 'status_changed' || event.type === 'attempt_started')
      .map((event) => [event.type, event.fromStatus, event.toStatus, event.attempt]);
    expect(history).toEqual([
      ['attempt_started', null, null, 1],
      ['status_changed', 'working', 'input_required', 1],
      ['status_changed', 'input_required', 'working', 1],
      ['attempt_started', null, null, 2],
      ['status_changed', 'working', 'completed', 2],
    ]);
  });

  it('refuses an answer its requestedSchema refuses: -32602, and the task goes on waiting for a good one', async () => {
    const created = (await call('tools/call', { name: 'confirm_delete', arguments: { filename: 'b.txt' } })).result;
    const taskId = created?.taskId as string;
    await until(taskId, 'input_required');
    // The form asks for an object; a string content is not one, and an unknown action is no answer.
    for (const answer of [{ action: 'accept', content: 'yes' }, { action: 'sure' }, 'accept']) {
      const refused = await call('tasks/update', { taskId, inputResponses: { confirm: answer } });
      expect(refused.error?.code, JSON.stringify(refused)).toBe(-32602);
      expect(refused.error?.data).toMatchObject({ code: 'TG_INPUT_RESPONSES_INVALID' });
    }
    expect(await get(taskId)).toMatchObject({
      status: 'input_required',
      inputRequests: { confirm: expect.any(Object) },
    });
    await call('tasks/update', {
      taskId,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    });
    expect(await until(taskId, 'completed')).toMatchObject({ status: 'completed' });
  });

  it('takes answers some at a time: the next tasks/get already shows what is left, unknown keys are ignored', async () => {
    const created = (await call('tools/call', { name: 'multi_input', arguments: {} })).result;
    const taskId = created?.taskId as string;
    const parked = await until(taskId, 'input_required');
    const keys = Object.keys(parked.inputRequests as object);
    expect(keys).toEqual(['first', 'second']);

    const partial = await call('tasks/update', {
      taskId,
      inputResponses: {
        first: { action: 'accept', content: { name: 'partial-1', confirm: true } },
        'unknown-key': { ignored: true },
      },
    });
    expect(partial.result).toEqual({ resultType: 'complete' });
    const waiting = await get(taskId);
    expect(waiting.status).toBe('input_required');
    expect(Object.keys(waiting.inputRequests as object)).toEqual(['second']);
    // An answer to a key already answered is ignored: the first answer stands.
    await call('tasks/update', { taskId, inputResponses: { first: { action: 'accept', content: { name: 'late' } } } });
    expect(Object.keys((await get(taskId)).inputRequests as object)).toEqual(['second']);

    await call('tasks/update', {
      taskId,
      inputResponses: { second: { action: 'accept', content: { name: 'partial-2', confirm: true } } },
    });
    const done = await until(taskId, 'completed');
    expect(done).toMatchObject({ result: { content: [{ text: 'answers: partial-1, partial-2' }] } });
  });

  it('cancels a parked task at once: nothing has to reach a checkpoint', async () => {
    const created = (await call('tools/call', { name: 'confirm_delete', arguments: { filename: 'b.txt' } })).result;
    const taskId = created?.taskId as string;
    await until(taskId, 'input_required');
    expect((await call('tasks/cancel', { taskId })).result).toEqual({ resultType: 'complete' });
    const ended = await get(taskId);
    expect(ended).toMatchObject({ status: 'cancelled' });
    expect(ended).not.toHaveProperty('inputRequests');
    const trace = (await listTaskEvents(platform.db, 'default', taskId))
      .filter((event) => event.type === 'cancel_requested' || event.toStatus === 'cancelled')
      .map((event) => event.type);
    expect(trace).toEqual(['cancel_requested', 'status_changed']);
    // An answer after the cancel changes nothing.
    await call('tasks/update', {
      taskId,
      inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    });
    expect(await get(taskId)).toMatchObject({ status: 'cancelled' });
  });

  it('asks first in the call, then creates the task with the answer (test_tool_with_task)', async () => {
    const round1 = (await call('tools/call', { name: 'test_tool_with_task', arguments: {} })).result;
    expect(round1).toMatchObject({
      resultType: 'input_required',
      inputRequests: { name: { method: 'elicitation/create', params: { mode: 'form' } } },
    });
    expect(round1).not.toHaveProperty('taskId');
    // An answer the form refuses (a number is not a name, and name is required) creates no task.
    for (const content of [{ name: 42 }, {}]) {
      const refused = await call('tools/call', {
        name: 'test_tool_with_task',
        arguments: {},
        inputResponses: { name: { action: 'accept', content } },
      });
      expect(refused.error).toMatchObject({ code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID', key: 'name' } });
    }
    const round2 = (
      await call('tools/call', {
        name: 'test_tool_with_task',
        arguments: {},
        inputResponses: { name: { action: 'accept', content: { name: 'Alice' } } },
      })
    ).result;
    expect(round2).toMatchObject({ resultType: 'task', taskId: expect.any(String) });
    expect(round2).not.toHaveProperty('inputRequests');
    const done = await until(round2?.taskId as string, 'completed');
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: 'Hello, Alice!' }] } });
    // Nothing was created by round 1: one task only.
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM tasks WHERE tool = 'test_tool_with_task'`.execute(platform.db);
    expect(rows[0]?.n).toBe(1);
  });

  it('refuses a tool that asks for input from a client without elicitation (-32021)', async () => {
    const refused = await call(
      'tools/call',
      { name: 'confirm_delete', arguments: { filename: 'c.txt' } },
      { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    );
    expect(refused.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: {} } } });
  });
});
