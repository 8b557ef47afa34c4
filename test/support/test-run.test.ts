import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createTestDatabase, DB_PREFIX, dropDatabase, runPrefix } from './databases.ts';
import { testClient } from './pg-clients.ts';
import { newRunId, openTestRun } from './test-run.ts';

// The test Postgres is shared with other checkouts and their runs: a run may only drop its own.
async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = testClient({ connectionString: inject('postgres').adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const existing = (client: pg.Client, names: string[]) =>
  client
    .query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname = ANY($1) ORDER BY datname', [names])
    .then(({ rows }) => rows.map((row) => row.datname));

describe('test databases', () => {
  it('are named after the run that created them', async () => {
    const { runId } = inject('postgres');
    expect(runId).toMatch(/^\d{10}_[0-9a-f]{12}$/);
    expect(newRunId()).not.toBe(newRunId());
    const [a, b] = [await createTestDatabase({ empty: true }), await createTestDatabase({ empty: true })];
    try {
      expect(a.name.startsWith(runPrefix(runId))).toBe(true);
      expect(b.name.startsWith(runPrefix(runId))).toBe(true);
      expect(a.name).not.toBe(b.name);
    } finally {
      await a.drop();
      await b.drop();
    }
  });

  it("a run drops its own databases and leaves every other run's, hours old or new", async () => {
    // Five hours, not more: checkouts still on the former global setup drop every tgtest_ database
    // older than six hours, and would drop this one under the test's feet.
    const fiveHoursAgo = Math.floor(Date.now() / 1000) - 5 * 3600;
    const others = [
      `${DB_PREFIX}${fiveHoursAgo}_${randomBytes(6).toString('hex')}_template`,
      `${DB_PREFIX}${newRunId()}_clone`,
    ];
    const created: string[] = [];
    try {
      // Other runs' databases exist before this run opens (an old one is what a killed run leaves).
      await withAdmin(async (client) => {
        for (const name of others) {
          await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
          created.push(name);
        }
      });
      const run = await openTestRun(inject('postgres').adminUrl);
      const own = `${runPrefix(run.runId)}clone`;
      // Matches LIKE 'tgtest_<runId>_%' ('_' is LIKE's any-character), but is not this run's.
      const lookalike = `tgtestx${run.runId}_clone`;
      created.push(run.template, own, lookalike);
      await withAdmin(async (client) => {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(lookalike)}`);
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(own)} TEMPLATE ${pg.escapeIdentifier(run.template)}`);
      });

      expect(await run.dropDatabases()).toEqual([own, run.template].sort());
      await withAdmin(async (client) => {
        expect(await existing(client, created)).toEqual([...others, lookalike].sort());
      });
    } finally {
      await withAdmin(async (client) => {
        for (const name of created) await dropDatabase(client, name);
      });
    }
  });
});
