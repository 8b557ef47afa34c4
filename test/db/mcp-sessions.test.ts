import { randomUUID } from 'node:crypto';
import {
  completeMcpSessionElicitation,
  createKysely,
  createPool,
  type Database,
  findMcpSession,
  insertMcpSession,
  MAX_MCP_SESSION_RESOURCES,
  MAX_MCP_SESSION_URL_ELICITATIONS,
  noteMcpSessionElicitations,
  subscribeMcpSessionResource,
  unsubscribeMcpSessionResource,
} from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';

// mcp_sessions per tenant: initialize trims the tenant to its most recently used sessions, so a
// client looping on initialize cannot grow the table until the idle sweep.
const database = useTestDatabase();
let db: Kysely<Database>;
beforeAll(() => {
  db = createKysely(createPool(database.url, { applicationName: 'mcp-sessions-test' }));
});
afterAll(async () => {
  await db.destroy();
});

const open = async (tenantId: string, max: number) => {
  const id = randomUUID();
  await insertMcpSession(db, { id, tenantId, revision: '2025-11-25', clientCapabilities: null }, max);
  return id;
};

describe('insertMcpSession', () => {
  it('keeps a tenant to its most recently used sessions, and leaves other tenants alone', async () => {
    const others = [await open('globex', 3), await open('globex', 3)];
    const first = await open('acme', 3);
    const second = await open('acme', 3);
    // The oldest one is used again: it is now the most recent of the three that were there.
    await sql`UPDATE mcp_sessions SET last_seen_at = now() + interval '1 second' WHERE id = ${first}::uuid`.execute(db);
    const third = await open('acme', 3);
    const fourth = await open('acme', 3);
    const live = async (ids: string[], tenant: string) =>
      (await Promise.all(ids.map((id) => findMcpSession(db, id, tenant)))).map((found) => found !== null);
    // The new one is kept always; of the rest, the least recently used (second) went.
    expect(await live([first, second, third, fourth], 'acme')).toEqual([true, false, true, true]);
    expect(await live(others, 'globex')).toEqual([true, true]);
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM mcp_sessions WHERE tenant_id = 'acme'`.execute(db);
    expect(Number(rows[0]?.n)).toBe(3);
  });

  it('with a bound of one, each initialize replaces the last', async () => {
    const a = await open('solo', 1);
    const b = await open('solo', 1);
    expect(await findMcpSession(db, a, 'solo')).toBeNull();
    expect(await findMcpSession(db, b, 'solo')).not.toBeNull();
  });
});

// resources/subscribe URIs kept with the session, for whichever instance holds its GET stream.
describe('subscribeMcpSessionResource', () => {
  it('keeps each URI once, up to the bound even when instances subscribe at once, and frees one unsubscribed', async () => {
    const id = await open('acme', 10);
    const uris = Array.from({ length: MAX_MCP_SESSION_RESOURCES + 5 }, (_, n) => `test://r/${n}`);
    // All at once, on several connections: the conditional UPDATE holds the bound.
    const results = await Promise.all(uris.map((uri) => subscribeMcpSessionResource(db, id, 'acme', uri)));
    expect(results.filter((result) => result === 'full')).toHaveLength(5);
    const held = (await findMcpSession(db, id, 'acme'))?.resourceSubscriptions ?? [];
    expect(held).toHaveLength(MAX_MCP_SESSION_RESOURCES);
    const first = held[0] as string;
    expect(await subscribeMcpSessionResource(db, id, 'acme', first)).toHaveLength(MAX_MCP_SESSION_RESOURCES);
    expect(await unsubscribeMcpSessionResource(db, id, 'acme', first)).not.toContain(first);
    expect(await subscribeMcpSessionResource(db, id, 'acme', 'test://late')).toContain('test://late');
    // Another tenant's session, and none, hold nothing.
    expect(await subscribeMcpSessionResource(db, id, 'globex', 'test://x')).toBeNull();
    expect(await unsubscribeMcpSessionResource(db, randomUUID(), 'acme', 'test://x')).toBeNull();
  });
});

describe('noteMcpSessionElicitations and completeMcpSessionElicitation', () => {
  const held = async (id: string) => {
    const { rows } = await sql<{ url_elicitations: string[] }>`
      SELECT url_elicitations FROM mcp_sessions WHERE id = ${id}::uuid`.execute(db);
    return rows[0]?.url_elicitations;
  };

  it('keeps each id once, newest last, and at most the bound, newest kept', async () => {
    const id = await open('initech', 100);
    expect(await noteMcpSessionElicitations(db, id, 'initech', ['a', 'b'])).toBe(true);
    expect(await noteMcpSessionElicitations(db, id, 'initech', ['a', 'c', 'c'])).toBe(true);
    expect(await held(id)).toEqual(['b', 'a', 'c']);
    const many = Array.from({ length: MAX_MCP_SESSION_URL_ELICITATIONS + 5 }, (_, n) => `e${n}`);
    await noteMcpSessionElicitations(db, id, 'initech', many);
    expect(await held(id)).toEqual(many.slice(5));
    // Another tenant's session, or no session: nothing kept.
    expect(await noteMcpSessionElicitations(db, id, 'globex', ['x'])).toBe(false);
    expect(await noteMcpSessionElicitations(db, randomUUID(), 'initech', ['x'])).toBe(false);
    expect(await noteMcpSessionElicitations(db, 'not-a-uuid', 'initech', ['x'])).toBe(false);
  });

  it('finds the tenant’s live sessions that were sent an id, once each, and no other', async () => {
    const first = await open('umbrella', 100);
    const second = await open('umbrella', 100);
    const stale = await open('umbrella', 100);
    const elsewhere = await open('hooli', 100);
    for (const id of [first, second, stale]) await noteMcpSessionElicitations(db, id, 'umbrella', ['e-1', 'e-2']);
    await noteMcpSessionElicitations(db, elsewhere, 'hooli', ['e-1']);
    await sql`UPDATE mcp_sessions SET last_seen_at = now() - interval '2 hours' WHERE id = ${stale}::uuid`.execute(db);
    expect((await completeMcpSessionElicitation(db, 'umbrella', 'e-1')).sort()).toEqual([first, second].sort());
    expect(await completeMcpSessionElicitation(db, 'umbrella', 'e-1')).toEqual([]);
    expect(await held(first)).toEqual(['e-2']);
    expect(await held(elsewhere)).toEqual(['e-1']);
    expect(await completeMcpSessionElicitation(db, 'umbrella', 'never-sent')).toEqual([]);
  });

  it('refuses more than the bound in the table itself', async () => {
    const id = await open('initech', 100);
    const over = Array.from({ length: MAX_MCP_SESSION_URL_ELICITATIONS + 1 }, (_, n) => `o${n}`);
    await expect(
      sql`UPDATE mcp_sessions SET url_elicitations = ${over}::text[] WHERE id = ${id}::uuid`.execute(db),
    ).rejects.toThrow(/mcp_sessions_url_elicitations_check/);
  });
});
