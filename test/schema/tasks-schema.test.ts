import { createKysely, type Database } from '@taskgate/db';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testPool } from '../support/pg-clients.ts';

const database = useTestDatabase();
let pool: pg.Pool;
let db: Kysely<Database>;
beforeAll(() => {
  pool = testPool({ connectionString: database.url, max: 2 });
  db = createKysely(pool);
});
afterAll(async () => {
  await db.destroy();
});

/** Exhaustive by construction: TypeScript rejects a missing or extra key against the Kysely types. */
const TASK_COLUMNS = {
  id: true,
  tenant_id: true,
  tool: true,
  arguments: true,
  status: true,
  status_message: true,
  result: true,
  error: true,
  mode: true,
  cancel_requested_at: true,
  cancel_reason: true,
  cancel_signal: true,
  trace_parent: true,
  progress_value: true,
  progress_total: true,
  progress_message: true,
  progress_token: true,
  idle_timeout_ms: true,
  max_timeout_ms: true,
  idle_deadline_at: true,
  max_deadline_at: true,
  ttl_ms: true,
  poll_interval_ms: true,
  attempt: true,
  worker_id: true,
  heartbeat_at: true,
  created_at: true,
  last_updated_at: true,
  started_at: true,
  finished_at: true,
  expires_at: true,
  idempotency_key: true,
  input_requests: true,
  input_responses: true,
  job_id: true,
  api_instance_id: true,
  tool_fingerprint: true,
  log_level: true,
  log_count: true,
  client_capabilities: true,
  input_deadline_at: true,
  adoptions: true,
} satisfies Record<keyof Database['tasks'], true>;
const EVENT_COLUMNS = {
  id: true,
  tenant_id: true,
  task_id: true,
  type: true,
  from_status: true,
  to_status: true,
  attempt: true,
  reason: true,
  data: true,
  created_at: true,
} satisfies Record<keyof Database['task_events'], true>;

async function columnsOf(table: string): Promise<string[]> {
  const { rows } = await pool.query<{ column_name: string }>(
    "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1",
    [table],
  );
  return rows.map((row) => row.column_name).sort();
}

/** The SQLSTATE and constraint a statement fails with. */
async function violation(sql: string, values: unknown[] = []): Promise<{ code: string; constraint: string }> {
  try {
    await pool.query(sql, values);
  } catch (error) {
    const { code, constraint } = error as { code: string; constraint: string };
    return { code, constraint };
  }
  throw new Error(`expected a constraint violation from: ${sql}`);
}

async function insertTask(tenant = 'acme'): Promise<string> {
  const row = await db
    .insertInto('tasks')
    .values({ tenant_id: tenant, tool: 'greet', arguments: JSON.stringify({ name: 'Ada' }) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

describe('migration 0001: tasks and task_events', () => {
  it('matches the Kysely types column for column', async () => {
    expect(await columnsOf('tasks')).toEqual(Object.keys(TASK_COLUMNS).sort());
    expect(await columnsOf('task_events')).toEqual(Object.keys(EVENT_COLUMNS).sort());
  });

  it('creates a working task with generated id, attempt 0 and timestamps', async () => {
    const id = await insertTask();
    const task = await db.selectFrom('tasks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(task).toMatchObject({
      status: 'working',
      mode: 'task',
      attempt: 0,
      finished_at: null,
      arguments: { name: 'Ada' },
    });
    expect(task.created_at).toBeInstanceOf(Date);
  });

  it('refuses a status outside the state machine', async () => {
    expect(await violation("INSERT INTO tasks (tenant_id, tool, status) VALUES ('acme', 'greet', 'paused')")).toEqual({
      code: '23514',
      constraint: 'tasks_status_check',
    });
  });

  it('sets finished_at exactly when the task is terminal', async () => {
    const id = await insertTask();
    expect(await violation("UPDATE tasks SET status = 'completed' WHERE id = $1", [id])).toEqual({
      code: '23514',
      constraint: 'tasks_finished_iff_terminal_check',
    });
    expect(await violation('UPDATE tasks SET finished_at = now() WHERE id = $1', [id])).toEqual({
      code: '23514',
      constraint: 'tasks_finished_iff_terminal_check',
    });
    await pool.query("UPDATE tasks SET status = 'completed', finished_at = now(), result = '{}' WHERE id = $1", [id]);
  });

  it('keeps result for completed tasks and error for failed ones', async () => {
    const id = await insertTask();
    expect(await violation(`UPDATE tasks SET result = '{"ok":true}' WHERE id = $1`, [id])).toMatchObject({
      constraint: 'tasks_result_only_completed_check',
    });
    expect(
      await violation(`UPDATE tasks SET status = 'cancelled', finished_at = now(), error = '{}' WHERE id = $1`, [id]),
    ).toMatchObject({ constraint: 'tasks_error_only_failed_check' });
  });

  it('refuses a cancel reason without a cancel request, and non-positive clocks and ttl', async () => {
    const id = await insertTask();
    expect(await violation("UPDATE tasks SET cancel_reason = 'user' WHERE id = $1", [id])).toMatchObject({
      constraint: 'tasks_cancel_reason_check',
    });
    expect(await violation('UPDATE tasks SET idle_timeout_ms = 0 WHERE id = $1', [id])).toMatchObject({
      constraint: 'tasks_timeouts_check',
    });
    expect(await violation('UPDATE tasks SET ttl_ms = -1 WHERE id = $1', [id])).toMatchObject({
      constraint: 'tasks_ttl_check',
    });
  });

  it("refuses an event that points at another tenant's task", async () => {
    const id = await insertTask('acme');
    expect(
      await violation("INSERT INTO task_events (tenant_id, task_id, type) VALUES ('globex', $1, 'created')", [id]),
    ).toEqual({ code: '23503', constraint: 'task_events_task_fkey' });
  });

  it('requires a real change for status_changed events and a known event type', async () => {
    const id = await insertTask();
    expect(
      await violation(
        "INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status) VALUES ('acme', $1, 'status_changed', 'working', 'working')",
        [id],
      ),
    ).toMatchObject({ constraint: 'task_events_status_change_check' });
    expect(
      await violation("INSERT INTO task_events (tenant_id, task_id, type) VALUES ('acme', $1, 'teleported')", [id]),
    ).toMatchObject({ constraint: 'task_events_type_check' });
  });

  it('deletes a task’s history with the task, and orders history by insertion', async () => {
    const id = await insertTask();
    await db
      .insertInto('task_events')
      .values([
        { tenant_id: 'acme', task_id: id, type: 'created', to_status: 'working' },
        { tenant_id: 'acme', task_id: id, type: 'cancel_requested', reason: 'user' },
      ])
      .execute();
    const history = await db.selectFrom('task_events').select('type').where('task_id', '=', id).orderBy('id').execute();
    expect(history.map((event) => event.type)).toEqual(['created', 'cancel_requested']);
    await db.deleteFrom('tasks').where('id', '=', id).execute();
    expect(await db.selectFrom('task_events').select('id').where('task_id', '=', id).execute()).toEqual([]);
  });

  it('serves tenant + status keyset listing and tenant + id lookups from their indexes', async () => {
    // A tenant with a long finished history and a few working tasks: the listing of working tasks
    // must not walk the history.
    await pool.query(
      `INSERT INTO tasks (tenant_id, tool, status, finished_at, created_at)
       SELECT 'indexed', 'greet', 'completed', now(), now() - make_interval(secs => g) FROM generate_series(1, 5000) g`,
    );
    await pool.query(
      "INSERT INTO tasks (tenant_id, tool, created_at) SELECT 'indexed', 'greet', now() - make_interval(secs => g) FROM generate_series(1, 10) g",
    );
    await pool.query('ANALYZE tasks');
    const listing = await pool.query(
      `EXPLAIN SELECT id FROM tasks WHERE tenant_id = 'indexed' AND status = 'working'
         AND (created_at, id) < (now(), '00000000-0000-0000-0000-000000000000') ORDER BY created_at DESC, id DESC LIMIT 20`,
    );
    expect(JSON.stringify(listing.rows)).toContain('tasks_tenant_status_created_idx');
    const lookup = await pool.query(
      "EXPLAIN SELECT * FROM tasks WHERE tenant_id = 'indexed' AND id = '00000000-0000-0000-0000-000000000000'",
    );
    expect(JSON.stringify(lookup.rows)).toMatch(/Index Scan using (tasks_tenant_id_id_key|tasks_pkey)/);
  });
});

describe('migration 0004: task input', () => {
  it('lets a task wait for input only with its outstanding requests, and starts it with no answers', async () => {
    const id = await insertTask();
    expect(await violation("UPDATE tasks SET status = 'input_required' WHERE id = $1", [id])).toEqual({
      code: '23514',
      constraint: 'tasks_input_requests_check',
    });
    expect(
      await violation("UPDATE tasks SET status = 'input_required', input_requests = '[]' WHERE id = $1", [id]),
    ).toEqual({ code: '23514', constraint: 'tasks_input_requests_check' });
    await pool.query(
      `UPDATE tasks SET status = 'input_required', input_requests = '{"k": {"method": "elicitation/create", "params": {}}}'
       WHERE id = $1`,
      [id],
    );
    const { rows } = await pool.query('SELECT status, input_responses FROM tasks WHERE id = $1', [id]);
    expect(rows[0]).toEqual({ status: 'input_required', input_responses: {} });
  });
});
