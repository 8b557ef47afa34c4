import { createKysely, createPool, type Database, DatabaseSessionSignals, type SessionSignal } from '@taskgate/db';
import type { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresCluster } from '../support/postgres-cluster.ts';
import { waitForTask } from '../support/task-platform.ts';

// Session signals (a POSTed cancel or response that reached another API instance) ride on a
// LISTEN connection. A Postgres restart ends it; the listener connects again by itself, so a
// signal sent after the restart is heard, and one sent while the database is down is said in
// the log, never thrown. A Postgres of this test's own is restarted.
let server: PostgresCluster;
let db: Kysely<Database>;
const warnings: string[] = [];
const logger = { warn: (_fields: Record<string, unknown>, message: string) => warnings.push(message) };
let listening: DatabaseSessionSignals;
let sending: DatabaseSessionSignals;

beforeAll(async () => {
  server = await PostgresCluster.temporary();
  const url = server.url('postgres');
  db = createKysely(createPool(url, { applicationName: 'session-signals-restart' }));
  listening = new DatabaseSessionSignals({ db, connectionString: url, applicationName: 'signals-a', logger });
  sending = new DatabaseSessionSignals({ db, connectionString: url, applicationName: 'signals-b', logger });
  await listening.start();
  await sending.start();
}, 120_000);
afterAll(async () => {
  await listening?.stop();
  await sending?.stop();
  await db?.destroy();
  server?.destroy();
});

const cancel = (requestId: number): SessionSignal => ({
  kind: 'cancel',
  tenantId: 'acme',
  sessionId: 's1',
  requestId,
  reason: 'stop',
});

describe('session signals across a Postgres restart', () => {
  it('are heard again once the database is back; one sent while it is down is logged, not thrown', async () => {
    const heard: SessionSignal[] = [];
    const stop = listening.onSignal((signal) => heard.push(signal));
    sending.send(cancel(1));
    await waitForTask(
      async () => heard.length,
      (count) => count === 1,
    );

    await server.fastStop();
    sending.send(cancel(2));
    await waitForTask(
      async () => warnings.length,
      (count) => count >= 1,
    );
    await server.start();
    // Sent until heard: the listener's reconnect has its own backoff, and NOTIFY keeps nothing
    // for a listener that is not connected yet.
    const afterRestart = (all: SessionSignal[]) =>
      all.some((signal) => signal.kind === 'cancel' && typeof signal.requestId === 'number' && signal.requestId >= 3);
    let next = 3;
    await waitForTask(
      async () => {
        if (!afterRestart(heard)) sending.send(cancel(next++));
        return heard;
      },
      afterRestart,
      30_000,
    );
    // The one sent into the outage was never heard.
    expect(heard.some((signal) => signal.kind === 'cancel' && signal.requestId === 2)).toBe(false);
    stop();
  }, 90_000);
});
