import type { AddressInfo } from 'node:net';
import { TaskgateClient, type TaskState } from '@taskgate/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { startRecorder } from '../support/http-recorder.ts';
import { type Platform, serveApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// A listen stream across an API restart, in a forced order: the client is subscribed and has seen
// the task working; the API stops; the task completes while no API runs (the worker goes on);
// the API comes back on the same port. The client reopens the stream as a new request with the
// same filter, refetches, and sees `completed` once — what changed while no stream was open was
// never sent, so only the refetch can tell it.
const database = useTestDatabase();
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
});
afterAll(async () => {
  await platform.stop();
});

describe('TaskgateClient.watchTasks', () => {
  it('reopens a dropped listen stream after an API restart, refetches and deduplicates', async () => {
    let api = await serveApi(platform, database.url);
    const port = (api.app.server.address() as AddressInfo).port;
    const recorder = await startRecorder(api.mcpUrl.href);
    const client = await TaskgateClient.connectHttp({ url: recorder.url }, { clientId: 'listen-test' });
    try {
      const created = await fetch(api.mcpUrl.href.replace(/\/mcp$/, '/v1/tasks'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tool: 'slow_compute', arguments: { seconds: 1, label: 'listen-restart' } }),
      });
      const { id } = (await created.json()) as { id: string };

      const seen: TaskState[] = [];
      let sawWorking!: () => void;
      const working = new Promise<void>((resolve) => {
        sawWorking = resolve;
      });
      const subscription = client.watchTasks([id], {
        onTask: (task) => {
          seen.push(task);
          if (task.status === 'working') sawWorking();
        },
        reconnect: { baseMs: 50, capMs: 200 },
      });
      await working;

      await api.close();
      await waitForTask(
        () => platform.service.get('default', id),
        (task) => task.status === 'completed',
      );
      api = await serveApi(platform, database.url, { port });
      await subscription.done;

      expect(seen.map((task) => task.status)).toEqual(['working', 'completed']);
      expect(subscription.reconnects).toBeGreaterThanOrEqual(1);
      const listens = recorder.requests
        .flatMap((request) => request.messages)
        .filter((message) => message.method === 'subscriptions/listen');
      expect(listens.length).toBeGreaterThanOrEqual(2);
      expect(new Set(listens.map((message) => message.id)).size).toBe(listens.length);
      for (const listen of listens) {
        expect((listen.params as { notifications: unknown }).notifications).toEqual({ taskIds: [id] });
      }
      expect(recorder.requests.filter((request) => 'last-event-id' in request.headers)).toEqual([]);
    } finally {
      await client.close();
      await recorder.close();
      await api.close();
    }
  });
});
