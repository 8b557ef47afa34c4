import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The mcp_sessions table: handshake-revision MCP sessions, shared by every API instance. A session idle
 * for longer than its window is treated as gone (404: the client initializes again) and deleted by
 * the retention sweep.
 */

/** How long a session lives without being used. */
export const MCP_SESSION_IDLE_MS = 60 * 60 * 1000;

/** Use refreshes last_seen_at at most this often: a read per request, a write per minute. */
const TOUCH_EVERY_MS = 60 * 1000;

export interface McpSessionRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly revision: string;
  readonly clientCapabilities: Readonly<Record<string, unknown>> | null;
  /** logging/setLevel's level; null (or absent on insert): none set. */
  readonly logLevel?: string | null;
  /** resources/subscribe's URIs, in the order subscribed (absent on insert: none). */
  readonly resourceSubscriptions?: readonly string[];
}

/** The most URIs one session is subscribed to (the column's CHECK says the same). */
export const MAX_MCP_SESSION_RESOURCES = 100;

/** Live sessions a tenant keeps at most: initialize beyond them ends the tenant's least recently used. */
export const MAX_MCP_SESSIONS_PER_TENANT = 1_000;

/**
 * Stores a new session, then trims its tenant to `maxPerTenant` sessions, least recently used
 * first: a client looping on initialize replaces its own sessions instead of growing the table
 * until the idle sweep. A trimmed session is unknown from then on (404: its client initializes
 * again). Two initializes at once may leave one more for a moment; the next trims it.
 */
export async function insertMcpSession(
  db: Kysely<Database>,
  session: McpSessionRecord,
  maxPerTenant = MAX_MCP_SESSIONS_PER_TENANT,
): Promise<void> {
  await sql`
    INSERT INTO mcp_sessions (id, tenant_id, revision, client_capabilities)
    VALUES (${session.id}::uuid, ${session.tenantId}, ${session.revision},
            ${session.clientCapabilities === null ? null : JSON.stringify(session.clientCapabilities)}::jsonb)`.execute(
    db,
  );
  await sql`
    DELETE FROM mcp_sessions WHERE id IN (
      SELECT id FROM mcp_sessions WHERE tenant_id = ${session.tenantId} AND id <> ${session.id}::uuid
      ORDER BY last_seen_at DESC, created_at DESC
      OFFSET ${Math.max(0, maxPerTenant - 1)})`.execute(db);
}

/**
 * The tenant's live session with this id, or null (unknown, malformed, another tenant's, idle past
 * the window). Refreshes its last use when that is more than a minute old.
 */
export async function findMcpSession(
  db: Kysely<Database>,
  id: string,
  tenantId: string,
  idleMs = MCP_SESSION_IDLE_MS,
): Promise<McpSessionRecord | null> {
  if (!UUID.test(id)) return null;
  const { rows } = await sql<{
    revision: string;
    client_capabilities: Record<string, unknown> | null;
    log_level: string | null;
    resource_subscriptions: string[];
    stale: boolean;
  }>`
    SELECT revision, client_capabilities, log_level, resource_subscriptions, last_seen_at < now() - make_interval(secs => ${TOUCH_EVERY_MS / 1000}) AS stale
    FROM mcp_sessions
    WHERE id = ${id}::uuid AND tenant_id = ${tenantId}
      AND last_seen_at > now() - make_interval(secs => ${idleMs / 1000})`.execute(db);
  const row = rows[0];
  if (!row) return null;
  if (row.stale) await sql`UPDATE mcp_sessions SET last_seen_at = now() WHERE id = ${id}::uuid`.execute(db);
  return {
    id,
    tenantId,
    revision: row.revision,
    clientCapabilities: row.client_capabilities,
    logLevel: row.log_level,
    resourceSubscriptions: row.resource_subscriptions,
  };
}

/**
 * resources/subscribe: `uri` added to the session's URIs (once). What the session holds after it,
 * `'full'` when it holds MAX_MCP_SESSION_RESOURCES others, null when there is no such live session.
 * One conditional UPDATE, so two instances subscribing at once cannot pass the bound.
 */
export async function subscribeMcpSessionResource(
  db: Kysely<Database>,
  id: string,
  tenantId: string,
  uri: string,
): Promise<readonly string[] | 'full' | null> {
  if (!UUID.test(id)) return null;
  const { rows } = await sql<{ resource_subscriptions: string[] }>`
    UPDATE mcp_sessions SET
      resource_subscriptions = CASE WHEN ${uri} = ANY (resource_subscriptions) THEN resource_subscriptions
                                    ELSE array_append(resource_subscriptions, ${uri}::text) END,
      last_seen_at = now()
    WHERE id = ${id}::uuid AND tenant_id = ${tenantId}
      AND (${uri} = ANY (resource_subscriptions) OR cardinality(resource_subscriptions) < ${MAX_MCP_SESSION_RESOURCES})
    RETURNING resource_subscriptions`.execute(db);
  if (rows[0]) return rows[0].resource_subscriptions;
  const found = await sql`SELECT 1 FROM mcp_sessions WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`.execute(db);
  return found.rows.length > 0 ? 'full' : null;
}

/** resources/unsubscribe: what the session holds after it, or null when there is no such session. */
export async function unsubscribeMcpSessionResource(
  db: Kysely<Database>,
  id: string,
  tenantId: string,
  uri: string,
): Promise<readonly string[] | null> {
  if (!UUID.test(id)) return null;
  const { rows } = await sql<{ resource_subscriptions: string[] }>`
    UPDATE mcp_sessions SET resource_subscriptions = array_remove(resource_subscriptions, ${uri}::text),
      last_seen_at = now()
    WHERE id = ${id}::uuid AND tenant_id = ${tenantId}
    RETURNING resource_subscriptions`.execute(db);
  return rows[0]?.resource_subscriptions ?? null;
}

/** The most URL elicitations a session keeps for a later completion (the column's CHECK says the same). */
export const MAX_MCP_SESSION_URL_ELICITATIONS = 100;

/**
 * A -32042 sent the session's client these URL elicitations: kept, newest last, for a completion
 * to find (completeMcpSessionElicitation); past MAX_MCP_SESSION_URL_ELICITATIONS the oldest go.
 * False when there is no such session of this tenant.
 */
export async function noteMcpSessionElicitations(
  db: Kysely<Database>,
  id: string,
  tenantId: string,
  elicitationIds: readonly string[],
): Promise<boolean> {
  if (!UUID.test(id) || elicitationIds.length === 0) return false;
  // Each id once, where it was last given: the newest are kept when the list is cut.
  const given = [...new Set([...elicitationIds].reverse())].reverse();
  const result = await sql`
    UPDATE mcp_sessions SET url_elicitations = (
      SELECT merged[greatest(1, cardinality(merged) - ${MAX_MCP_SESSION_URL_ELICITATIONS - 1}):]
      FROM (SELECT array_cat(
        ARRAY(SELECT held FROM unnest(url_elicitations) WITH ORDINALITY AS h(held, ord)
              WHERE held <> ALL (${given}::text[]) ORDER BY ord),
        ${given}::text[]) AS merged) m)
    WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`.execute(db);
  return (result.numAffectedRows ?? 0n) > 0n;
}

/**
 * The operator's page says a URL elicitation is done: the tenant's live sessions whose client was
 * sent it, each forgetting it (one completion per elicitation and session). Empty when none was.
 */
export async function completeMcpSessionElicitation(
  db: Kysely<Database>,
  tenantId: string,
  elicitationId: string,
  idleMs = MCP_SESSION_IDLE_MS,
): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    UPDATE mcp_sessions SET url_elicitations = array_remove(url_elicitations, ${elicitationId}::text)
    WHERE tenant_id = ${tenantId} AND ${elicitationId}::text = ANY (url_elicitations)
      AND last_seen_at > now() - make_interval(secs => ${idleMs / 1000})
    RETURNING id`.execute(db);
  return rows.map((row) => row.id);
}

/** logging/setLevel: false when there is no such live session of this tenant. */
export async function setMcpSessionLogLevel(
  db: Kysely<Database>,
  id: string,
  tenantId: string,
  level: string,
): Promise<boolean> {
  if (!UUID.test(id)) return false;
  const result = await sql`
    UPDATE mcp_sessions SET log_level = ${level}, last_seen_at = now()
    WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`.execute(db);
  return (result.numAffectedRows ?? 0n) > 0n;
}

/** DELETE with the session id: false when there was no such session of this tenant. */
export async function deleteMcpSession(db: Kysely<Database>, id: string, tenantId: string): Promise<boolean> {
  if (!UUID.test(id)) return false;
  const result = await sql`DELETE FROM mcp_sessions WHERE id = ${id}::uuid AND tenant_id = ${tenantId}`.execute(db);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** Retention: sessions idle past the window, at most `limit` of them. */
export async function deleteIdleMcpSessions(
  db: Kysely<Database>,
  limit: number,
  idleMs = MCP_SESSION_IDLE_MS,
): Promise<number> {
  const result = await sql`
    DELETE FROM mcp_sessions WHERE id IN (
      SELECT id FROM mcp_sessions WHERE last_seen_at < now() - make_interval(secs => ${idleMs / 1000})
      ORDER BY last_seen_at LIMIT ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
