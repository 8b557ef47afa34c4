import type { ApiRole } from '@taskgate/api';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { startLoopbackApi, waitForTask } from '../support/task-platform.ts';

// /readyz says when this API's copy of the tool catalog cannot be refreshed while the database
// itself answers: the copy it serves may then list a tool that is gone, or miss a new one.
const database = useTestDatabase();
let api: ApiRole;
let admin: pg.Client;
beforeAll(async () => {
  api = await startLoopbackApi(database.url, { catalogPollIntervalMs: 50 });
  admin = testClient({ connectionString: database.url });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
  await api.stop();
});

async function readyz(): Promise<{
  status: number;
  body: { status: string; reason?: string; checks: Record<string, string> };
}> {
  const response = await fetch(new URL('/readyz', api.url));
  return { status: response.status, body: (await response.json()) as never };
}

describe('/readyz and the tool catalog', () => {
  it('reports the catalog failing while its reads fail, and ok again once they succeed', async () => {
    expect(await readyz()).toMatchObject({ status: 200, body: { status: 'ready', checks: { catalog: 'ok' } } });
    // The database answers; only the catalog's table is out of reach.
    await admin.query('ALTER TABLE tool_catalog RENAME TO tool_catalog_away');
    try {
      const failing = await waitForTask(readyz, (read) => read.body.checks.catalog === 'failing');
      expect(failing).toMatchObject({
        status: 503,
        body: { status: 'not_ready', reason: 'catalog failing', checks: { database: 'ok' } },
      });
    } finally {
      await admin.query('ALTER TABLE tool_catalog_away RENAME TO tool_catalog');
    }
    const back = await waitForTask(readyz, (read) => read.body.checks.catalog === 'ok');
    expect(back).toMatchObject({ status: 200, body: { status: 'ready' } });
  });
});
