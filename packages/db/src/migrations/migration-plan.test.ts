import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import type { Migration } from './migration-files.ts';
import {
  type AppliedMigration,
  assertKnownTarget,
  assertMigratable,
  compareMigrations,
  pendingMigrations,
  revertibleMigrations,
} from './migration-plan.ts';

const migration = (version: number, checksum = `sum${version}`): Migration => ({
  version,
  name: `m${version}`,
  upSql: `-- up ${version}`,
  downSql: `-- down ${version}`,
  checksum,
  upFile: `${version}.up.sql`,
  downFile: `${version}.down.sql`,
});
const applied = (version: number, checksum = `sum${version}`): AppliedMigration => ({
  version,
  name: `m${version}`,
  checksum,
  appliedAt: new Date(0),
});

describe('compareMigrations', () => {
  it('marks known-and-recorded as applied and the rest as pending', () => {
    const rows = compareMigrations([migration(1), migration(2)], [applied(1)]);
    expect(rows.map((row) => [row.version, row.state])).toEqual([
      [1, 'applied'],
      [2, 'pending'],
    ]);
  });

  it('marks recorded-but-unknown migrations as unknown, in version order', () => {
    const rows = compareMigrations([migration(1)], [applied(1), applied(7)]);
    expect(rows.map((row) => [row.version, row.state])).toEqual([
      [1, 'applied'],
      [7, 'unknown'],
    ]);
  });

  it('marks an applied migration whose checksum changed as edited', () => {
    const rows = compareMigrations([migration(1, 'new')], [applied(1, 'old')]);
    expect(rows[0]?.state).toBe('edited');
  });
});

describe('assertMigratable', () => {
  it('accepts applied and pending rows', () => {
    expect(() => assertMigratable(compareMigrations([migration(1), migration(2)], [applied(1)]))).not.toThrow();
  });

  it('refuses unknown rows with TG_MIGRATION_DB_AHEAD naming them', () => {
    try {
      assertMigratable(compareMigrations([migration(1)], [applied(1), applied(12)]));
      expect.unreachable();
    } catch (error) {
      expect(isTaskgateError(error, 'TG_MIGRATION_DB_AHEAD')).toBe(true);
      expect((error as Error).message).toContain('0012_m12');
    }
  });

  it('refuses edited rows with TG_MIGRATION_CHECKSUM_MISMATCH', () => {
    expect(() => assertMigratable(compareMigrations([migration(1, 'b')], [applied(1, 'a')]))).toThrow(
      /edited after they ran \(0001_m1\)/,
    );
  });
});

describe('pendingMigrations and revertibleMigrations', () => {
  const known = [migration(1), migration(2), migration(3)];

  it('applies pending migrations in version order, up to an inclusive target', () => {
    const status = compareMigrations(known, [applied(1)]);
    expect(pendingMigrations(known, status).map((m) => m.version)).toEqual([2, 3]);
    expect(pendingMigrations(known, status, 2).map((m) => m.version)).toEqual([2]);
  });

  it('applies a pending migration older than the newest applied one (merged branches)', () => {
    const status = compareMigrations(known, [applied(1), applied(3)]);
    expect(pendingMigrations(known, status).map((m) => m.version)).toEqual([2]);
  });

  it('reverts only the newest applied migration by default, and everything above a target', () => {
    const status = compareMigrations(known, [applied(1), applied(2), applied(3)]);
    expect(revertibleMigrations(known, status).map((m) => m.version)).toEqual([3]);
    expect(revertibleMigrations(known, status, 1).map((m) => m.version)).toEqual([3, 2]);
    expect(revertibleMigrations(known, status, 0).map((m) => m.version)).toEqual([3, 2, 1]);
  });
});

describe('assertKnownTarget', () => {
  const known = [migration(1), migration(2), migration(3)];
  const refusal = (run: () => void): string => {
    try {
      run();
    } catch (error) {
      if (isTaskgateError(error) && error.code === 'TG_USAGE') return error.message;
      throw error;
    }
    throw new Error('accepted');
  };

  it('accepts no target and every known version', () => {
    for (const to of [undefined, 1, 2, 3]) expect(() => assertKnownTarget(known, to)).not.toThrow();
  });

  it('refuses a version that names no migration, with the range there is', () => {
    expect(refusal(() => assertKnownTarget(known, 9))).toBe(
      "--to 9 names none of Taskgate's migrations (they are 1 to 3)",
    );
    expect(refusal(() => assertKnownTarget(known, 0))).toContain('--to 0 names none');
    expect(refusal(() => assertKnownTarget([migration(1)], 2))).toContain('(there is only 1)');
    expect(refusal(() => assertKnownTarget([], 1, { module: 'billing' }))).toBe(
      "--to 1 names none of tool module billing's migrations (there are none)",
    );
  });

  it('lets down take 0, and says so when it refuses', () => {
    expect(() => assertKnownTarget(known, 0, { allowZero: true })).not.toThrow();
    expect(refusal(() => assertKnownTarget(known, 7, { allowZero: true }))).toBe(
      "--to 7 names none of Taskgate's migrations (they are 1 to 3, or 0 to revert them all)",
    );
  });
});
