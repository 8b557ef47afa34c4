import { randomBytes } from 'node:crypto';
import { RECENT_WORK_MS, readinessReport } from '@taskgate/api';
import { createPool, workSucceededWithin } from '@taskgate/db';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

// /readyz of a process whose connection slots are all taken while its work goes on: the check
// cannot get a connection (Postgres answers 53300, or the pool keeps it waiting), yet the roles'
// statements finish. That is "waiting for a connection", and the process stays ready; only
// without recent work, or with a database that refuses, is it "failing".
const database = useTestDatabase();
const role = `tgtest_slots_${randomBytes(6).toString('hex')}`;
let admin: pg.Client;
const asRole = () => {
  const url = new URL(database.url);
  url.username = role;
  url.password = '';
  return url.toString();
};

beforeAll(async () => {
  admin = testClient({ connectionString: database.url });
  await admin.connect();
  // One connection slot for the role: the work's connection takes it.
  await admin.query(`CREATE ROLE ${pg.escapeIdentifier(role)} LOGIN CONNECTION LIMIT 1`);
});
afterAll(async () => {
  await admin.query(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
  await admin.end();
});

const check = (databasePool: pg.Pool, now?: number) =>
  readinessReport({
    roles: { worker: 'ok' },
    stopping: false,
    database: databasePool,
    recentWork: () => workSucceededWithin(RECENT_WORK_MS, now),
  });

describe('/readyz when the connection slots are full', () => {
  it('says "waiting for a connection" and stays ready while work proceeds; "failing" once it has not lately', async () => {
    const work = createPool(asRole(), { applicationName: 'readiness-work', max: 1 });
    const probe = createPool(asRole(), { applicationName: 'readiness-probe', max: 1, probe: true });
    try {
      await work.query('SELECT 1');
      const held = await work.connect();
      try {
        // Postgres refuses the probe's connection: 53300 too_many_connections.
        expect(await probe.query('SELECT 1').catch((error: { code?: string }) => error.code)).toBe('53300');
        expect(await check(probe)).toEqual({
          ready: true,
          checks: { worker: 'ok', database: 'waiting for a connection' },
        });
        // The pool itself full (the API checks through its own): the check waits past its second.
        expect(await check(work)).toEqual({
          ready: true,
          checks: { worker: 'ok', database: 'waiting for a connection' },
        });
        // No work finished within the window: the same refusal is a failing database.
        expect(await check(probe, performance.now() + RECENT_WORK_MS + 1)).toEqual({
          ready: false,
          reason: 'database failing',
          checks: { worker: 'ok', database: 'failing' },
        });
      } finally {
        held.release();
      }
    } finally {
      await work.end();
      await probe.end();
    }
  });

  it("a probe's own answers are no work: only the roles' pools say work proceeds", async () => {
    const quiet = createPool(database.url, { applicationName: 'readiness-probe', max: 1, probe: true });
    try {
      const before = performance.now();
      await quiet.query('SELECT 1');
      // Work within 0 ms of `before` would mean some finished after it: the probe's did not count.
      expect(workSucceededWithin(0, before)).toBe(false);
    } finally {
      await quiet.end();
    }
  });

  it('a database that refuses connections is failing, however recent the work', async () => {
    const work = createPool(database.url, { applicationName: 'readiness-work', max: 1 });
    // Port 1 on loopback: nothing listens, the connect is refused at once.
    const down = createPool('postgres://postgres@127.0.0.1:1/postgres', { applicationName: 'down', probe: true });
    try {
      await work.query('SELECT 1');
      expect(await check(down)).toEqual({
        ready: false,
        reason: 'database failing',
        checks: { worker: 'ok', database: 'failing' },
      });
    } finally {
      await work.end();
      await down.end();
    }
  });
});
