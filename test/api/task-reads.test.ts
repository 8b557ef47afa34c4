import { TaskEventsHub } from '@taskgate/api';
import { findTasks, type TaskNotification } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// How a waiting MCP call reads its task: many readers share one statement, tenant-scoped; and the
// events hub tells a subscriber that arrives after its task ended, so it does not wait for a poll.
const database = useTestDatabase();
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url);
});
afterAll(async () => {
  await platform.stop();
});

describe('reading tasks together', () => {
  it('findTasks answers in the order asked, null for another tenant, a missing, malformed or expired id', async () => {
    const mine = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'a' } });
    const theirs = await platform.service.create('globex', { tool: 'greet', arguments: { name: 'b' } });
    const expired = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'c' } });
    await sql`UPDATE tasks SET expires_at = now() - interval '1 second' WHERE id = ${expired.id}::uuid`.execute(
      platform.db,
    );
    const found = await findTasks(platform.db, [
      { tenantId: 'globex', id: mine.id },
      { tenantId: 'acme', id: mine.id.toUpperCase() },
      { tenantId: 'acme', id: theirs.id },
      { tenantId: 'acme', id: crypto.randomUUID() },
      { tenantId: 'acme', id: 'not-a-uuid' },
      { tenantId: 'acme', id: expired.id },
      { tenantId: 'globex', id: theirs.id },
    ]);
    expect(found.map((task) => task?.id ?? null)).toEqual([null, mine.id, null, null, null, null, theirs.id]);
    expect(found[1]).toMatchObject({ tenantId: 'acme', tool: 'greet', arguments: { name: 'a' } });
  });

  it('TaskService.get under concurrency: each caller gets its own task, or not-found', async () => {
    const tasks = await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        platform.service.create('acme', { tool: 'greet', arguments: { name: `n${n}` } }),
      ),
    );
    const read = await Promise.all(tasks.map((task) => platform.service.get('acme', task.id)));
    expect(read.map((task) => task.arguments)).toEqual(tasks.map((task) => task.arguments));
    const refused = await Promise.allSettled(tasks.slice(0, 5).map((task) => platform.service.get('globex', task.id)));
    expect(
      refused.map((outcome) => outcome.status === 'rejected' && (outcome.reason as { code: string }).code),
    ).toEqual(Array(5).fill('TG_TASK_NOT_FOUND'));
  });
});

describe('the events hub and a late subscriber', () => {
  it('tells a subscriber that arrives after the terminal notification, at once', async () => {
    const hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
    await hub.start();
    try {
      const task = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'late' } });
      const terminal = new Promise<TaskNotification>((resolve) => {
        const stop = hub.subscribe(task.id, (notification) => {
          if (notification?.status === 'completed') {
            stop();
            resolve(notification);
          }
        });
      });
      await platform.startWorker();
      const seen = await terminal;
      // The task ended before this subscription: the hub's memory of it is the only way to hear it.
      const late = await new Promise<TaskNotification | null>((resolve) => hub.subscribe(task.id, resolve));
      expect(late).toEqual(seen);
      // A task the hub saw no end of gets nothing on subscribing.
      const other = await platform.service.create('acme', { tool: 'slow_compute', arguments: { seconds: 30 } });
      let told = false;
      const stop = hub.subscribe(other.id, (notification) => {
        if (notification?.status === 'completed') told = true;
      });
      await Promise.resolve();
      stop();
      expect(told).toBe(false);
      await platform.service.cancel('acme', other.id, 'test done');
    } finally {
      await hub.stop();
    }
  });
});
