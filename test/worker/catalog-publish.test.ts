import { InstanceHeartbeat, listCatalog } from '@taskgate/db';
import { toolCatalogEntry } from '@taskgate/reliability';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// A worker's tools are in the catalog while its instance row is: published right after it
// registers, and published again when its heartbeat has to register it again (retention may have
// deleted the row during an outage, and the catalog rows with it, ON DELETE CASCADE).
const database = useTestDatabase();
let platform: Platform;

beforeAll(async () => {
  platform = await startPlatform(database.url);
});
afterAll(async () => {
  await platform.stop();
});

const listedBy = async (instance: string) => {
  const { rows } = await sql<{ name: string }>`
    SELECT name FROM tool_catalog WHERE instance_id = ${instance} ORDER BY name COLLATE "C"`.execute(platform.db);
  return rows.map((row) => row.name);
};

describe('a worker in the catalog', () => {
  it('publishes definitions without handlers once registered, and again after its row was deleted', async () => {
    const worker = await platform.startWorker({ workerId: 'worker-publish', heartbeatIntervalMs: 60_000 });
    try {
      const served = platform.tools.list().map((tool) => tool.name);
      expect(await listedBy('worker-publish')).toEqual(served);
      const { rows } = await sql<{ definition: Record<string, unknown> }>`
        SELECT definition FROM tool_catalog WHERE instance_id = 'worker-publish' AND name = 'greet'`.execute(
        platform.db,
      );
      expect(rows[0]?.definition).toEqual(toolCatalogEntry(platform.tools.get('greet') as never).definition);
      expect(rows[0]?.definition).not.toHaveProperty('handler');

      // Retention during an outage: the row goes, and its catalog rows with it.
      await sql`DELETE FROM instances WHERE id = 'worker-publish'`.execute(platform.db);
      expect(await listedBy('worker-publish')).toEqual([]);
      await worker.heartbeat.beat();
      expect(await listedBy('worker-publish')).toEqual(served);
      expect((await listCatalog(platform.db, { windowMs: 0 })).map((tool) => tool.name)).toEqual(served);
    } finally {
      await worker.stop();
    }
  });

  it('retries a republish that failed at the next heartbeat, and not once it succeeded', async () => {
    const identity = { id: 'instance-retry', kind: 'worker' as const, host: 'test', pid: 1 };
    let calls = 0;
    let failNext = false;
    const heartbeat = new InstanceHeartbeat({
      db: platform.db,
      identity,
      intervalMs: 60_000,
      logger: silentLogger,
      onRegistered: async () => {
        calls += 1;
        if (failNext) {
          failNext = false;
          throw new Error('publish failed');
        }
      },
    });
    await heartbeat.start();
    try {
      expect(calls).toBe(1);
      await heartbeat.beat();
      expect(calls).toBe(1); // a plain heartbeat publishes nothing
      await sql`DELETE FROM instances WHERE id = ${identity.id}`.execute(platform.db);
      failNext = true;
      await heartbeat.beat();
      expect(calls).toBe(2); // registered again, publish failed
      await heartbeat.beat();
      expect(calls).toBe(3); // retried, succeeded
      await heartbeat.beat();
      expect(calls).toBe(3);
    } finally {
      await heartbeat.stop();
    }
  });

  it('refuses to start when the first publish fails, and says so', async () => {
    const heartbeat = new InstanceHeartbeat({
      db: platform.db,
      identity: { id: 'instance-refused', kind: 'worker', host: 'test', pid: 1 },
      logger: silentLogger,
      onRegistered: async () => {
        throw new Error('publish failed');
      },
    });
    await expect(heartbeat.start()).rejects.toThrow('publish failed');
  });
});
