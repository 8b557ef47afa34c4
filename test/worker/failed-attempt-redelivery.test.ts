import { toolQueue } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// An attempt whose run fails without handing its task back (a decided write the database refused:
// a deadlock, a statement_timeout, a trigger; or one that gave up under outageRetryMs) leaves the
// task working under this worker, which lives on. The pump fails the job back to the queue; its
// redelivery must run the task again, not wait for a holder that no longer runs it. Forced by
// order: a trigger refuses attempt 1's terminal writes, so its run rejects; attempt 2's land.
const database = useTestDatabase();
const QUEUE = toolQueue('refused_write');
let platform: Platform;
let runs = 0;

const refusedWrite = defineTool({
  name: 'refused_write',
  description: 'a safe tool whose first attempt cannot write its outcome',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    runs += 1;
    return { content: [{ type: 'text', text: `run ${runs}` }] };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [refusedWrite] as never });
  await sql`CREATE FUNCTION refuse_first_outcome() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'the database refused this write (forced by the test)';
    END $$`.execute(platform.db);
  await sql`CREATE TRIGGER refuse_first_outcome BEFORE UPDATE ON tasks FOR EACH ROW
    WHEN (NEW.tool = 'refused_write' AND NEW.attempt = 1 AND OLD.status = 'working'
      AND NEW.status IN ('completed', 'failed', 'cancelled'))
    EXECUTE FUNCTION refuse_first_outcome()`.execute(platform.db);
  await platform.startWorker({ concurrency: 2 });
});
afterAll(async () => {
  await platform?.stop();
});

describe('a redelivery of a task whose attempt failed on a live worker', () => {
  it('runs the task again: the failed attempt does not hold it', async () => {
    const task = await platform.service.create('default', { tool: 'refused_write', arguments: {} });
    // Attempt 1 ran and its run rejected: the pump failed the job back to the queue.
    await waitForTask(
      async () =>
        (
          await sql<{ retry_count: number }>`
            SELECT retry_count FROM pgboss.job WHERE name = ${QUEUE} AND data->>'taskId' = ${task.id}`.execute(
            platform.db,
          )
        ).rows[0],
      (job) => (job?.retry_count ?? 0) >= 1,
    );
    const ended = await waitForTask(
      () => platform.service.get('default', task.id),
      (current) => current?.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'completed', attempt: 2, result: { content: [{ text: 'run 2' }] } });
    expect(runs).toBe(2);
  });
});
