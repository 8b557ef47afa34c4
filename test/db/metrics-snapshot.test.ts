import { createKysely, createPool, type Database, publishTools, readMetricsSnapshot } from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogTool, setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';

// The database-wide figures of /metrics, read from a real database.
const database = useTestDatabase();
let db: Kysely<Database>;

beforeAll(() => {
  db = createKysely(createPool(database.url, { applicationName: 'metrics-snapshot-test', max: 2 }));
});
afterAll(async () => {
  await db.destroy();
});

describe('readMetricsSnapshot', () => {
  it('names the tools the catalog lists, tasks or not, and not those of instances gone past the window', async () => {
    await sql`DELETE FROM instances`.execute(db);
    await setInstance(db, 'live', { heartbeatAgoMs: 0 });
    await setInstance(db, 'stopped-recently', { heartbeatAgoMs: 5_000, stoppedAgoMs: 5_000 });
    await setInstance(db, 'gone', { heartbeatAgoMs: 3_600_000 });
    await publishTools(db, 'live', [catalogTool('idle_tool'), catalogTool('shared_tool')]);
    await publishTools(db, 'stopped-recently', [catalogTool('shared_tool'), catalogTool('restarting_tool')]);
    await publishTools(db, 'gone', [catalogTool('retired_tool')]);

    const snapshot = await readMetricsSnapshot(db);
    expect(snapshot.tools).toEqual(['idle_tool', 'restarting_tool', 'shared_tool']);
    expect(snapshot.liveTasks).toEqual([]);
    expect([snapshot.outboxPending, snapshot.outboxDead]).toEqual([0, 0]);
  });
});
