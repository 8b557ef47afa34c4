import { startApiRole } from '@taskgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { modernRequest } from '../support/mcp-http.ts';
import { type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
let platform: Platform;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
});
afterAll(async () => {
  await platform.stop();
});

describe('stopping the API role', () => {
  it('ends open event streams and cuts calls still waiting after the grace period, instead of hanging', async () => {
    const api = await startApiRole({
      connectionString: database.url,
      logger: silentLogger,
      host: '127.0.0.1',
      port: 0,
      tokens: new Map(),
      unauthenticatedTenant: 'default',
      tools: platform.tools,
      listenNotify: true,
      checks: () => ({}),
      stopping: () => false,
      sweep: false,
      graceMs: 500,
    });
    const created = await fetch(`${api.url}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 60, label: 'watched' } }),
    });
    const watched = (await created.json()) as { id: string };
    // A REST watcher, open on a task that runs for a minute.
    const events = await fetch(`${api.url}/v1/tasks/${watched.id}/events`);
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    expect((await reader.read()).done).toBe(false);
    // An MCP call waiting on its own minute-long task.
    const { headers, body } = modernRequest('tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 60, label: 'waiting' },
    });
    const call = fetch(`${api.url}/mcp`, { method: 'POST', headers, body }).then(
      (response) => response.text().catch((error: Error) => error),
      (error: Error) => error,
    );
    const waiting = await waitForTask(
      async () =>
        (await platform.service.list('default', { limit: 10 })).tasks.find(
          (task) => task.tool === 'slow_compute' && (task.arguments as { label?: string }).label === 'waiting',
        ),
      (task) => task?.startedAt !== null && task?.startedAt !== undefined,
    );

    const started = performance.now();
    await api.stop();
    const stopMs = performance.now() - started;
    expect(stopMs).toBeLessThan(2_000);
    // The watcher's stream ended (it reconnects elsewhere and refetches)…
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read());
    await call;
    // …and the cut call's request-mode task is cancelled, as any closed stream cancels it.
    const ended = await waitForTask(
      () => platform.service.get('default', waiting?.id as string),
      (task) => task.status !== 'working',
    );
    expect(ended.status).toBe('cancelled');
    // The watched task is durable: it runs on.
    expect((await platform.service.get('default', watched.id)).status).toBe('working');
    await platform.service.cancel('default', watched.id, 'test over');
  });
});
