import { findTask, listReconciliationItems, listTaskEvents } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { type Barrier, barrier, type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// A handler that returned has decided its task's outcome; its completion write may still have to
// wait (here: behind a completion batch that a lock holds up, as a busy row or an outage would).
// The task's clocks run out meanwhile, and must not fail it: it ends completed once the write
// lands, with no reconciliation item for an irreversible step that did succeed.
const database = useTestDatabase();
const TENANT = 'acme';
const LIMIT_MS = 600;

const holds = new Map<string, Barrier>();
const hold = (label: string) => {
  const entry = barrier();
  holds.set(label, entry);
  return entry;
};

/** Returns at once when its barrier is released: its completion is what the test holds up. */
const blocker = defineTool<{ label: string }>({
  name: 'blocker',
  description: 'returns when the test says',
  inputSchema: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
  retry: 'safe',
  async handler({ label }) {
    await holds.get(label)?.promise;
    return { content: [{ type: 'text', text: `blocker ${label}` }] };
  },
});

function quickTool(name: string, clock: 'idle' | 'max') {
  return defineTool<{ label: string; irreversible?: boolean }>({
    name,
    description: `returns at once, well within its ${clock} clock`,
    inputSchema: {
      type: 'object',
      properties: { label: { type: 'string' }, irreversible: { type: 'boolean' } },
      required: ['label'],
    },
    retry: 'safe',
    timeouts: clock === 'idle' ? { idleMs: LIMIT_MS } : { maxMs: LIMIT_MS },
    async handler({ label, irreversible }, ctx) {
      if (irreversible) await ctx.step('charge', async () => ({ charged: label }), { irreversible: true });
      ctx.progress(30, 30, 'all done');
      return { content: [{ type: 'text', text: `done ${label}` }] };
    },
  });
}

let platform: Platform;
let locker: pg.Client;
beforeAll(async () => {
  platform = await startPlatform(database.url, {
    tools: [blocker, quickTool('quick_idle', 'idle'), quickTool('quick_max', 'max')] as never,
  });
  await platform.startWorker({ concurrency: 4 });
  locker = testClient({ connectionString: database.url });
  await locker.connect();
});
afterAll(async () => {
  await locker?.end();
  await platform?.stop();
});

/** Backends of this database waiting for a lock (the completion batch behind the test's lock). */
async function lockWaiters(): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(platform.db);
  return rows[0]?.n ?? 0;
}

describe('a task whose completion waits while its clock runs out', () => {
  for (const clock of ['idle', 'max'] as const) {
    for (const irreversible of [false, true]) {
      it(`completes when the write lands (${clock} clock${irreversible ? ', after an irreversible step' : ''})`, async () => {
        const label = `${clock}-${irreversible}`;
        // A completion batch held up by a lock on its task's row: later completions queue behind it.
        const release = hold(label);
        const first = await platform.service.create(TENANT, { tool: 'blocker', arguments: { label } });
        await waitForTask(
          () => findTask(platform.db, TENANT, first.id),
          (task) => task?.startedAt != null,
        );
        await locker.query('BEGIN');
        // A failed expectation must not leave the lock held for the tests after it.
        let locked = true;
        try {
          await locker.query('SELECT id FROM tasks WHERE id = $1 FOR UPDATE', [first.id]);
          release.resolve();
          await waitForTask(lockWaiters, (waiting) => waiting === 1);

          const task = await platform.service.create(TENANT, {
            tool: `quick_${clock}`,
            arguments: { label, irreversible },
          });
          const started = await waitForTask(
            () => findTask(platform.db, TENANT, task.id),
            (row) => row?.startedAt != null,
          );
          // Its handler returned at once; its completion is queued behind the held batch. Wait out
          // the clock (its deadline is the row's, plus room for a loaded machine's timers).
          const deadline = (started?.startedAt?.getTime() ?? 0) + LIMIT_MS + 1_000;
          await waitForTask(
            async () => Date.now(),
            (now) => now > deadline,
            10_000,
          );
          expect((await findTask(platform.db, TENANT, task.id))?.status).toBe('working');

          locked = false;
          await locker.query('COMMIT');
          const ended = await waitForTask(
            () => findTask(platform.db, TENANT, task.id),
            (row) => row?.status !== 'working',
          );
          expect(ended).toMatchObject({
            status: 'completed',
            result: { content: [{ type: 'text', text: `done ${label}` }] },
            progress: { value: 30, total: 30, message: 'all done' },
          });
          const events = await listTaskEvents(platform.db, TENANT, task.id);
          expect(events.filter((event) => event.type === 'status_changed')).toEqual([
            expect.objectContaining({ toStatus: 'completed', reason: 'handler returned' }),
          ]);
          const items = await listReconciliationItems(platform.db, { tenantId: TENANT, filter: 'all', limit: 100 });
          expect(items.filter((item) => item.taskId === task.id)).toEqual([]);
        } finally {
          if (locked) await locker.query('ROLLBACK');
        }
      });
    }
  }
});
