import { findTask, listTaskEvents, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { INSTANCE_RETENTION_MS } from '@taskgate/worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

const database = useTestDatabase();
const TENANT = 'acme';

/** Progress every `everyMs` until `stopAfterMs` (then silence), ignoring nothing: it checkpoints too. */
const ticking = defineTool<{ everyMs: number; stopAfterMs: number }>({
  name: 'ticking',
  description: 'reports progress on a schedule',
  inputSchema: { type: 'object', properties: { everyMs: { type: 'number' }, stopAfterMs: { type: 'number' } } },
  retry: 'safe',
  timeouts: { idleMs: 500, maxMs: 2_000 },
  async handler({ everyMs, stopAfterMs }, ctx) {
    const start = Date.now();
    for (let tick = 1; ; tick++) {
      await ctx.sleep(Math.max(0, start + tick * everyMs - Date.now()));
      if (tick * everyMs <= stopAfterMs) ctx.progress(tick * everyMs);
    }
  },
});

const spinStarted = barrier();
/** Checkpoints often, never looks at its signal otherwise. */
const spinning = defineTool({
  name: 'spinning',
  description: 'checkpoints every 5 ms',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    spinStarted.resolve();
    for (;;) {
      await ctx.checkpoint();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  },
});

/** Reports 1, 2, 2, 1, 3: only 1, 2 and 3 are progress. */
const wobbly = defineTool({
  name: 'wobbly',
  description: 'reports non-increasing progress too',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    for (const value of [1, 2, 2, 1, 3]) ctx.progress(value, 3, `at ${value}`);
    await ctx.sleep(50);
    return { content: [{ type: 'text', text: 'done' }] };
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [ticking, spinning, wobbly] as never });
});
afterAll(async () => {
  await platform.stop();
});

const terminal = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);
const elapsed = (task: TaskRecord) => (task.finishedAt as Date).getTime() - (task.startedAt as Date).getTime();

describe('two clocks', () => {
  beforeAll(async () => {
    await platform.startWorker();
  });
  afterAll(async () => {
    await platform.worker?.stop();
    platform.worker = null;
  });

  it('progress at 400, 800, 1200, 1600 ms with idle 500 and max 2000 ends at 2000 ms by the max clock', async () => {
    const task = await platform.service.create(TENANT, {
      tool: 'ticking',
      arguments: { everyMs: 400, stopAfterMs: 10_000 },
    });
    const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal);
    expect(done.status).toBe('failed');
    expect(done.error).toEqual({
      code: -32001,
      message: 'maximum timeout: the task ran for its limit of 2000 ms',
      data: { clock: 'max', limitMs: 2000 },
    });
    expect(elapsed(done)).toBeGreaterThanOrEqual(1_990);
    expect(elapsed(done)).toBeLessThan(2_400);
    // Progress kept coming right up to the end: the last stored value is 1600 or 2000.
    expect(done.progress?.value).toBeGreaterThanOrEqual(1_600);
    const history = await listTaskEvents(platform.db, TENANT, task.id);
    expect(history.at(-1)).toMatchObject({ type: 'status_changed', toStatus: 'failed', reason: 'timeout:max' });
  });

  it('progress that stops at 1200 ms lets the idle clock end the task at 1700 ms', async () => {
    const task = await platform.service.create(TENANT, {
      tool: 'ticking',
      arguments: { everyMs: 400, stopAfterMs: 1_200 },
    });
    const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal);
    expect(done.error).toMatchObject({ code: -32001, data: { clock: 'idle', limitMs: 500 } });
    expect(done.statusMessage).toBe('idle timeout: no progress for 500 ms');
    expect(elapsed(done)).toBeGreaterThanOrEqual(1_690);
    expect(elapsed(done)).toBeLessThan(2_000);
  });

  it('keeps only strictly increasing progress', async () => {
    const task = await platform.service.create(TENANT, { tool: 'wobbly', arguments: {} });
    const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal);
    expect(done.status).toBe('completed');
    expect(done.progress).toEqual({ value: 3, total: 3, message: 'at 3' });
  });
});

describe('a lost notification', () => {
  it('delays a cancel but never loses it: the checkpoint re-reads the flag from the database', async () => {
    // No LISTEN at all and a poll that never comes: only the checkpoint's own read is left.
    await platform.startWorker({
      listenForCancels: false,
      cancelPollIntervalMs: 3_600_000,
      checkpointReadIntervalMs: 50,
    });
    try {
      const task = await platform.service.create(TENANT, { tool: 'spinning', arguments: {} });
      await spinStarted.promise;
      await platform.service.cancel(TENANT, task.id, 'notification lost');
      const done = await waitForTask(() => platform.service.get(TENANT, task.id), terminal, 5_000);
      expect(done.status).toBe('cancelled');
      const observed = (await listTaskEvents(platform.db, TENANT, task.id)).find((e) => e.type === 'cancel_observed');
      expect(observed?.reason).toBe('checkpoint read the flag');
    } finally {
      await platform.worker?.stop();
      platform.worker = null;
    }
  });
});

describe('retention', () => {
  it('deletes instances gone longer than the retention, with their catalog rows, and keeps the rest', async () => {
    const worker = await platform.startWorker();
    try {
      const longAgo = `${INSTANCE_RETENTION_MS + 60_000} milliseconds`;
      const justInside = `${INSTANCE_RETENTION_MS - 60_000} milliseconds`;
      await sql`
        INSERT INTO instances (id, kind, host, pid, heartbeat_at, stopped_at) VALUES
          ('retention-silent', 'worker', 'h', 1, now() - ${longAgo}::interval, NULL),
          ('retention-stopped', 'worker', 'h', 2, now(), now() - ${longAgo}::interval),
          ('retention-recent', 'worker', 'h', 3, now() - ${justInside}::interval, NULL)`.execute(platform.db);
      await sql`
        INSERT INTO tool_catalog (instance_id, name, fingerprint, definition)
        SELECT id, 'retention_tool', repeat('a', 64), jsonb_build_object('name', 'retention_tool') FROM instances WHERE id LIKE 'retention-%'`.execute(
        platform.db,
      );
      expect(await worker.sweeper.sweep()).toBeGreaterThanOrEqual(2);
      const { rows } = await sql<{ id: string; tools: number }>`
        SELECT i.id, (SELECT count(*)::int FROM tool_catalog c WHERE c.instance_id = i.id) AS tools
        FROM instances i WHERE i.id LIKE 'retention-%'`.execute(platform.db);
      expect(rows).toEqual([{ id: 'retention-recent', tools: 1 }]);
    } finally {
      await platform.worker?.stop();
      platform.worker = null;
    }
  });

  it('an expired task reads as not found, and the sweep deletes it with its history', async () => {
    const worker = await platform.startWorker();
    try {
      const task = await platform.service.create(TENANT, { tool: 'greet', arguments: { name: 'Ttl' }, ttlMs: 1 });
      const kept = await platform.service.create(TENANT, { tool: 'greet', arguments: { name: 'Kept' } });
      await waitForTask(
        () => findTask(platform.db, TENANT, task.id),
        (found) => found === null,
      );
      await expect(platform.service.get(TENANT, task.id)).rejects.toMatchObject({ code: 'TG_TASK_NOT_FOUND' });
      await waitForTask(() => platform.service.get(TENANT, kept.id), terminal);
      expect(await worker.sweeper.sweep()).toBeGreaterThanOrEqual(1);
      const { rows } = await platform.db
        .selectFrom('task_events')
        .select('id')
        .where('task_id', '=', task.id)
        .execute()
        .then((r) => ({ rows: r }));
      expect(rows).toEqual([]);
      expect((await platform.service.get(TENANT, kept.id)).status).toBe('completed');
    } finally {
      await platform.worker?.stop();
      platform.worker = null;
    }
  });
});
