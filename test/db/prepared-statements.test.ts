import { createPool, MAX_PREPARED_PER_CONNECTION, REPLAN_AFTER_EXECUTIONS } from '@taskgate/db';
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';

const database = useTestDatabase();
let pool: pg.Pool | undefined;

afterEach(async () => {
  await pool?.end();
  pool = undefined;
});

async function preparedOn(client: pg.PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ statement: string }>(
    "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'tg\\_%' ORDER BY statement",
  );
  return rows.map((row) => row.statement);
}

describe('pools prepare parameterized statements', () => {
  it('runs a statement with parameters as a named prepared statement, parsed once per connection', async () => {
    pool = createPool(database.url, { applicationName: 'prepared-test', max: 1 });
    const client = await pool.connect();
    try {
      for (let n = 0; n < 3; n++) {
        const { rows } = await client.query<{ v: number }>('SELECT $1::int + 1 AS v', [n]);
        expect(rows[0]?.v).toBe(n + 1);
      }
      await client.query('SELECT 42');
      // One entry for the parameterized text, however often it ran; none for the bare one.
      expect(await preparedOn(client)).toEqual(['SELECT $1::int + 1 AS v']);
      const { rows } = await client.query<{ runs: string }>(
        'SELECT generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE statement = $1',
        ['SELECT $1::int + 1 AS v'],
      );
      expect(Number(rows[0]?.runs)).toBe(3);
    } finally {
      client.release();
    }
  });

  it('leaves transactions and errors working: a failed statement does not poison the name', async () => {
    pool = createPool(database.url, { applicationName: 'prepared-test', max: 1 });
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await expect(client.query('SELECT 1 / $1::int', [0])).rejects.toThrow(/division by zero/);
      await client.query('ROLLBACK');
      const { rows } = await client.query<{ v: number }>('SELECT 1 / $1::int AS v', [1]);
      expect(rows[0]?.v).toBe(1);
    } finally {
      client.release();
    }
  });

  it(`stops naming new texts past ${MAX_PREPARED_PER_CONNECTION} on one connection, and still runs them`, async () => {
    pool = createPool(database.url, { applicationName: 'prepared-test', max: 1 });
    const client = await pool.connect();
    try {
      for (let n = 0; n < MAX_PREPARED_PER_CONNECTION + 10; n++) {
        const { rows } = await client.query<{ v: number }>(`SELECT $1::int AS v, ${n} AS n`, [n]);
        expect(rows[0]?.v).toBe(n);
      }
      expect((await preparedOn(client)).length).toBe(MAX_PREPARED_PER_CONNECTION);
      // A text named before the cap is still used by name.
      await client.query('SELECT $1::int AS v, 0 AS n', [7]);
      expect((await preparedOn(client)).length).toBe(MAX_PREPARED_PER_CONNECTION);
    } finally {
      client.release();
    }
  });

  it(`drops a connection's cached plans after ${REPLAN_AFTER_EXECUTIONS[0]} executions: a plan made while a table was tiny does not outlive its growth`, async () => {
    pool = createPool(database.url, { applicationName: 'prepared-test', max: 1 });
    const client = await pool.connect();
    try {
      await client.query('CREATE TABLE replan_probe (id int PRIMARY KEY, status text NOT NULL, v int)');
      await client.query("CREATE INDEX replan_probe_working ON replan_probe (v) WHERE status = 'working'");
      const text = "SELECT v FROM replan_probe WHERE id = ANY($1::int[]) AND status = 'working'";
      for (let n = 0; n < 10; n++) await client.query(text, [[1, 2]]);
      const [{ name }] = (
        await client.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE statement = $1', [text])
      ).rows as [{ name: string }];
      const plan = async () =>
        JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) EXECUTE ${name}('{1,2}')`)).rows);
      // The table grows by 50,000 rows and nothing analyzes it (as in a new database's first minute).
      await client.query(
        "INSERT INTO replan_probe SELECT g, CASE WHEN g % 100 = 0 THEN 'working' ELSE 'done' END, g FROM generate_series(1, 50000) g",
      );
      // The generic plan made on the empty table: the partial index, then a filter on id over it.
      expect(await plan()).toContain('replan_probe_working');
      for (let n = 0; n < (REPLAN_AFTER_EXECUTIONS[0] ?? 0); n++) await client.query(text, [[1, 2]]);
      // Past the count the plan is made again, from the table as it is now: the primary key.
      const replanned = await plan();
      expect(replanned).toContain('replan_probe_pkey');
      expect(replanned).not.toContain('replan_probe_working');
    } finally {
      client.release();
    }
  });
});
