import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { THREE_STEPS, writeMigrations } from '../../../../test/support/fixture-migrations.ts';
import { checksumOf, defaultMigrationsDir, loadMigrations } from './migration-files.ts';

async function loadError(files: Record<string, string>): Promise<Error> {
  try {
    await loadMigrations(await writeMigrations(files));
  } catch (error) {
    expect(isTaskgateError(error, 'TG_MIGRATION_FILES_INVALID')).toBe(true);
    return error as Error;
  }
  throw new Error('expected the files to be refused');
}

describe('loadMigrations', () => {
  it('loads the repository migrations, each with an up and a down file', async () => {
    const migrations = await loadMigrations(defaultMigrationsDir);
    expect(migrations[0]?.version).toBe(1);
    expect(migrations[0]?.name).toBe('tasks');
    for (const migration of migrations) {
      expect(migration.upSql).toMatch(/\S/);
      expect(migration.downSql).toMatch(/\S/);
      expect(migration.checksum).toBe(checksumOf(migration.upSql));
    }
    const versions = migrations.map((m) => m.version);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
  });

  it('orders by version and ignores files that are not SQL', async () => {
    const migrations = await loadMigrations(await writeMigrations({ ...THREE_STEPS, 'README.md': '# notes' }));
    expect(migrations.map((m) => `${m.version}:${m.name}`)).toEqual(['1:alpha', '2:beta', '3:gamma']);
  });

  it('refuses a misnamed SQL file', async () => {
    expect((await loadError({ ...THREE_STEPS, '4_delta.sql': 'SELECT 1;' })).message).toContain('4_delta.sql');
  });

  it('refuses an up file without its down file', async () => {
    expect((await loadError({ '0001_alpha.up.sql': 'SELECT 1;' })).message).toContain('no matching .down.sql');
  });

  it('refuses one version used by two names', async () => {
    const error = await loadError({
      ...THREE_STEPS,
      '0002_other.up.sql': 'SELECT 1;',
      '0002_other.down.sql': 'SELECT 1;',
    });
    expect(error.message).toContain('version 0002 is used by two names');
  });

  it('refuses an empty up file and a missing directory', async () => {
    expect((await loadError({ '0001_alpha.up.sql': '  \n', '0001_alpha.down.sql': 'SELECT 1;' })).message).toContain(
      'is empty',
    );
    await expect(loadMigrations('/nonexistent/taskgate/migrations')).rejects.toThrow(
      /cannot read the migrations directory/,
    );
  });

  it('computes the same checksum for LF and CRLF line endings', () => {
    expect(checksumOf('CREATE TABLE a (id int);\r\nSELECT 1;\r\n')).toBe(
      checksumOf('CREATE TABLE a (id int);\nSELECT 1;\n'),
    );
  });
});
