import type { Database } from '@taskgate/db';
import { type ToolCatalogEntry, toolCatalogEntry } from '@taskgate/reliability';
import { type Kysely, sql } from 'kysely';

/**
 * An instance row whose liveness the test sets outright: its heartbeat (and stop) so many ms
 * before the database's now(). Window logic is then driven by data, never by waiting.
 */
export async function setInstance(
  db: Kysely<Database>,
  id: string,
  at: { readonly heartbeatAgoMs: number; readonly stoppedAgoMs?: number },
): Promise<void> {
  const heartbeat = sql`now() - ${at.heartbeatAgoMs} * interval '1 millisecond'`;
  const stopped =
    at.stoppedAgoMs === undefined ? sql`NULL` : sql`now() - ${at.stoppedAgoMs} * interval '1 millisecond'`;
  await sql`
    INSERT INTO instances (id, kind, host, pid, heartbeat_at, stopped_at)
    VALUES (${id}, 'worker', 'test', 1, ${heartbeat}, (${stopped})::timestamptz)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = EXCLUDED.stopped_at`.execute(db);
}

/** A catalog entry of a plausible tool definition (the fields a ToolDefinition publishes). */
export function catalogTool(name: string, overrides: Record<string, unknown> = {}): ToolCatalogEntry {
  return toolCatalogEntry({
    name,
    title: `The ${name} tool`,
    description: `Does ${name}`,
    inputSchema: {
      type: 'object',
      properties: { sku: { type: 'string', maxLength: 64 }, quantity: { type: 'integer', minimum: 1 } },
      required: ['sku'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: false, idempotentHint: true },
    retry: 'conditional',
    idempotencyKey: 'optional',
    timeouts: { idleMs: 30_000, maxMs: 600_000 },
    taskSupport: 'optional',
    ...overrides,
    async handler() {
      return { content: [] };
    },
  });
}
