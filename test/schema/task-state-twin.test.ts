import { checkTransition, TASK_STATUSES, type TaskStatus } from '@taskgate/reliability';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

const database = useTestDatabase();
let client: pg.Client;
beforeAll(async () => {
  client = testClient({ connectionString: database.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
});

const TERMINAL = new Set<TaskStatus>(['completed', 'failed', 'cancelled']);

/**
 * Moves a row to `status` the way a writer would: finished_at with a terminal status, the
 * outstanding requests with input_required (migration 0004), nothing else.
 */
function setStatus(id: string, status: TaskStatus) {
  return client.query(
    `UPDATE tasks SET status = $2, finished_at = CASE WHEN $3 THEN now() END,
       input_requests = CASE WHEN $2 = 'input_required' THEN '{}'::jsonb END
     WHERE id = $1`,
    [id, status, TERMINAL.has(status)],
  );
}

async function taskIn(status: TaskStatus): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    "INSERT INTO tasks (tenant_id, tool) VALUES ('acme', 'greet') RETURNING id",
  );
  const id = (rows[0] as { id: string }).id;
  if (status !== 'working') await setStatus(id, status);
  return id;
}

describe('the state machine and its Postgres twin agree', () => {
  for (const from of TASK_STATUSES) {
    for (const to of TASK_STATUSES) {
      // The same non-terminal status is not a transition: the row may still change (progress,
      // heartbeat), so the trigger allows it, while the pure machine has nothing to say yes to.
      if (from === to && !TERMINAL.has(from)) continue;
      const legal = checkTransition(from, to).ok;
      it(`${from} → ${to} is ${legal ? 'allowed' : 'refused'} by both`, async () => {
        const id = await taskIn(from);
        const outcome = await setStatus(id, to).then(
          () => 'allowed',
          (error: { constraint?: string }) => error.constraint,
        );
        if (legal) {
          expect(outcome).toBe('allowed');
        } else {
          expect(outcome).toBe(TERMINAL.has(from) ? 'tasks_terminal_immutable' : 'tasks_status_transition');
        }
      });
    }
  }

  it('refuses any change at all to a terminal task, and any change to a task’s identity', async () => {
    const done = await taskIn('completed');
    await expect(
      client.query("UPDATE tasks SET status_message = 'edited' WHERE id = $1", [done]),
    ).rejects.toMatchObject({
      constraint: 'tasks_terminal_immutable',
    });
    const working = await taskIn('working');
    await expect(client.query("UPDATE tasks SET tenant_id = 'globex' WHERE id = $1", [working])).rejects.toMatchObject({
      constraint: 'tasks_identity_immutable',
    });
    await expect(client.query(`UPDATE tasks SET arguments = '{"x":1}' WHERE id = $1`, [working])).rejects.toMatchObject(
      {
        constraint: 'tasks_identity_immutable',
      },
    );
  });

  it('keeps last_updated_at current on every change', async () => {
    const id = await taskIn('working');
    const before = await client.query<{ last_updated_at: Date }>('SELECT last_updated_at FROM tasks WHERE id = $1', [
      id,
    ]);
    await client.query("UPDATE tasks SET last_updated_at = '2000-01-01', status_message = 'x' WHERE id = $1", [id]);
    const after = await client.query<{ last_updated_at: Date }>('SELECT last_updated_at FROM tasks WHERE id = $1', [
      id,
    ]);
    expect(after.rows[0]?.last_updated_at.getTime()).toBeGreaterThanOrEqual(
      before.rows[0]?.last_updated_at.getTime() ?? 0,
    );
  });
});
