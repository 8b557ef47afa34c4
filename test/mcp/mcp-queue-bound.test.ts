import { TaskSweeper } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { injectMcp } from '../support/mcp-http.ts';
import { type Platform, silentLogger, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;

beforeAll(async () => {
  // An API and no worker anywhere: nothing will ever start the call's task.
  platform = await startPlatform(database.url);
  api = await startApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

describe('the queue bound', () => {
  it('answers an MCP call that no worker picked up with an error naming the tool', async () => {
    const call = injectMcp(api.app, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'queued' } });
    // The call is waiting on its task once the row exists.
    await waitForTask(
      async () =>
        (await sql<{ id: string }>`SELECT id FROM tasks WHERE arguments->>'label' = 'queued'`.execute(platform.db))
          .rows,
      (rows) => rows.length === 1,
    );
    const sweeper = new TaskSweeper({
      db: platform.db,
      announcer: platform.announcer,
      maxQueueMs: 0,
      reachableForMs: () => 0,
      logger: silentLogger,
    });
    expect((await sweeper.sweep()).queuedTooLong).toBe(1);

    const response = await call;
    expect(response.statusCode).toBe(200);
    const { error } = response.json();
    expect(error.message).toBe(
      'no worker started slow_compute within 0 ms (TASKGATE_MAX_QUEUE_MS); is a worker serving it running?',
    );
    expect(error.data).toMatchObject({ clock: 'queue', tool: 'slow_compute' });
  });
});
