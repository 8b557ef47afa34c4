import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from './databases.ts';
import { testClient, testPool } from './pg-clients.ts';

// A file's teardown drops its database WITH (FORCE), which kills the backends of whatever pool or
// client is still connected to it; their idle connections must not end the run with an
// unhandled `error` (npm test once exited 1 with every test passed, on a 57P01).
const uncaught: unknown[] = [];
const record = (error: unknown) => uncaught.push(error);
afterEach(() => {
  process.off('uncaughtException', record);
  uncaught.length = 0;
});

describe('pools and clients of the tests', () => {
  it('a pool with an idle client whose database is dropped WITH (FORCE) raises no unhandled error', async () => {
    process.on('uncaughtException', record);
    const database = await createTestDatabase({ empty: true });
    const pool = testPool({ connectionString: database.url, max: 1 });
    await pool.query('SELECT 1');
    expect(pool.idleCount).toBe(1);
    // The pool drops the client whose backend was killed (after the 57P01 reached it), in this order.
    const removed = new Promise((resolve) => pool.once('remove', resolve));
    await database.drop();
    await removed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(uncaught).toEqual([]);
    expect(pool.totalCount).toBe(0);
    await pool.end();
  });

  it('an idle client whose database is dropped WITH (FORCE) raises no unhandled error', async () => {
    process.on('uncaughtException', record);
    const database = await createTestDatabase({ empty: true });
    const client = testClient({ connectionString: database.url });
    await client.connect();
    await client.query('SELECT 1');
    const ended = new Promise((resolve) => client.once('end', resolve));
    await database.drop();
    await ended;
    await new Promise((resolve) => setImmediate(resolve));
    expect(uncaught).toEqual([]);
  });
});
