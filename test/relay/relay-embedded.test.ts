import {
  addOutboxEvents,
  type Database,
  type EmbeddedPostgres,
  loadMigrations,
  MigrationRunner,
  startEmbeddedPostgres,
} from '@taskgate/db';
import type { RelayRole } from '@taskgate/relay';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { events, eventually, outboxRows, RELAY_SECRET, startTestRelay, testDb } from '../support/relay-harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

// The default `npm start` runs on the embedded Postgres, where NOTIFY does not reach other
// connections: the relay must deliver on its poll alone, and its claim must run on PGlite.
let embedded: EmbeddedPostgres;
let db: Kysely<Database>;
let relay: RelayRole | undefined;
let sink: WebhookReceiver;

beforeAll(async () => {
  embedded = await startEmbeddedPostgres({ dataDir: null, waitTimeoutMs: 5_000 });
  await new MigrationRunner({ connectionString: embedded.connectionString, migrations: await loadMigrations() }).up();
  db = testDb(embedded.connectionString);
  sink = await new WebhookReceiver(RELAY_SECRET).start();
});
afterAll(async () => {
  await relay?.stop();
  await sink?.stop();
  await db?.destroy();
  await embedded?.stop();
});

describe('outbox relay on the embedded Postgres', () => {
  it('delivers by polling, in per-aggregate order, with LISTEN off', async () => {
    relay = await startTestRelay(embedded.connectionString, [sink.url], { listenNotify: false, pollIntervalMs: 50 });
    const ids = await addOutboxEvents(db, events(['a', 'b', 'a', 'c', 'b', 'a']));
    const rows = await eventually(
      () => outboxRows(db),
      (all) => all.every((row) => row.delivered_at !== null),
    );
    expect(rows.map((row) => row.attempts)).toEqual([1, 1, 1, 1, 1, 1]);
    expect([...sink.applied].sort()).toEqual([...ids].sort());
    const order = (aggregate: string) =>
      sink.received.filter((delivery) => delivery.aggregateId === aggregate).map((delivery) => delivery.id);
    expect(order('a')).toEqual([ids[0], ids[2], ids[5]]);
    expect(order('b')).toEqual([ids[1], ids[4]]);
  }, 60_000);
});
