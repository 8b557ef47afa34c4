import { createHook } from 'node:async_hooks';
import {
  CatalogView,
  type CatalogViewOptions,
  createKysely,
  createPool,
  type Database,
  publishTools,
} from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { catalogTool, setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { TcpGate } from '../support/tcp-gate.ts';

const database = useTestDatabase();
let db: Kysely<Database>;

beforeAll(() => {
  db = createKysely(createPool(database.url, { applicationName: 'catalog-view-test', max: 4 }));
});
afterAll(async () => {
  await db.destroy();
});
beforeEach(async () => {
  await sql`DELETE FROM instances`.execute(db);
  await setInstance(db, 'w1', { heartbeatAgoMs: 0 });
});

/** A view with its logs, its change count and its refresh outcomes recorded; stopped after the test. */
function watched(options: Partial<CatalogViewOptions> = {}) {
  const logs: string[] = [];
  const refreshes: { ok: boolean; changed: boolean }[] = [];
  const log = (_fields: Record<string, unknown>, message: string) => logs.push(message);
  const view = new CatalogView({
    db,
    windowMs: 60_000,
    pollIntervalMs: 3_600_000,
    logger: { info: log, warn: log },
    onRefresh: (outcome) => refreshes.push(outcome),
    ...options,
  });
  let changes = 0;
  view.onChange(() => {
    changes += 1;
  });
  return {
    view,
    logs,
    refreshes,
    get changes() {
      return changes;
    },
  };
}

/** Checks `condition` every few ms until it holds (what it waits for is a NOTIFY or a poll, never the window). */
async function eventually(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`condition not reached in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const names = (view: CatalogView) => view.entries().map((tool) => tool.name);

/** Open sockets of this process (unref'd timers are not in this list: see trackTimers). */
const sockets = () => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap').length;

/** The timers created from now on that are still pending, unref'd or not. */
function trackTimers(): { pending(): number; disable(): void } {
  const pending = new Set<number>();
  const hook = createHook({
    // Only the timers of the code under test (packages/db, pg and pg-pool): the test runner's own
    // (its RPC with the main process, busier when many files run at once) are not its to clear.
    init: (id, type) => {
      if (type !== 'Timeout') return;
      const stack = new Error().stack ?? '';
      if (/\/packages\/db\/|\/node_modules\/pg(-pool)?\//.test(stack)) pending.add(id);
    },
    destroy: (id) => pending.delete(id),
  }).enable();
  return { pending: () => pending.size, disable: () => hook.disable() };
}

/** Closed sockets leave the list on the next turn of the event loop. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('CatalogView on NOTIFY', () => {
  it('fires once per change of the listing and not for a publish that changes nothing', async () => {
    const w = watched({ listen: { connectionString: database.url, applicationName: 'catalog-view-listen' } });
    await w.view.start();
    try {
      expect(w.view.connected).toBe(true);
      const empty = w.view.version;
      expect([w.view.entries(), w.changes]).toEqual([[], 0]);

      await publishTools(db, 'w1', [catalogTool('b'), catalogTool('a')]);
      await eventually(() => w.changes === 1);
      expect(names(w.view)).toEqual(['a', 'b']);
      expect(w.view.get('a')?.fingerprint).toBe(catalogTool('a').fingerprint);
      expect(w.view.version).not.toBe(empty);
      const first = w.view.version;
      const entries = w.view.entries();

      // The same tools again: one refresh (the poll is an hour away, so it is the NOTIFY's), no change.
      const before = w.refreshes.length;
      await publishTools(db, 'w1', [catalogTool('a'), catalogTool('b')]);
      await eventually(() => w.refreshes.length > before);
      expect([w.changes, w.view.version, w.view.entries()]).toEqual([1, first, entries]);
      expect(w.view.entries()).toBe(entries);

      await publishTools(db, 'w1', [catalogTool('a', { description: 'v2' }), catalogTool('b')]);
      await eventually(() => w.changes === 2);
      expect(w.view.get('a')?.definition.description).toBe('v2');
      expect(w.view.version).not.toBe(first);

      await publishTools(db, 'w1', [catalogTool('b')]);
      await eventually(() => w.changes === 3);
      expect(names(w.view)).toEqual(['b']);
      expect(w.refreshes.every((outcome) => outcome.ok)).toBe(true);
    } finally {
      await w.view.stop();
    }
  });

  it('gives the same version on every view of the same catalog, and an empty one after removal', async () => {
    const a = watched();
    await a.view.start();
    const emptyVersion = a.view.version;
    await publishTools(db, 'w1', [catalogTool('x'), catalogTool('y')]);
    const b = watched();
    await Promise.all([a.view.refresh(), b.view.start()]);
    expect(a.view.version).toBe(b.view.version);
    await publishTools(db, 'w1', []);
    await a.view.refresh();
    expect(a.view.version).toBe(emptyVersion);
    await Promise.all([a.view.stop(), b.view.stop()]);
  });
});

describe('CatalogView by polling (no listener, as on the embedded Postgres)', () => {
  it('notices a publish, keeps liveness current without a change, and sees a tool age out', async () => {
    const w = watched({ listen: null, pollIntervalMs: 20 });
    await w.view.start();
    try {
      expect(w.view.connected).toBeNull();
      await publishTools(db, 'w1', [catalogTool('a')]);
      await eventually(() => w.changes === 1);
      const version = w.view.version;
      expect(w.view.get('a')?.live).toBe(true);

      // Silent past the liveness bound but inside the window: still listed, no longer live.
      await setInstance(db, 'w1', { heartbeatAgoMs: 15_000 });
      await eventually(() => w.view.get('a')?.live === false);
      expect([w.changes, w.view.version]).toEqual([1, version]);

      // Past the window: the next poll drops it, and only one change is told however many polls follow.
      await setInstance(db, 'w1', { heartbeatAgoMs: 61_000 });
      await eventually(() => w.changes === 2);
      expect(w.view.entries()).toEqual([]);
      const polls = w.refreshes.length;
      await eventually(() => w.refreshes.length >= polls + 5);
      expect(w.changes).toBe(2);
    } finally {
      await w.view.stop();
    }
  });

  it('a listener that throws is logged and does not keep others from hearing', async () => {
    const w = watched();
    w.view.onChange(() => {
      throw new Error('listener bug');
    });
    await w.view.start();
    await publishTools(db, 'w1', [catalogTool('a')]);
    await w.view.refresh();
    expect(w.changes).toBe(1);
    expect(w.logs).toEqual(['a catalog change listener failed']);
    await w.view.stop();
  });
});

describe('CatalogView through an outage', () => {
  let gate: TcpGate;
  let gatedDb: Kysely<Database>;
  beforeAll(async () => {
    gate = await TcpGate.open(new URL(database.url));
  });
  beforeEach(() => {
    gate.reopen();
    gatedDb = createKysely(
      createPool(gate.through(database.url), { applicationName: 'catalog-view-gated', connectTimeoutMs: 1_000 }),
    );
  });
  afterAll(async () => {
    await gate.close();
  });

  it('keeps the last good view, logs once while it lasts, and picks up what changed after', async () => {
    await publishTools(db, 'w1', [catalogTool('a')]);
    const w = watched({ db: gatedDb, pollIntervalMs: 20 });
    await w.view.start();
    try {
      const { version, changes } = { version: w.view.version, changes: w.changes };
      const entries = w.view.entries();
      gate.shut();
      await eventually(() => w.refreshes.filter((outcome) => !outcome.ok).length >= 5);
      expect(w.logs).toEqual([
        'the tool catalog cannot be read: the database is unreachable; serving the last catalog read',
      ]);
      expect([w.view.failing, w.view.version, w.view.entries(), w.changes]).toEqual([true, version, entries, changes]);

      await publishTools(db, 'w1', [catalogTool('a'), catalogTool('b')]);
      gate.reopen();
      await eventually(() => w.changes === changes + 1);
      expect(names(w.view)).toEqual(['a', 'b']);
      expect(w.view.failing).toBe(false);
      expect(w.logs.slice(1)).toEqual(['the tool catalog is read again']);
    } finally {
      await w.view.stop();
      await gatedDb.destroy();
    }
  });

  it('refuses to start when the catalog cannot be read, and leaves nothing running', async () => {
    await gatedDb.destroy();
    await nextTurn();
    const baseline = sockets();
    const timers = trackTimers();
    gatedDb = createKysely(createPool(gate.through(database.url), { applicationName: 'catalog-view-gated' }));
    gate.shut();
    const w = watched({
      db: gatedDb,
      listen: { connectionString: database.url, applicationName: 'catalog-view-listen' },
      pollIntervalMs: 20,
    });
    await expect(w.view.start()).rejects.toThrow(/terminated|ECONNRESET/);
    expect(w.view.connected).toBeNull();
    await gatedDb.destroy();
    await nextTurn();
    // The LISTEN connection it had made is closed again, and no poll is scheduled.
    expect(sockets()).toBe(baseline);
    expect(timers.pending()).toBe(0);
    timers.disable();
  });
});

describe('CatalogView lifecycle', () => {
  it('leaves no timer or socket behind once stopped', async () => {
    const baseline = sockets();
    const timers = trackTimers();
    const pool = createPool(database.url, { applicationName: 'catalog-view-lifecycle', max: 1 });
    // pool.end() resolves before its sockets have closed: wait for each client's own end.
    const closed: Promise<unknown>[] = [];
    pool.on('connect', (client) => closed.push(new Promise((resolve) => client.once('end', resolve))));
    const view = new CatalogView({
      db: createKysely(pool),
      // Long enough that a timer stop() forgot would still be pending at the end.
      pollIntervalMs: 60_000,
      listen: { connectionString: database.url, applicationName: 'catalog-view-lifecycle-listen' },
      logger: { warn: () => {} },
    });
    await view.start();
    await view.refresh();
    // The poll, the listener's liveness probe, the pool's idle timer; the pool's and the listener's sockets.
    expect(timers.pending()).toBeGreaterThanOrEqual(3);
    expect(sockets()).toBe(baseline + 2);
    await view.stop();
    await pool.end();
    await Promise.all(closed);
    await nextTurn();
    expect(sockets()).toBe(baseline);
    expect(timers.pending()).toBe(0);
    timers.disable();
    expect(await view.refresh()).toBe(false);
  });
});
