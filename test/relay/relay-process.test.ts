import { addOutboxEvents, type Database } from '@taskgate/db';
import { type Kysely, sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { events, eventually, outboxRows, RELAY_SECRET, testDb } from '../support/relay-harness.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

// Real relay processes (`taskgate start --role relay`), killed for real.
const database = useTestDatabase();
let db: Kysely<Database>;
const processes: RunningProcess[] = [];

beforeAll(() => {
  db = testDb(database.url);
});
afterEach(async () => {
  await Promise.all(processes.splice(0).map((process) => process.stop('SIGKILL')));
});
afterAll(async () => {
  await db.destroy();
});

async function startRelay(sink: string): Promise<RunningProcess> {
  const process = startCli(
    ['start', '--role', 'relay', '--no-migrate'],
    cleanEnv({
      DATABASE_URL: database.url,
      TASKGATE_RELAY_SINKS: sink,
      TASKGATE_RELAY_SECRET: RELAY_SECRET,
      TASKGATE_RELAY_CONCURRENCY: '8',
      // A killed relay's rows go to the next relay when its lease ends: short, for the test.
      TASKGATE_RELAY_LEASE_MS: '1000',
    }),
  );
  processes.push(process);
  await process.waitForLog((line) => line.msg === 'relay started');
  return process;
}

describe('relay processes', () => {
  it('a relay SIGKILLed mid-batch loses nothing: a restarted relay delivers every row, the interrupted ones again', async () => {
    const total = 40;
    const ids = await addOutboxEvents(db, events(Array.from({ length: total }, (_, index) => `o${index}`)));
    // First the receiver holds every request unanswered; after the kill it answers.
    let holding = true;
    const sink = await new WebhookReceiver(RELAY_SECRET, () => (holding ? 'hold' : { status: 200 })).start();
    try {
      const victim = await startRelay(sink.url);
      // The relay has a full batch (its 8 delivery slots) on the wire: kill it there.
      await sink.until((self) => self.held.length === 8);
      const interrupted = sink.held.map((entry) => entry.delivery.id).sort((a, b) => Number(BigInt(a) - BigInt(b)));
      victim.child.kill('SIGKILL');
      await victim.closed;
      // A claim the victim had sent may still commit after it died (a backend notices its client
      // is gone only when it writes the answer): once the victim's backends are gone, it has.
      await eventually(
        async () =>
          (
            await sql<{ n: number }>`
              SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND application_name IN ('taskgate-relay', 'taskgate-relay-listen')`.execute(
              db,
            )
          ).rows[0]?.n,
        (n) => n === 0,
        30_000,
      );
      holding = false;
      sink.held.splice(0);

      // It held 8 rows on the wire and up to 8 more claimed for the next free slots.
      const before = await outboxRows(db);
      expect(before.filter((row) => row.delivered_at !== null)).toEqual([]);
      const claimedByVictim = before.filter((row) => row.attempts === 1).map((row) => row.id);
      expect(claimedByVictim).toEqual(expect.arrayContaining(interrupted));
      expect(claimedByVictim.length).toBeLessThanOrEqual(16);

      await startRelay(sink.url);
      const rows = await eventually(
        () => outboxRows(db),
        (all) => all.every((row) => row.delivered_at !== null),
        30_000,
      );
      expect(rows.map((row) => row.id)).toEqual(ids);
      expect(rows.filter((row) => row.attempts === 2).map((row) => row.id)).toEqual(claimedByVictim);
      expect([...sink.applied].sort()).toEqual([...ids].sort());
      for (const id of ids) expect(sink.deliveriesOf(id)).toHaveLength(interrupted.includes(id) ? 2 : 1);
      expect(sink.received.every((delivery) => delivery.signatureValid)).toBe(true);
    } finally {
      await sink.stop();
    }
  }, 60_000);
});
