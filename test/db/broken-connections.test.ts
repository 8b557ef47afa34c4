import { createKysely, createPool, isDatabaseUnavailable } from '@taskgate/db';
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

const database = useTestDatabase();
let admin: pg.Client;

beforeAll(async () => {
  admin = testClient({ connectionString: database.url });
  await admin.connect();
});

afterAll(async () => {
  await admin.end();
});

/** Terminates the backend and resolves once the client has seen its connection end. */
async function killBackend(client: pg.ClientBase, pid: number): Promise<void> {
  const ended = new Promise((resolve) => client.once('end', resolve));
  await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  // node-pg emits 'error' (the FATAL 57P01, or the unexpected end) before 'end': once 'end' has
  // arrived, an 'error' nobody listened to would already have ended this process.
  await ended;
}

describe('a connection that breaks while it is checked out', () => {
  it('fails the next statement with a recognised outage error instead of ending the process', async () => {
    const pool = createPool(database.url, { applicationName: 'broken-connections-test', max: 1 });
    try {
      const client = await pool.connect();
      await client.query('BEGIN');
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await killBackend(client, rows[0]?.pid as number);

      const failure = await client.query('SELECT 1').catch((error: unknown) => error);
      expect(isDatabaseUnavailable(failure)).toBe(true);
      client.release();
      // The pool discarded the broken client; the next statement gets a new connection.
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1);
    } finally {
      await pool.end();
    }
  });

  it('fails a Kysely transaction whose connection breaks between its statements, and the pool goes on', async () => {
    const pool = createPool(database.url, { applicationName: 'broken-connections-test', max: 1 });
    const clients: pg.Client[] = [];
    pool.on('connect', (client) => clients.push(client));
    const db = createKysely(pool);
    try {
      const failure = await db
        .transaction()
        .execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
          await killBackend(clients.at(-1) as pg.Client, rows[0]?.pid as number);
          await sql`SELECT 1`.execute(trx);
        })
        .catch((error: unknown) => error);
      expect(isDatabaseUnavailable(failure)).toBe(true);
      const { rows } = await sql<{ one: number }>`SELECT 1 AS one`.execute(db);
      expect(rows[0]?.one).toBe(1);
    } finally {
      await db.destroy();
    }
  });
});

describe('isDatabaseUnavailable', () => {
  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    [
      'a fast stop (57P01)',
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    ],
    ['a server starting up (57P03)', Object.assign(new Error('the database system is starting up'), { code: '57P03' })],
    ['a connection exception (08006)', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['an unexpected end', new Error('Connection terminated unexpectedly')],
    ['a pool that cannot connect in time', new Error('timeout exceeded when trying to connect')],
    ['one wrapped as a cause', new Error('wrapped', { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) })],
    ['every address refused', new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })])],
  ])('says yes to %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a syntax error', Object.assign(new Error('syntax error'), { code: '42601' })],
    ['a statement timeout', Object.assign(new Error('canceling statement'), { code: '57014' })],
    ['a plain error', new Error('something else')],
    ['a string', 'Connection terminated unexpectedly'],
    ['null', null],
  ])('says no to %s', (_name, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
