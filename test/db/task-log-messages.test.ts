import {
  appendLogMessages,
  createKysely,
  createPool,
  type Database,
  MAX_TASK_LOG_MESSAGES,
  readLogMessages,
  type TaskChange,
} from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';

// task_log_messages (migration 0012): a durable task's ctx.log() messages, kept for the request
// that waits for it. Written only by the attempt that holds a working task whose caller asked for a
// level, numbered in order, capped per task, read tenant-scoped, and gone with their task.
const database = useTestDatabase();
let db: Kysely<Database>;
const announced: { change: TaskChange; ids: string[] }[] = [];
const writer = () => ({
  db,
  changes: {
    changed: (change: TaskChange, tasks: Iterable<{ id: string } | null | undefined>) => {
      // As TaskAnnouncer does: a write that changed no row announces nothing.
      const ids = [...tasks].flatMap((task) => (task ? [task.id] : []));
      if (ids.length > 0) announced.push({ change, ids });
    },
  },
});

beforeAll(() => {
  db = createKysely(createPool(database.url, { applicationName: 'task-log-messages-test' }));
});
afterAll(async () => {
  await db.destroy();
});

async function task(options: { logLevel?: string | null; status?: string; tenant?: string } = {}) {
  const { rows } = await sql<{ id: string }>`
    INSERT INTO tasks (tenant_id, tool, arguments, status, attempt, log_level, finished_at, input_requests)
    VALUES (${options.tenant ?? 'acme'}, 'greet', '{}', ${options.status ?? 'working'}, 2,
            ${options.logLevel === undefined ? 'info' : options.logLevel},
            ${options.status === 'completed' ? new Date() : null},
            ${options.status === 'input_required' ? JSON.stringify({ a: { method: 'elicitation/create' } }) : null})
    RETURNING id`.execute(db);
  return (rows[0] as { id: string }).id;
}

const append = (taskId: string, messages: { level: string; data: unknown; logger?: string }[], attempt = 2) =>
  appendLogMessages(writer(), { taskId, attempt, messages });

const read = (taskId: string, afterSeq = 0, tenantId = 'acme') =>
  readLogMessages(db, { tenantId, taskId, afterSeq, limit: 10_000 });

const countOf = async (taskId: string) => {
  const { rows } = await sql<{ log_count: number }>`SELECT log_count FROM tasks WHERE id = ${taskId}::uuid`.execute(db);
  return rows[0]?.log_count;
};

describe('appendLogMessages and readLogMessages', () => {
  it('numbers messages in order across writes, counts them on the row and announces a log change', async () => {
    const id = await task();
    announced.length = 0;
    expect(
      await append(id, [
        { level: 'info', data: 'a' },
        { level: 'error', data: { n: 2 }, logger: 'db' },
      ]),
    ).toBe(2);
    expect(await append(id, [{ level: 'warning', data: [3] }])).toBe(1);
    expect(await read(id)).toEqual([
      { seq: 1, kind: 'log', level: 'info', logger: null, data: 'a' },
      { seq: 2, kind: 'log', level: 'error', logger: 'db', data: { n: 2 } },
      { seq: 3, kind: 'log', level: 'warning', logger: null, data: [3] },
    ]);
    expect((await read(id, 2)).map((message) => message.seq)).toEqual([3]);
    expect(await countOf(id)).toBe(3);
    expect(announced).toEqual([
      { change: 'log', ids: [id] },
      { change: 'log', ids: [id] },
    ]);
  });

  it('writes nothing for a stale attempt, a task that is not working, or one whose caller asked for no level', async () => {
    const working = await task();
    const ended = await task({ status: 'completed' });
    const parked = await task({ status: 'input_required' });
    const quiet = await task({ logLevel: null });
    announced.length = 0;
    expect(await append(working, [{ level: 'info', data: 'late' }], 1)).toBe(0);
    for (const id of [ended, parked, quiet]) expect(await append(id, [{ level: 'info', data: 'x' }])).toBe(0);
    for (const id of [working, ended, parked, quiet]) {
      expect(await read(id)).toEqual([]);
      expect(await countOf(id)).toBe(0);
    }
    expect(announced).toEqual([]);
  });

  it(`keeps at most ${MAX_TASK_LOG_MESSAGES} messages per task and drops the rest of a write`, async () => {
    const id = await task();
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ level: 'info', data: i }));
    expect(await append(id, many(MAX_TASK_LOG_MESSAGES - 2))).toBe(MAX_TASK_LOG_MESSAGES - 2);
    expect(await append(id, many(5))).toBe(2);
    expect(await append(id, many(1))).toBe(0);
    expect(await countOf(id)).toBe(MAX_TASK_LOG_MESSAGES);
    expect((await read(id)).at(-1)).toMatchObject({ seq: MAX_TASK_LOG_MESSAGES, data: 1 });
  });

  it("reads only the tenant's own task, and the messages go with the task", async () => {
    const id = await task({ tenant: 'globex' });
    await append(id, [{ level: 'info', data: 'mine' }]);
    expect(await read(id, 0, 'acme')).toEqual([]);
    expect(await read(id, 0, 'globex')).toHaveLength(1);
    await sql`DELETE FROM tasks WHERE id = ${id}::uuid`.execute(db);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM task_log_messages WHERE task_id = ${id}::uuid`.execute(db);
    expect(rows[0]?.n).toBe(0);
  });

  it('keeps completions in the same numbering, also for a caller that asked for no level', async () => {
    const id = await task();
    expect(
      await appendLogMessages(writer(), {
        taskId: id,
        attempt: 2,
        messages: [
          { level: 'info', data: 'before' },
          { kind: 'elicitation_complete', elicitationId: 'e-1' },
        ],
      }),
    ).toBe(2);
    expect(await read(id)).toEqual([
      { seq: 1, kind: 'log', level: 'info', logger: null, data: 'before' },
      { seq: 2, kind: 'elicitation_complete', elicitationId: 'e-1' },
    ]);

    // No level: its log messages are left out, with no gap in the numbers the completions take.
    const quiet = await task({ logLevel: null });
    const completions = (...ids: string[]) =>
      ids.map((elicitationId) => ({ kind: 'elicitation_complete' as const, elicitationId }));
    expect(
      await appendLogMessages(writer(), {
        taskId: quiet,
        attempt: 2,
        messages: [{ level: 'info', data: 'nobody hears this' }, ...completions('e-2')],
      }),
    ).toBe(1);
    expect(await appendLogMessages(writer(), { taskId: quiet, attempt: 2, messages: completions('e-3') })).toBe(1);
    expect(await read(quiet)).toEqual([
      { seq: 1, kind: 'elicitation_complete', elicitationId: 'e-2' },
      { seq: 2, kind: 'elicitation_complete', elicitationId: 'e-3' },
    ]);
    expect(await countOf(quiet)).toBe(2);
    // Still only the attempt that holds a working task writes.
    expect(await appendLogMessages(writer(), { taskId: quiet, attempt: 1, messages: completions('e-4') })).toBe(0);
  });

  it('refuses a completion with a level or without a string id, and a kind it does not know', async () => {
    const id = await task();
    const insert = (kind: string, level: string | null, data: string) =>
      sql`INSERT INTO task_log_messages (tenant_id, task_id, seq, attempt, kind, level, data)
          VALUES ('acme', ${id}::uuid, 1, 2, ${kind}, ${level}, ${data}::jsonb)`.execute(db);
    await expect(insert('elicitation_complete', 'info', '"e"')).rejects.toThrow(/task_log_messages_kind_fields_check/);
    await expect(insert('elicitation_complete', null, '{"id":"e"}')).rejects.toThrow(
      /task_log_messages_kind_fields_check/,
    );
    await expect(insert('log', null, '"x"')).rejects.toThrow(/task_log_messages_kind_fields_check/);
    await expect(insert('shout', null, '"x"')).rejects.toThrow(/task_log_messages_kind_check/);
  });

  it('refuses a level MCP does not have, in the table itself', async () => {
    await expect(sql`UPDATE tasks SET log_level = 'loud'`.execute(db)).rejects.toThrow(/tasks_log_level_check/);
  });
});
