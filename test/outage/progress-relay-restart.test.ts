import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcess } from '../support/cli.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type CliOnOwnPostgres, startCliOnOwnPostgres, stopCliOnOwnPostgres } from '../support/own-postgres-cli.ts';
import type { PostgresCluster } from '../support/postgres-cluster.ts';
import { openSse } from '../support/sse-client.ts';

// A durable call's progress travels worker → task row → NOTIFY → the API's wait → the client's
// SSE stream. `taskgate start` runs against a Postgres of this test's own, which is fast-stopped
// while the call streams progress (the worker's progress writes fail, the API's LISTEN connection
// ends) and started again. The client must still get the final response on the same stream, after
// progress that only ever goes up, and the task must have run once.
let running: CliOnOwnPostgres;
let server: PostgresCluster;
let taskgate: RunningProcess;
let base: string;

beforeAll(async () => {
  // debug: the worker's failed progress write is said at debug (it is best effort).
  running = await startCliOnOwnPostgres('debug');
  ({ server, taskgate, base } = running);
}, 120_000);
afterAll(() => stopCliOnOwnPostgres(running));

describe('a Postgres restart while a durable call streams progress', () => {
  it('keeps the stream: progress only goes up, and the final response arrives after the restart', async () => {
    const { headers, body } = perRequestMessage(
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 3, label: 'restart' } },
      { id: 'through-restart', meta: { progressToken: 'restart' } },
    );
    const stream = openSse(new URL(`${base}/mcp`), { method: 'POST', headers, body });
    expect(await stream.status).toBe(200);
    const isProgress = (message: Record<string, unknown>) => message.method === 'notifications/progress';
    await stream.until((messages) => messages.filter(isProgress).length >= 2);

    await server.fastStop();
    // The outage spans at least one step: the worker's progress write failed on it.
    await taskgate.waitForLog((line) => line.msg === 'progress write failed');
    const heardBeforeRestart = stream.messages.length;
    await server.start();

    const messages = await stream.until((all) => all.some((message) => message.id === 'through-restart'), 60_000);
    await stream.ended;
    const last = messages.at(-1) as { id: string; result?: Record<string, unknown>; error?: unknown };
    expect(last.error).toBeUndefined();
    expect(last).toMatchObject({
      id: 'through-restart',
      result: {
        resultType: 'complete',
        content: [{ type: 'text', text: 'computed for 3 s in 60 steps (restart)' }],
        structuredContent: { seconds: 3, steps: 60 },
      },
    });
    const values = messages.filter(isProgress).map((message) => (message.params as { progress: number }).progress);
    expect(values).toEqual([...new Set(values)].sort((a, b) => a - b));
    // Progress was told after the restart too, up to the last step.
    expect(messages.length).toBeGreaterThan(heardBeforeRestart + 1);
    expect(values.at(-1)).toBe(60);

    // The task ran once, by its first attempt: the restart was not a crash of the call.
    const listed = await fetch(`${base}/v1/tasks?limit=5`);
    const tasks = ((await listed.json()) as { tasks?: { tool: string; status: string; attempt: number }[] }).tasks;
    expect(tasks?.filter((task) => task.tool === 'slow_compute')).toEqual([
      expect.objectContaining({ status: 'completed', attempt: 1 }),
    ]);
    expect(taskgate.child.exitCode).toBeNull();
  }, 90_000);
});
