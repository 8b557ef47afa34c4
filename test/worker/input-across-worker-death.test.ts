import { listTaskEvents } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { conformanceTools } from '../support/example-tools.ts';
import { injectMcp } from '../support/mcp-http.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// input_required survives the worker that asked: a real worker process parks confirm_delete, is
// SIGKILLed, the answer arrives with tasks/update, and another worker process finishes the task.
const database = useTestDatabase();
let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
const workers: RunningProcess[] = [];
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: conformanceTools });
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop('SIGKILL')));
  await api.close();
  await platform.stop();
});

async function startWorker(): Promise<{ process: RunningProcess; id: string }> {
  const process = startCli(
    ['start', '--role', 'worker', '--no-migrate'],
    cleanEnv({ DATABASE_URL: database.url, TASKGATE_CONFORMANCE: '1' }),
  );
  workers.push(process);
  const started = await process.waitForLog((line) => line.msg === 'worker started');
  return { process, id: started.workerId as string };
}

async function call(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await injectMcp(api.app, method, params, {
    capabilities: { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } },
  });
  const body = response.json();
  expect(body.error, response.body).toBeUndefined();
  return body.result;
}

describe('input_required across a worker SIGKILL', () => {
  it('ask, kill the worker that asked, answer with tasks/update: another worker completes the task', async () => {
    const asker = await startWorker();
    const created = await call('tools/call', { name: 'confirm_delete', arguments: { filename: 'kill.txt' } });
    const taskId = created.taskId as string;
    const parked = await waitForTask(
      () => call('tasks/get', { taskId }),
      (task) => task.status === 'input_required',
      30_000,
    );
    expect(Object.keys(parked.inputRequests as object)).toEqual(['confirm']);

    asker.process.child.kill('SIGKILL');
    await asker.process.closed;
    expect(await call('tasks/get', { taskId })).toMatchObject({ status: 'input_required' });
    expect(
      await call('tasks/update', {
        taskId,
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
      }),
    ).toEqual({ resultType: 'complete' });

    const finisher = await startWorker();
    const done = await waitForTask(
      () => call('tasks/get', { taskId }),
      (task) => ['completed', 'failed', 'cancelled'].includes(task.status as string),
      30_000,
    );
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ text: 'kill.txt would be deleted' }] } });
    // The asking attempt ended cleanly when it parked, so the death lost nothing: no lost attempt.
    const history = (await listTaskEvents(platform.db, 'default', taskId)).map((event) => [
      event.type,
      event.attempt,
      (event.data as { worker?: string } | null)?.worker ?? null,
    ]);
    expect(history).toEqual([
      ['created', null, null],
      ['attempt_started', 1, asker.id],
      ['status_changed', 1, null],
      ['status_changed', 1, null],
      ['attempt_started', 2, finisher.id],
      ['status_changed', 2, null],
    ]);
  }, 90_000);
});
