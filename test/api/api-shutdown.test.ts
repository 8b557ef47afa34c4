import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { type Platform, startLoopbackApi, startPlatform, waitForTask } from '../support/task-platform.ts';

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
  it('ends open event streams and answers calls still waiting after the grace period, instead of hanging', async () => {
    // Offered: what the platform's worker published to the catalog.
    const api = await startLoopbackApi(database.url, {
      sweep: false,
      graceMs: 500,
      // Long enough that the call below is still waiting, not yet handed over, when the stop comes.
      mcpTaskAfterMs: 60_000,
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
    const { headers, body } = perRequestMessage('tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 60, label: 'waiting' },
    });
    const call = fetch(`${api.url}/mcp`, { method: 'POST', headers, body }).then((response) => response.text());
    // And one from a client with the Tasks extension, whose task may outlive the call.
    const durable = perRequestMessage(
      'tools/call',
      { name: 'slow_compute', arguments: { seconds: 60, label: 'handed-over' } },
      { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    );
    const handedOver = fetch(`${api.url}/mcp`, { method: 'POST', ...durable }).then((response) => response.text());
    const byLabel = (label: string) => async () =>
      (await platform.service.list('default', { limit: 10 })).tasks.find(
        (task) => (task.arguments as { label?: string }).label === label,
      );
    const waiting = await waitForTask(byLabel('waiting'), (task) => task?.startedAt != null);
    const durableTask = await waitForTask(byLabel('handed-over'), (task) => task?.startedAt != null);

    const started = performance.now();
    await api.stop();
    const stopMs = performance.now() - started;
    expect(stopMs).toBeLessThan(2_500);
    // The watcher's stream ended (it reconnects elsewhere and refetches)…
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read());
    // …the waiting call got an answer it can retry, and its request-mode task is cancelled…
    const answer = await call;
    expect(answer).toContain('"code":-31503');
    expect(answer).toContain('the server is shutting down; call again');
    const ended = await waitForTask(
      () => platform.service.get('default', waiting?.id as string),
      (task) => task.status !== 'working',
    );
    expect(ended.status).toBe('cancelled');
    // …and the call whose client takes tasks got its task, which runs on.
    expect(await handedOver).toContain(`"taskId":"${durableTask?.id}"`);
    expect((await platform.service.get('default', durableTask?.id as string)).status).toBe('working');
    await platform.service.cancel('default', durableTask?.id as string, 'test over');
    // The watched task is durable: it runs on.
    expect((await platform.service.get('default', watched.id)).status).toBe('working');
    await platform.service.cancel('default', watched.id, 'test over');
  });
});
