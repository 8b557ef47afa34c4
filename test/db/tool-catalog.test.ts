import { createKysely, createPool, type Database, listCatalog, publishTools, registerInstance } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { toolCatalogEntry, toolFingerprint } from '@taskgate/reliability';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { catalogTool, setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

const database = useTestDatabase();
let db: Kysely<Database>;

beforeAll(() => {
  db = createKysely(createPool(database.url, { applicationName: 'tool-catalog-test', max: 4 }));
});
afterAll(async () => {
  await db.destroy();
});
beforeEach(async () => {
  // Every test starts with no instances, hence (by the cascade) an empty catalog.
  await sql`DELETE FROM instances`.execute(db);
});

const WINDOW = { windowMs: 60_000 };

async function publishedAt(instanceId: string): Promise<Record<string, string>> {
  const { rows } = await sql<{ name: string; at: string }>`
    SELECT name, published_at::text AS at FROM tool_catalog WHERE instance_id = ${instanceId}`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.name, row.at]));
}

describe('publishTools', () => {
  it('lists what an instance published, sorted by name in byte order, with definitions intact', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    const tools = [catalogTool('b_tool'), catalogTool('Z_tool'), catalogTool('a_tool', { inline: true })];
    expect(await publishTools(db, 'w1', tools)).toEqual({ added: 3, changed: 0, removed: 0, unchanged: 0 });

    const listed = await listCatalog(db, WINDOW);
    expect(listed.map((tool) => tool.name)).toEqual(['Z_tool', 'a_tool', 'b_tool']);
    const aTool = listed[1];
    expect(aTool).toEqual({
      name: 'a_tool',
      fingerprint: tools[2]?.fingerprint,
      definition: tools[2]?.definition,
      fingerprints: [tools[2]?.fingerprint],
      liveFingerprints: [tools[2]?.fingerprint],
      live: true,
    });
    // The jsonb round trip (reordered keys) fingerprints the same.
    for (const tool of listed) expect(toolFingerprint(tool.definition)).toBe(tool.fingerprint);
  });

  it("replaces the instance's rows: drops what it no longer serves, keeps published_at of what is unchanged", async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    await publishTools(db, 'w1', [catalogTool('keep'), catalogTool('change'), catalogTool('drop')]);
    await sql`UPDATE tool_catalog SET published_at = now() - interval '1 hour'`.execute(db);
    const before = await publishedAt('w1');

    const changed = catalogTool('change', { description: 'a new version' });
    const report = await publishTools(db, 'w1', [catalogTool('keep'), changed, catalogTool('new')]);
    expect(report).toEqual({ added: 1, changed: 1, removed: 1, unchanged: 1 });

    const after = await publishedAt('w1');
    expect(Object.keys(after).sort()).toEqual(['change', 'keep', 'new']);
    expect(after.keep).toBe(before.keep);
    expect(after.change).not.toBe(before.change);
    const listed = await listCatalog(db, WINDOW);
    expect(listed.find((tool) => tool.name === 'change')?.fingerprint).toBe(changed.fingerprint);

    expect(await publishTools(db, 'w1', [])).toEqual({ added: 0, changed: 0, removed: 3, unchanged: 0 });
    expect(await listCatalog(db, WINDOW)).toEqual([]);
  });

  it('leaves other instances alone', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    await setInstance(db, 'w2', { heartbeatAgoMs: 0 });
    await publishTools(db, 'w1', [catalogTool('one')]);
    await publishTools(db, 'w2', [catalogTool('two')]);
    await publishTools(db, 'w1', []);
    expect((await listCatalog(db, WINDOW)).map((tool) => tool.name)).toEqual(['two']);
  });

  it('runs two publishes of one instance one after the other: the later one wins whole', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    const holder = testClient({ connectionString: database.url, application_name: 'tool-catalog-holder' });
    await holder.connect();
    const waiting = async (count: number) => {
      for (;;) {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name = 'tool-catalog-test' AND wait_event_type = 'Lock'`.execute(db);
        if ((rows[0]?.n ?? 0) >= count) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM instances WHERE id = 'w1' FOR NO KEY UPDATE`);
      // Queued in this order behind the holder: without the lock their deletes and upserts could interleave.
      const first = publishTools(db, 'w1', [catalogTool('a1'), catalogTool('a2'), catalogTool('a3')]);
      await waiting(1);
      const second = publishTools(db, 'w1', [catalogTool('b1')]);
      await waiting(2);
      await holder.query('COMMIT');
      expect(await first).toMatchObject({ added: 3 });
      expect(await second).toEqual({ added: 1, changed: 0, removed: 3, unchanged: 0 });
      expect(Object.keys(await publishedAt('w1'))).toEqual(['b1']);
    } finally {
      await holder.end();
    }
  });

  it('refuses an instance that is not registered, and writes nothing', async () => {
    const failure = await publishTools(db, 'ghost', [catalogTool('one')]).catch((error: unknown) => error);
    expect(isTaskgateError(failure, 'TG_INSTANCE_NOT_REGISTERED')).toBe(true);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM tool_catalog`.execute(db);
    expect(rows[0]?.n).toBe(0);
  });

  it('refuses a name published twice and a definition under another name', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    await expect(publishTools(db, 'w1', [catalogTool('one'), catalogTool('one')])).rejects.toThrow(/twice/);
    const other = catalogTool('other');
    await expect(publishTools(db, 'w1', [{ ...other, name: 'one' }])).rejects.toThrow(/named "other"/);
  });

  it("deletes an instance's rows with the instance", async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    await setInstance(db, 'w2', { heartbeatAgoMs: 0 });
    await publishTools(db, 'w1', [catalogTool('one'), catalogTool('two')]);
    await publishTools(db, 'w2', [catalogTool('two')]);
    await sql`DELETE FROM instances WHERE id = 'w1'`.execute(db);
    const { rows } = await sql<{ instance_id: string; name: string }>`
      SELECT instance_id, name FROM tool_catalog ORDER BY instance_id, name`.execute(db);
    expect(rows).toEqual([{ instance_id: 'w2', name: 'two' }]);
  });

  it("refuses a fingerprint that is not its definition's, and the database one that is not SHA-256 hex", async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    const entry = { ...catalogTool('one'), fingerprint: catalogTool('two').fingerprint };
    await expect(publishTools(db, 'w1', [entry])).rejects.toThrow(/fingerprint/);
    await expect(
      sql`INSERT INTO tool_catalog (instance_id, name, fingerprint, definition)
          VALUES ('w1', 'one', 'ABC', '{"name":"one"}')`.execute(db),
    ).rejects.toThrow(/tool_catalog_fingerprint_check/);
    await expect(
      sql`INSERT INTO tool_catalog (instance_id, name, fingerprint, definition)
          VALUES ('w1', 'one', ${'0'.repeat(64)}, '{"name":"two"}')`.execute(db),
    ).rejects.toThrow(/tool_catalog_definition_check/);
  });

  it('reads again only the definitions the caller does not hold', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    const one = catalogTool('one');
    await publishTools(db, 'w1', [one, catalogTool('two')]);
    const held = { name: 'one', held: true };
    const listed = await listCatalog(db, { ...WINDOW, knownDefinitions: new Map([[one.fingerprint, held]]) });
    expect(listed[0]?.definition).toBe(held);
    expect(listed[1]?.definition).toEqual(catalogTool('two').definition);
  });

  it('serves a registered instance through the registry functions the roles use', async () => {
    await registerInstance(db, { id: 'w-real', kind: 'worker', host: 'test', pid: 1 });
    await publishTools(db, 'w-real', [toolCatalogEntry({ name: 'real', description: 'd', inputSchema: {} })]);
    expect((await listCatalog(db, WINDOW)).map((tool) => [tool.name, tool.live])).toEqual([['real', true]]);
  });
});

describe('listCatalog and the window', () => {
  it('lists a stopped or silent instance for the window after its last sign of life, not live', async () => {
    await setInstance(db, 'live', { heartbeatAgoMs: 1_000 });
    await setInstance(db, 'quiet', { heartbeatAgoMs: 15_000 });
    await setInstance(db, 'silent-inside', { heartbeatAgoMs: 59_000 });
    await setInstance(db, 'silent-outside', { heartbeatAgoMs: 61_000 });
    await setInstance(db, 'stopped-inside', { heartbeatAgoMs: 59_500, stoppedAgoMs: 59_000 });
    await setInstance(db, 'stopped-outside', { heartbeatAgoMs: 62_000, stoppedAgoMs: 61_000 });
    // Stopped a moment ago but heartbeating until then: stopped counts, not the fresh heartbeat.
    await setInstance(db, 'stopped-now', { heartbeatAgoMs: 100, stoppedAgoMs: 100 });
    for (const id of [
      'live',
      'quiet',
      'silent-inside',
      'silent-outside',
      'stopped-inside',
      'stopped-outside',
      'stopped-now',
    ]) {
      await publishTools(db, id, [catalogTool(`of_${id}`)]);
    }
    const listed = await listCatalog(db, WINDOW);
    expect(listed.map((tool) => [tool.name, tool.live])).toEqual([
      ['of_live', true],
      ['of_quiet', false],
      ['of_silent-inside', false],
      ['of_stopped-inside', false],
      ['of_stopped-now', false],
    ]);
    expect(listed.find((tool) => tool.name === 'of_quiet')?.liveFingerprints).toEqual([]);
    // A shorter liveness bound than the sweeper's default, and a window shorter than it.
    expect((await listCatalog(db, { windowMs: 60_000, liveWithinMs: 500 })).filter((tool) => tool.live)).toEqual([]);
    expect((await listCatalog(db, { windowMs: 2_000 })).map((tool) => tool.name)).toEqual([
      'of_live',
      'of_stopped-now',
    ]);
  });

  it('lists a tool again once its instance heartbeats again', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 120_000 });
    await publishTools(db, 'w1', [catalogTool('one')]);
    expect(await listCatalog(db, WINDOW)).toEqual([]);
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    expect((await listCatalog(db, WINDOW)).map((tool) => tool.name)).toEqual(['one']);
  });
});

describe('listCatalog with several servers of one name', () => {
  const older = catalogTool('shared', { description: 'v1' });
  const newer = catalogTool('shared', { description: 'v2' });
  const sortedPair = [older.fingerprint, newer.fingerprint].sort();

  async function publishBoth(): Promise<void> {
    await setInstance(db, 'w-old', { heartbeatAgoMs: 0 });
    await setInstance(db, 'w-new', { heartbeatAgoMs: 0 });
    await publishTools(db, 'w-old', [older]);
    await publishTools(db, 'w-new', [newer]);
    await sql`UPDATE tool_catalog SET published_at = now() - interval '10 minutes' WHERE instance_id = 'w-old'`.execute(
      db,
    );
    await sql`UPDATE tool_catalog SET published_at = now() - interval '1 minute' WHERE instance_id = 'w-new'`.execute(
      db,
    );
  }

  it('serves the most recently published definition of the live ones and reports both fingerprints', async () => {
    await publishBoth();
    const [shared] = await listCatalog(db, WINDOW);
    expect(shared?.fingerprint).toBe(newer.fingerprint);
    expect(shared?.definition).toEqual(newer.definition);
    expect(shared?.fingerprints).toEqual(sortedPair);
    expect(shared?.liveFingerprints).toEqual(sortedPair);
  });

  it("prefers a live instance's definition over a newer one kept listed by the window", async () => {
    await publishBoth();
    await setInstance(db, 'w-new', { heartbeatAgoMs: 5_000, stoppedAgoMs: 5_000 });
    const [shared] = await listCatalog(db, WINDOW);
    expect(shared?.fingerprint).toBe(older.fingerprint);
    expect(shared?.fingerprints).toEqual(sortedPair);
    expect(shared?.liveFingerprints).toEqual([older.fingerprint]);
    expect(shared?.live).toBe(true);

    // Both gone: the most recently published of those still in the window.
    await setInstance(db, 'w-old', { heartbeatAgoMs: 5_000, stoppedAgoMs: 5_000 });
    const [kept] = await listCatalog(db, WINDOW);
    expect([kept?.fingerprint, kept?.live, kept?.liveFingerprints]).toEqual([newer.fingerprint, false, []]);
  });

  it('breaks a tie by the lowest instance id, the same on every read', async () => {
    await publishBoth();
    await sql`UPDATE tool_catalog SET published_at = '2026-01-01T00:00:00Z'`.execute(db);
    for (let read = 0; read < 3; read++) {
      const [shared] = await listCatalog(db, WINDOW);
      expect(shared?.fingerprint).toBe(newer.fingerprint); // 'w-new' < 'w-old'
    }
  });

  it('reports one fingerprint when the servers agree', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    await setInstance(db, 'w2', { heartbeatAgoMs: 0 });
    await publishTools(db, 'w1', [older]);
    await publishTools(db, 'w2', [older]);
    const [shared] = await listCatalog(db, WINDOW);
    expect([shared?.fingerprints, shared?.liveFingerprints]).toEqual([[older.fingerprint], [older.fingerprint]]);
  });
});
