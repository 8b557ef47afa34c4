import {
  CatalogView,
  createKysely,
  createPool,
  type Database,
  type EmbeddedPostgres,
  listCatalog,
  loadMigrations,
  MigrationRunner,
  publishTools,
  startEmbeddedPostgres,
} from '@taskgate/db';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogTool, setInstance } from '../support/catalog.ts';

// The default `npm start` runs on the embedded Postgres (PGlite), where NOTIFY does not reach other
// connections: the catalog's SQL must run there, and an API's view must follow it by polling alone.
let embedded: EmbeddedPostgres;
let db: Kysely<Database>;

beforeAll(async () => {
  embedded = await startEmbeddedPostgres({ dataDir: null, waitTimeoutMs: 5_000 });
  await new MigrationRunner({ connectionString: embedded.connectionString, migrations: await loadMigrations() }).up();
  db = createKysely(createPool(embedded.connectionString, { applicationName: 'catalog-embedded-test', max: 2 }));
}, 60_000);
afterAll(async () => {
  await db?.destroy();
  await embedded?.stop();
});

describe('the tool catalog on the embedded Postgres', () => {
  it('publishes, lists with skew and the window, and a polling view follows', async () => {
    await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
    await setInstance(db, 'w2', { heartbeatAgoMs: 20_000, stoppedAgoMs: 20_000 });
    await publishTools(db, 'w1', [catalogTool('a'), catalogTool('b')]);
    await publishTools(db, 'w2', [catalogTool('a', { description: 'v2' })]);
    const listed = await listCatalog(db, { windowMs: 60_000 });
    expect(listed.map((tool) => [tool.name, tool.fingerprint, tool.fingerprints.length])).toEqual([
      ['a', catalogTool('a').fingerprint, 2],
      ['b', catalogTool('b').fingerprint, 1],
    ]);

    const view = new CatalogView({
      db,
      windowMs: 60_000,
      pollIntervalMs: 20,
      listen: null,
      logger: { warn: () => {} },
    });
    await view.start();
    try {
      let changes = 0;
      view.onChange(() => {
        changes += 1;
      });
      await publishTools(db, 'w1', [catalogTool('a')]);
      const deadline = performance.now() + 5_000;
      while (changes === 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(view.entries().map((tool) => tool.name)).toEqual(['a']);
    } finally {
      await view.stop();
    }
  }, 60_000);
});
