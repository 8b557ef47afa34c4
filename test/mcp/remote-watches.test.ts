import { RemoteWatches } from '@taskgate/api';
import { createKysely, createPool, type Database } from '@taskgate/db';
import { defineResource } from '@taskgate/sdk';
import { type ContentRegistry, contentRegistryOfTool, contentTool } from '@taskgate/tools';
import { ContentWatchRunner } from '@taskgate/worker';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { silentLogger, waitForTask } from '../support/task-platform.ts';

// The content_watches table between an API instance (RemoteWatches: what its connections hold)
// and the workers (ContentWatchRunner: running the module's watch), without an MCP server around
// them: the orders of writes a real deployment can produce, forced.
const database = useTestDatabase();
let db: Kysely<Database>;
beforeAll(async () => {
  db = createKysely(createPool(database.url, { applicationName: 'remote-watches-test' }));
  await setInstance(db, 'api-1', { heartbeatAgoMs: 0 });
});
afterAll(async () => {
  await db.destroy();
});

const TOOL_A = 'taskgate.content.mod.aaaaaaaaaaaaaaaa';
const TOOL_B = 'taskgate.content.mod.bbbbbbbbbbbbbbbb';

function remoteWatches(instanceId = 'api-1') {
  return new RemoteWatches({ db, instanceId, pollMs: 50, logger: silentLogger });
}

async function rows(instanceId = 'api-1') {
  const { rows } = await sql<{ tool: string; tenant_id: string; uri: string; changes: string }>`
    SELECT tool, tenant_id, uri, changes::text AS changes FROM content_watches
    WHERE api_instance_id = ${instanceId} ORDER BY tenant_id, uri`.execute(db);
  return rows;
}

describe('RemoteWatches', () => {
  it('leaves no row behind a subscribe and an unsubscribe in the same tick, and one row behind a resubscribe', async () => {
    const watches = remoteWatches();
    // Each unsubscribe runs before its subscribe's INSERT has reached Postgres: were the DELETE
    // sent on its own, it could land first and leave the row for good.
    for (let i = 0; i < 200; i += 1) watches.watch(TOOL_A, 'tenant-a', `mod://thing/${i}`, () => {})();
    // Subscribe, unsubscribe, subscribe again: the last word is "held".
    watches.watch(TOOL_A, 'tenant-a', 'mod://kept', () => {})();
    const stopKept = watches.watch(TOOL_A, 'tenant-a', 'mod://kept', () => {});
    await watches.settled();
    expect((await rows()).map((row) => row.uri)).toEqual(['mod://kept']);
    stopKept();
    await watches.settled();
    expect(await rows()).toEqual([]);
    await watches.stop();
  });

  it('deletes a row nothing holds at its next poll, and writes again a held one that went missing', async () => {
    const watches = remoteWatches();
    const stop = watches.watch(TOOL_A, 'tenant-a', 'mod://held', () => {});
    await watches.settled();
    // A delete lost in an outage, and a write lost the same way.
    await sql`
      INSERT INTO content_watches (api_instance_id, tool, tenant_id, uri)
      VALUES ('api-1', ${TOOL_A}, 'tenant-a', 'mod://stale')`.execute(db);
    await sql`DELETE FROM content_watches WHERE uri = 'mod://held'`.execute(db);
    await waitForTask(
      async () => (await rows()).map((row) => row.uri).join(),
      (uris) => uris === 'mod://held',
    );
    stop();
    await waitForTask(rows, (left) => left.length === 0);
    await watches.stop();
  });

  it('moves a held URI to the content tool serving it now, and to the tool a later subscriber names', async () => {
    const watches = remoteWatches();
    const first = watches.watch(TOOL_A, 'tenant-a', 'mod://moved', () => {});
    const other = watches.watch(TOOL_A, 'tenant-a', 'mod://other', () => {});
    await watches.settled();
    // A deploy changed the module's declarations: its content tool has a new name.
    watches.retool((_tenant, uri) => (uri === 'mod://moved' ? TOOL_B : undefined));
    await watches.settled();
    expect((await rows()).map((row) => [row.uri, row.tool])).toEqual([
      ['mod://moved', TOOL_B],
      ['mod://other', TOOL_A],
    ]);
    // A retool's write lost in an outage: the next poll writes the tool served now again.
    await sql`UPDATE content_watches SET tool = ${TOOL_A} WHERE uri = 'mod://moved'`.execute(db);
    await waitForTask(
      async () => (await rows()).find((row) => row.uri === 'mod://moved')?.tool,
      (tool) => tool === TOOL_B,
    );
    const second = watches.watch(TOOL_B, 'tenant-a', 'mod://other', () => {});
    await watches.settled();
    expect((await rows()).map((row) => row.tool)).toEqual([TOOL_B, TOOL_B]);
    for (const stop of [first, other, second]) stop();
    await watches.settled();
    expect(await rows()).toEqual([]);
    await watches.stop();
  });
});

describe('ContentWatchRunner', () => {
  /** The watch the worker runs now; calling it says the resource changed. */
  let changed: (() => void) | null = null;
  const resource = defineResource({
    uri: 'loop://counter',
    name: 'counter',
    read: () => [{ text: 'n' }],
    watch: (told) => {
      changed = told;
      return () => {
        changed = null;
      };
    },
  });
  const tool = contentTool('loop', { resources: [resource] });
  if (!tool) throw new Error('no content tool');
  const registries = new Map([[tool.name, contentRegistryOfTool(tool) as ContentRegistry]]);

  it('records a resource changing in a tight loop a few times, the last change always', async () => {
    const runner = new ContentWatchRunner({
      db,
      workerId: 'w-loop',
      registries,
      pollMs: 50,
      minIntervalMs: 300,
      logger: silentLogger,
    });
    await runner.start();
    const watches = remoteWatches();
    const heard: number[] = [];
    const stop = watches.watch(tool.name, 'tenant-l', 'loop://counter', () => heard.push(Date.now()));
    await waitForTask(
      async () => changed,
      (fn) => fn !== null,
    );
    const count = async () => Number((await rows())[0]?.changes);
    // Ten thousand changes at once, then one every millisecond for 900 ms: one write at once and
    // one per interval after it, not one per change (nor one per round trip to Postgres).
    for (let i = 0; i < 10_000; i += 1) changed?.();
    const looping = setInterval(() => changed?.(), 1);
    const began = Date.now();
    await waitForTask(
      async () => Date.now() - began,
      (ms) => ms >= 900,
    );
    clearInterval(looping);
    const ended = Date.now();
    // The last change is written (trailing), and then nothing more is pending.
    await waitForTask(
      async () => Date.now() - ended,
      (ms) => ms >= 700,
    );
    const written = await count();
    expect(written).toBeGreaterThanOrEqual(4);
    expect(written).toBeLessThanOrEqual(Math.ceil((ended - began) / 300) + 2);
    // The subscriber was told at most once per write (its reads fold writes between them).
    expect(heard.length).toBeGreaterThanOrEqual(1);
    expect(heard.length).toBeLessThanOrEqual(written);
    // A change after the interval is written at once (no trailing wait).
    const before = Date.now();
    changed?.();
    await waitForTask(count, (n) => n === written + 1);
    expect(Date.now() - before).toBeLessThan(300);
    stop();
    await waitForTask(
      async () => changed,
      (fn) => fn === null,
    );
    await watches.stop();
    await runner.stop();
  });

  it('stops a watch written async once its stop function arrives', async () => {
    let stops = 0;
    const resolvers: ((stop: () => void) => void)[] = [];
    const asyncResource = defineResource({
      uri: 'async://counter',
      name: 'async-counter',
      read: () => [{ text: 'n' }],
      // Not its type, but plain JavaScript allows it: the stop function comes later.
      watch: (() => new Promise<() => void>((resolve) => resolvers.push(resolve))) as never,
    });
    const asyncTool = contentTool('async', { resources: [asyncResource] });
    if (!asyncTool) throw new Error('no content tool');
    const runner = new ContentWatchRunner({
      db,
      workerId: 'w-async',
      registries: new Map([[asyncTool.name, contentRegistryOfTool(asyncTool) as ContentRegistry]]),
      pollMs: 50,
      logger: silentLogger,
    });
    await runner.start();
    const watches = remoteWatches();
    const stop = watches.watch(asyncTool.name, 'tenant-x', 'async://counter', () => {});
    await waitForTask(
      async () => runner.running,
      (n) => n === 1,
    );
    // The subscriber leaves before the watch handed back its stop function.
    stop();
    await waitForTask(
      async () => runner.running,
      (n) => n === 0,
    );
    expect(stops).toBe(0);
    expect(resolvers).toHaveLength(1);
    resolvers[0]?.(() => {
      stops += 1;
    });
    await waitForTask(
      async () => stops,
      (n) => n === 1,
    );
    await watches.stop();
    await runner.stop();
  });

  it('runs each watch in one worker of those serving the module, and hands it over when that one stops', async () => {
    const started: string[] = [];
    const leased = defineResource({
      uri: 'lease://counter',
      name: 'leased',
      read: () => [{ text: 'n' }],
      watch: (told, ctx) => {
        started.push(ctx.tenant);
        changed = told;
        return () => {};
      },
    });
    const leasedTool = contentTool('lease', { resources: [leased] });
    if (!leasedTool) throw new Error('no content tool');
    const served = new Map([[leasedTool.name, contentRegistryOfTool(leasedTool) as ContentRegistry]]);
    const runner = (workerId: string) =>
      new ContentWatchRunner({ db, workerId, registries: served, pollMs: 50, minIntervalMs: 0, logger: silentLogger });
    const w1 = runner('w-1');
    const w2 = runner('w-2');
    await w1.start();
    await w2.start();
    const watches = remoteWatches();
    const stop = watches.watch(leasedTool.name, 'tenant-q', 'lease://counter', () => {});
    await waitForTask(
      async () => w1.running + w2.running,
      (n) => n === 1,
    );
    // Several reads later, still one watch in all: the other worker did not take it.
    const holder = w1.running === 1 ? w1 : w2;
    const other = holder === w1 ? w2 : w1;
    const expiry = async () =>
      String(
        (
          await sql<{ expires_at: Date }>`
            SELECT expires_at FROM content_watch_leases WHERE uri = 'lease://counter'`.execute(db)
        ).rows[0]?.expires_at.getTime(),
      );
    const leasedUntil = await expiry();
    const readsLater = Date.now();
    await waitForTask(
      async () => Date.now() - readsLater,
      (ms) => ms >= 300,
    );
    expect([w1.running + w2.running, started]).toEqual([1, ['tenant-q']]);
    // Renewed in the second half of its term only, not rewritten at each of those reads.
    expect(await expiry()).toBe(leasedUntil);
    // One change is counted once, however many workers serve the module.
    changed?.();
    const count = async () => Number((await rows()).find((row) => row.uri === 'lease://counter')?.changes);
    await waitForTask(count, (n) => n === 1);
    // The holder stops: its lease goes with it, and the other worker takes the watch over.
    await holder.stop();
    await waitForTask(
      async () => other.running,
      (n) => n === 1,
    );
    expect(started).toEqual(['tenant-q', 'tenant-q']);
    // A crashed worker's lease (never renewed) holds the pair until its term ends, then is taken.
    await other.stop();
    await sql`
      INSERT INTO content_watch_leases (tenant_id, uri, worker_id, expires_at)
      VALUES ('tenant-q', 'lease://counter', 'w-crashed', now() + interval '400 milliseconds')`.execute(db);
    const w3 = runner('w-3');
    await w3.start();
    const crashedAt = Date.now();
    await waitForTask(
      async () => w3.running,
      (n) => n === 1,
    );
    expect(Date.now() - crashedAt).toBeGreaterThanOrEqual(300);
    stop();
    await waitForTask(
      async () => w3.running,
      (n) => n === 0,
    );
    await w3.stop();
    await watches.stop();
    const { rows: left } = await sql`SELECT * FROM content_watch_leases`.execute(db);
    expect(left).toEqual([]);
  });
  /** A content tool named `lease2` with one watched resource, whose watch is the given one. */
  function leaseTool(watch: Parameters<typeof defineResource>[0]['watch']) {
    const made = contentTool('lease2', {
      resources: [defineResource({ uri: 'lease2://counter', name: 'leased', read: () => [{ text: 'n' }], watch })],
    });
    if (!made) throw new Error('no content tool');
    return { name: made.name, registries: new Map([[made.name, contentRegistryOfTool(made) as ContentRegistry]]) };
  }

  async function leases() {
    const { rows } = await sql<{ worker_id: string }>`
      SELECT worker_id FROM content_watch_leases WHERE uri = 'lease2://counter'`.execute(db);
    return rows.map((row) => row.worker_id);
  }

  it('gives the lease of a watch that throws as it starts to another worker, and tries it again later', async () => {
    let attempts = 0;
    const broken = leaseTool(() => {
      attempts += 1;
      throw new Error('cannot watch');
    });
    let runs = 0;
    const working = leaseTool(() => {
      runs += 1;
      return () => {};
    });
    // Same published declarations, so the same tool name: two versions of one module.
    expect(working.name).toBe(broken.name);
    const bad = new ContentWatchRunner({
      db,
      workerId: 'w-bad',
      registries: broken.registries,
      pollMs: 50,
      retryFailedMs: 300,
      logger: silentLogger,
    });
    await bad.start();
    const watches = remoteWatches();
    const stop = watches.watch(broken.name, 'tenant-f', 'lease2://counter', () => {});
    await waitForTask(
      async () => attempts,
      (n) => n === 1,
    );
    // Released at once, not held for its term; and tried again here once the retry time passed.
    await waitForTask(leases, (held) => held.length === 0);
    expect(bad.running).toBe(0);
    await waitForTask(
      async () => attempts,
      (n) => n === 2,
    );
    await waitForTask(leases, (held) => held.length === 0);
    const good = new ContentWatchRunner({
      db,
      workerId: 'w-good',
      registries: working.registries,
      pollMs: 50,
      logger: silentLogger,
    });
    await good.start();
    await waitForTask(
      async () => good.running,
      (n) => n === 1,
    );
    expect(await leases()).toEqual(['w-good']);
    // The broken worker's next tries find the lease held: it does not take the watch back.
    const tried = attempts;
    const later = Date.now();
    await waitForTask(
      async () => Date.now() - later,
      (ms) => ms >= 700,
    );
    expect([attempts, runs, good.running, await leases()]).toEqual([tried, 1, 1, ['w-good']]);
    stop();
    await waitForTask(
      async () => good.running,
      (n) => n === 0,
    );
    await Promise.all([good.stop(), bad.stop(), watches.stop()]);
  });

  it('stops a watch before its lease can lapse when the worker cannot renew it, so two workers never run it', async () => {
    /** Each worker's watch starting and stopping, in order. */
    const events: string[] = [];
    const forWorker = (worker: string) =>
      leaseTool(() => {
        events.push(`${worker} start`);
        return () => events.push(`${worker} stop`);
      });
    const stallingDb = createKysely(createPool(database.url, { applicationName: 'remote-watches-stalling' }));
    const leaseMs = 800;
    const first = new ContentWatchRunner({
      db: stallingDb,
      workerId: 'w-stalls',
      registries: forWorker('w-stalls').registries,
      pollMs: 50,
      leaseMs,
      logger: silentLogger,
    });
    await first.start();
    const watches = remoteWatches();
    const tool = forWorker('none').name;
    const stop = watches.watch(tool, 'tenant-s', 'lease2://counter', () => {});
    await waitForTask(
      async () => first.running,
      (n) => n === 1,
    );
    const second = new ContentWatchRunner({
      db,
      workerId: 'w-takes',
      registries: forWorker('w-takes').registries,
      pollMs: 50,
      leaseMs,
      logger: silentLogger,
    });
    await second.start();
    // The first worker's connection goes: every read it makes fails from now on.
    await stallingDb.destroy();
    await waitForTask(
      async () => second.running,
      (n) => n === 1,
    );
    expect(events).toEqual(['w-stalls start', 'w-stalls stop', 'w-takes start']);
    expect(first.running).toBe(0);
    stop();
    await waitForTask(
      async () => second.running,
      (n) => n === 0,
    );
    await Promise.all([first.stop(), second.stop(), watches.stop()]);
  });
});
