import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcess } from '../support/cli.ts';
import { answerOf, perRequestMessage } from '../support/mcp-http.ts';
import { type CliOnOwnPostgres, startCliOnOwnPostgres, stopCliOnOwnPostgres } from '../support/own-postgres-cli.ts';
import type { PostgresCluster } from '../support/postgres-cluster.ts';
import { waitForTask } from '../support/task-platform.ts';

// `taskgate start` (api, worker and relay in one process) against a Postgres of this test's own,
// which is fast-stopped while a task runs and started again.
let running: CliOnOwnPostgres;
let server: PostgresCluster;
let taskgate: RunningProcess;
let base: string;

beforeAll(async () => {
  running = await startCliOnOwnPostgres('info');
  ({ server, taskgate, base } = running);
}, 120_000);
afterAll(() => stopCliOnOwnPostgres(running));

const getJson = async (path: string) => {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('a Postgres restart under a running task', () => {
  it('kills no process; the finished task’s completion lands after the restart, and everything serves again', async () => {
    const created = await fetch(`${base}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 1.5 } }),
    });
    const { id } = (await created.json()) as { id: string };
    await waitForTask(
      () => getJson(`/v1/tasks/${id}`),
      (read) => read.body.startedAt !== null,
    );

    await server.fastStop();
    const down = await getJson('/readyz');
    expect(down.status).toBe(503);
    expect((down.body.checks as Record<string, string>).database).toBe('failing');
    expect((await getJson('/healthz')).status).toBe(200);
    // The handler finishes while the database is down: its completion is kept and retried.
    await taskgate.waitForLog(
      (line) => line.msg === 'the database is unreachable; the task write is retried until it lands',
    );

    await server.start();
    const done = await waitForTask(
      () => getJson(`/v1/tasks/${id}`),
      (read) => read.body.status !== 'working',
    );
    // Completed by the attempt that ran it: nothing ran twice.
    expect(done.body).toMatchObject({ status: 'completed', attempt: 1 });
    await waitForTask(
      () => getJson('/readyz'),
      (read) => read.status === 200,
    );
    const { headers, body } = perRequestMessage('tools/call', { name: 'greet', arguments: { name: 'again' } });
    const call = await fetch(`${base}/mcp`, { method: 'POST', headers, body });
    expect(call.status).toBe(200);
    // JSON, or SSE when the call outlasts TASKGATE_MCP_SSE_AFTER_MS (1 s: the first call after a
    // restart can, on a loaded machine): the response is the stream's last message either way.
    const answer = answerOf(call.headers.get('content-type') ?? undefined, await call.text());
    expect(answer).toMatchObject({ result: { content: [{ text: 'Hello, again!' }] } });

    expect(taskgate.child.exitCode).toBeNull();
    const { code } = await taskgate.stop('SIGTERM');
    expect(code).toBe(0);
    expect(taskgate.logs.find((line) => line.msg === 'taskgate stopped')?.problems).toEqual([]);
  }, 90_000);
});
