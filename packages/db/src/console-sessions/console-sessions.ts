import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The console_sessions table (migration 0024): who signed in to the console at /ui, by the
 * SHA-256 of the session id their cookie holds. A session ends when it is signed out, when it
 * has not been used for CONSOLE_SESSION_IDLE_MS, or at expires_at (the sign-in's absolute bound,
 * or an OAuth token's exp); the retention sweep deletes it after that.
 */

/** A session unused this long is over: the person signs in again. */
export const CONSOLE_SESSION_IDLE_MS = 8 * 60 * 60 * 1000;
/** However busy, a sign-in lasts at most this long. */
export const CONSOLE_SESSION_MAX_MS = 24 * 60 * 60 * 1000;
/** Use refreshes last_seen_at at most this often: a read per request, a write per minute. */
const TOUCH_EVERY_MS = 60 * 1000;

export interface ConsoleSession {
  readonly tenantId: string;
  /** An OAuth token's scopes; null for a static token's session. */
  readonly scopes: readonly string[] | null;
  /** The SHA-256 (hex) of the static token it was opened with; null for an OAuth token's. */
  readonly tokenDigest: string | null;
  readonly csrfToken: string;
  readonly expiresAt: Date;
  /** Opened with an operator token: it acts for the tenant each request names (tenantId '*'). */
  readonly operator: boolean;
}

/** What the table keys a session by: the cookie's value is never stored. */
export function sessionIdDigest(sessionId: string): Buffer {
  return createHash('sha256').update(sessionId).digest();
}

export async function insertConsoleSession(
  db: Kysely<Database>,
  sessionId: string,
  session: ConsoleSession,
): Promise<void> {
  await sql`
    INSERT INTO console_sessions (id_digest, tenant_id, scopes, token_digest, csrf_token, expires_at, operator)
    VALUES (${sessionIdDigest(sessionId)}, ${session.tenantId}, ${session.scopes === null ? null : [...session.scopes]}::text[],
            ${session.tokenDigest}, ${session.csrfToken}, ${session.expiresAt}, ${session.operator})`.execute(db);
}

/**
 * The live session this id names, or null (unknown, signed out, idle past the window, expired).
 * Refreshes its last use when that is more than a minute old.
 */
export async function findConsoleSession(
  db: Kysely<Database>,
  sessionId: string,
  idleMs = CONSOLE_SESSION_IDLE_MS,
): Promise<ConsoleSession | null> {
  const digest = sessionIdDigest(sessionId);
  const { rows } = await sql<{
    tenant_id: string;
    scopes: string[] | null;
    token_digest: string | null;
    csrf_token: string;
    expires_at: Date;
    operator: boolean;
    stale: boolean;
  }>`
    SELECT tenant_id, scopes, token_digest, csrf_token, expires_at, operator,
           last_seen_at < now() - make_interval(secs => ${TOUCH_EVERY_MS / 1000}) AS stale
    FROM console_sessions
    WHERE id_digest = ${digest} AND ended_at IS NULL AND expires_at > now()
      AND last_seen_at > now() - make_interval(secs => ${idleMs / 1000})`.execute(db);
  const row = rows[0];
  if (row === undefined) return null;
  if (row.stale) {
    await sql`UPDATE console_sessions SET last_seen_at = now() WHERE id_digest = ${digest}`.execute(db);
  }
  return {
    tenantId: row.tenant_id,
    scopes: row.scopes,
    tokenDigest: row.token_digest,
    csrfToken: row.csrf_token,
    expiresAt: row.expires_at,
    operator: row.operator,
  };
}

/** Signs a session out; true if it was live. */
export async function endConsoleSession(db: Kysely<Database>, sessionId: string): Promise<boolean> {
  const result = await sql`
    UPDATE console_sessions SET ended_at = now()
    WHERE id_digest = ${sessionIdDigest(sessionId)} AND ended_at IS NULL`.execute(db);
  return Number(result.numAffectedRows ?? 0) > 0;
}

/** Retention: sessions signed out, expired or idle past the window, at most `limit` of them. */
export async function deleteEndedConsoleSessions(
  db: Kysely<Database>,
  limit: number,
  idleMs = CONSOLE_SESSION_IDLE_MS,
): Promise<number> {
  const result = await sql`
    DELETE FROM console_sessions WHERE id_digest IN (
      SELECT id_digest FROM console_sessions
      WHERE ended_at IS NOT NULL OR expires_at <= now()
         OR last_seen_at < now() - make_interval(secs => ${idleMs / 1000})
      ORDER BY expires_at LIMIT ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
