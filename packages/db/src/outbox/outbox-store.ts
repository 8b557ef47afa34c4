import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The outbox table's writer side. Rows are added inside the transaction of the change they
 * announce, so an event exists exactly when its change committed; apps/relay delivers them.
 */

export interface OutboxEvent {
  readonly tenantId: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
}

/** Adds events in one statement; call it with the transaction that makes the change. */
export async function addOutboxEvents(db: Kysely<Database>, events: readonly OutboxEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const { rows: inserted } = await sql<{ id: string }>`${insertOutboxEvents(events)} RETURNING id::text AS id`.execute(
    db,
  );
  return inserted.map((row) => row.id);
}

/**
 * The INSERT of these events, as a statement or as a data-modifying CTE of another statement (so
 * a change and its announcement are one round trip). Events are inserted in the order given.
 */
export function insertOutboxEvents(events: readonly OutboxEvent[]): RawBuilder<unknown> {
  const rows = JSON.stringify(
    events.map((event, ordinal) => ({
      ordinal,
      tenant_id: event.tenantId,
      aggregate_type: event.aggregateType,
      aggregate_id: event.aggregateId,
      event_type: event.eventType,
      payload: event.payload ?? null,
    })),
  );
  return sql`
    INSERT INTO outbox (tenant_id, aggregate_type, aggregate_id, event_type, payload)
    SELECT tenant_id, aggregate_type, aggregate_id, event_type, coalesce(payload, 'null'::jsonb)
    FROM jsonb_to_recordset(${rows}::jsonb) AS x(
      ordinal int, tenant_id text, aggregate_type text, aggregate_id text, event_type text, payload jsonb)
    ORDER BY ordinal`;
}
