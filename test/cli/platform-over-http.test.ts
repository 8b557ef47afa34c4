import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { waitForTask } from '../support/task-platform.ts';

// `taskgate start` as a user runs it, driven only over HTTP, on both kinds of database.
const running: RunningProcess[] = [];
const databases: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((process) => process.stop('SIGTERM')));
  await Promise.all(databases.splice(0).map((database) => database.drop()));
});

async function start(env: Record<string, string>): Promise<string> {
  const taskgate = startCli(['start'], cleanEnv({ PORT: '0', ...env }));
  running.push(taskgate);
  const line = await taskgate.waitForLog((entry) => entry.msg === 'taskgate started');
  return line.url as string;
}

async function call(url: string, method: string, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

for (const kind of ['DATABASE_URL', 'embedded'] as const) {
  describe(`taskgate start on ${kind === 'embedded' ? 'the embedded Postgres' : 'a real Postgres'}`, () => {
    it('runs a tool call to completed, and cancels a slow one to cancelled, over the REST API', async () => {
      let env: Record<string, string>;
      if (kind === 'embedded') {
        env = { TASKGATE_DATA_DIR: await mkdtemp(path.join(tmpdir(), 'taskgate-e2e-')) };
      } else {
        const database = await createTestDatabase({ empty: true });
        databases.push(database);
        env = { DATABASE_URL: database.url };
      }
      const base = await start(env);

      const created = await call(`${base}/v1/tasks`, 'POST', { tool: 'greet', arguments: { name: 'Ada' } });
      expect(created.status).toBe(201);
      const done = await waitForTask(
        async () => (await call(`${base}/v1/tasks/${created.body.id}`, 'GET')).body,
        (task) => task.status !== 'working',
      );
      expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Hello, Ada!' }] } });

      const slow = await call(`${base}/v1/tasks`, 'POST', { tool: 'slow_compute', arguments: { seconds: 60 } });
      await waitForTask(
        async () => (await call(`${base}/v1/tasks/${slow.body.id}`, 'GET')).body,
        (task) => (task.progress as { value: number } | null)?.value !== undefined,
      );
      const ack = await call(`${base}/v1/tasks/${slow.body.id}/cancel`, 'POST', { reason: 'e2e' });
      expect(ack.status).toBe(202);
      expect(ack.body).toMatchObject({ status: 'working', cancelReason: 'e2e' });
      const cancelled = await waitForTask(
        async () => (await call(`${base}/v1/tasks/${slow.body.id}`, 'GET')).body,
        (task) => task.status !== 'working',
      );
      expect(cancelled.status).toBe('cancelled');

      const listed = await call(`${base}/v1/tasks?limit=10`, 'GET');
      expect((listed.body.tasks as { id: string }[]).map((task) => task.id)).toEqual([slow.body.id, created.body.id]);
    }, 60_000);
  });
}
