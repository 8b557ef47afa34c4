/**
 * A starter tool module: copy this folder, rename the tool, and change what its commit writes.
 *
 *   taskgate migrate up --tools ./index.ts     # creates its table (migrations/)
 *   taskgate start --tools ./index.ts          # serves add_note over MCP and REST
 */
import { defineTool } from '@taskgate/sdk';
import type { ColumnType, Generated } from 'kysely';

/** This module's own tables (migrations/), for ctx.commit's typed `db`. */
export interface NotesDatabase {
  notes: {
    id: Generated<string>;
    tenant_id: string;
    text: string;
    task_id: string;
    created_at: ColumnType<Date, never, never>;
  };
}

/** Its migrations are recorded under this name: keep it once they have run anywhere. */
export const name = 'starter-notes';
export const migrations = new URL('./migrations/', import.meta.url);

export const addNote = defineTool<{ text: string; idempotencyKey?: string }, NotesDatabase>({
  name: 'add_note',
  title: 'Add note',
  description: 'Stores a note. With an idempotency key, a retry of the same note stores nothing twice.',
  inputSchema: {
    type: 'object',
    properties: {
      text: { type: 'string', minLength: 1, maxLength: 2000 },
      idempotencyKey: { type: 'string', minLength: 1, maxLength: 255 },
    },
    required: ['text'],
    additionalProperties: false,
  },
  // It writes, so it is not "safe": after a lost attempt it runs again only when called with a key.
  retry: 'conditional',
  idempotencyKey: 'optional',
  timeouts: { maxMs: 30_000 },
  async handler({ text }, ctx) {
    await ctx.checkpoint();
    ctx.progress(1, 2, 'storing the note');
    // The row, the outbox event, the stored result and the task's completion commit together; a
    // cancel that came first leaves none of them.
    return ctx.commit(async ({ db, outbox }) => {
      const note = await db
        .insertInto('notes')
        .values({ tenant_id: ctx.tenant, text, task_id: ctx.taskId })
        .returning(['id', 'created_at'])
        .executeTakeFirstOrThrow();
      outbox.add({
        aggregateType: 'note',
        aggregateId: note.id,
        eventType: 'note.added',
        payload: { id: note.id, text },
      });
      return {
        content: [{ type: 'text', text: `note ${note.id} stored` }],
        structuredContent: { id: note.id, createdAt: note.created_at.toISOString() },
      };
    });
  },
});

export const tools = [addNote];
