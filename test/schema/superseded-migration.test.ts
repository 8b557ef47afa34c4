import { fileURLToPath } from 'node:url';
import { loadMigrations, MigrationRunner } from '@taskgate/db';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';

const LEDGER = fileURLToPath(new URL('../../examples/ledger/migrations/', import.meta.url));
/** The checksum 0003_ledger_outbox.up.sql had while it also created the ledger's tables. */
const OLD_0003 = '58e8a2d531374436660728a2e42a3f8569afb08dc9087c589798fb3984ad5731';

// A database migrated before the ledger's tables moved from Taskgate's 0003 to examples/ledger.
describe('a database migrated before the ledger left the platform', () => {
  const database = useTestDatabase();

  async function runner(): Promise<MigrationRunner> {
    return new MigrationRunner({
      connectionString: database.url,
      migrations: await loadMigrations(),
      modules: [{ module: 'ledger', migrations: await loadMigrations(LEDGER), dir: LEDGER }],
    });
  }

  it("accepts 0003's earlier text as applied, and the ledger's 0001 adopts the tables with their rows", async () => {
    const client = testClient({ connectionString: database.url });
    await client.connect();
    try {
      // As such a database looks: 0003 recorded under its old checksum, the ledger's tables there
      // (with a row), and no record of the ledger module.
      await client.query('UPDATE taskgate_migrations SET checksum = $1 WHERE version = 3', [OLD_0003]);
      await client.query("DELETE FROM taskgate_module_migrations WHERE module = 'ledger'");
      await client.query("INSERT INTO inventory (tenant_id, sku, available) VALUES ('acme', 'kept', 5)");

      const before = await (await runner()).status();
      expect(before.status.find((row) => row.version === 3)?.state).toBe('applied');
      expect(before.modules.find((entry) => entry.module === 'ledger')?.status.map((row) => row.state)).toEqual([
        'pending',
      ]);
      const applied = await (await runner()).up();
      expect(applied.map((step) => `${step.module ?? 'taskgate'} ${step.version}`)).toEqual(['ledger 1']);
      const { rows } = await client.query("SELECT available FROM inventory WHERE sku = 'kept'");
      expect(rows).toEqual([{ available: 5 }]);
    } finally {
      await client.end();
    }
  });

  it('still refuses any other text of an applied migration', async () => {
    const client = testClient({ connectionString: database.url });
    await client.connect();
    try {
      await client.query("UPDATE taskgate_migrations SET checksum = repeat('0', 64) WHERE version = 3");
      await expect((await runner()).up()).rejects.toMatchObject({ code: 'TG_MIGRATION_CHECKSUM_MISMATCH' });
    } finally {
      await client.query('UPDATE taskgate_migrations SET checksum = $1 WHERE version = 3', [OLD_0003]);
      await client.end();
    }
  });
});
