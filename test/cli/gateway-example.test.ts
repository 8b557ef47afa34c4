import path from 'node:path';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { waitForTask } from '../support/task-platform.ts';

// examples/gateway as its README section runs it: `taskgate start --tools examples/gateway/index.ts`
// in front of the official SDK's example server (server-everything, over stdio). Its tools are
// listed and called as tasks; a long call is cancelled; its task-answering tool runs through the
// downstream's task; the gateway's id map is empty at the end (its gauge on /metrics).
const database = useTestDatabase();
let taskgate: RunningProcess;
let base: string;
beforeAll(async () => {
  taskgate = startCli(
    ['start', '--role', 'api,worker', '--tools', path.join(REPO_ROOT, 'examples/gateway/index.ts')],
    cleanEnv({ DATABASE_URL: database.url, PORT: '0' }),
  );
  const ready = await taskgate.waitForLog((line) => line.msg === 'taskgate started');
  base = ready.url as string;
});
afterAll(async () => {
  taskgate.child.kill('SIGTERM');
  await taskgate.closed;
});

// biome-ignore lint/suspicious/noExplicitAny: a task's JSON, read field by field.
type Json = any;

async function rest(method: string, route: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${base}${route}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

const ended = (id: string) =>
  waitForTask(
    async () => (await rest('GET', `/v1/tasks/${id}`)).body,
    (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
    30_000,
  );

describe('examples/gateway: server-everything behind Taskgate', () => {
  it('publishes its tools under ev_', async () => {
    const { headers, body } = perRequestMessage('tools/list', {});
    const listed = (await (await fetch(`${base}/mcp`, { method: 'POST', headers, body })).json()) as {
      result: { tools: { name: string }[] };
    };
    const names = listed.result.tools.map((tool) => tool.name);
    for (const name of ['ev_echo', 'ev_get-sum', 'ev_trigger-long-running-operation', 'ev_simulate-research-query']) {
      expect(names, name).toContain(name);
    }
  });

  it('runs a call as a task, and relays the progress of a long one', async () => {
    const sum = await rest('POST', '/v1/tasks', { tool: 'ev_get-sum', arguments: { a: 2, b: 3 } });
    expect(sum.status).toBe(201);
    expect(JSON.stringify((await ended(sum.body.id)).result)).toContain('5');

    const long = await rest('POST', '/v1/tasks', {
      tool: 'ev_trigger-long-running-operation',
      arguments: { duration: 1, steps: 4 },
    });
    const done = await ended(long.body.id);
    expect(done.status).toBe('completed');
    expect(done.progress).toMatchObject({ total: 4 });
    expect(done.progress.value).toBeGreaterThanOrEqual(1);
  });

  it('cancels a long call, and the id map is empty after', async () => {
    const long = await rest('POST', '/v1/tasks', {
      tool: 'ev_trigger-long-running-operation',
      arguments: { duration: 60, steps: 60 },
    });
    await waitForTask(
      async () => (await rest('GET', `/v1/tasks/${long.body.id}`)).body,
      (task) => (task.progress?.value ?? 0) >= 1,
      30_000,
    );
    expect((await rest('POST', `/v1/tasks/${long.body.id}/cancel`, {})).status).toBe(202);
    expect((await ended(long.body.id)).status).toBe('cancelled');
    const families = parsePrometheusTextFormat(await (await fetch(`${base}/metrics`)).text());
    expect(families.find((entry) => entry.name === 'taskgate_downstream_requests_in_flight')?.metrics).toEqual([
      { labels: { server: 'everything' }, value: '0' },
    ]);
  });

  it('runs a tool the server answers with a task through that task', async () => {
    const research = await rest('POST', '/v1/tasks', {
      tool: 'ev_simulate-research-query',
      arguments: { topic: 'durable tasks' },
    });
    expect(research.status).toBe(201);
    const done = await ended(research.body.id);
    expect(done.status).toBe('completed');
    expect(JSON.stringify(done.result)).toContain('durable tasks');
  });
});
