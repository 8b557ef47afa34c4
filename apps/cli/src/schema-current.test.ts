import type { MigrationReport, MigrationStatus } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { assertSchemaCurrent } from './schema-current.ts';

const row = (version: number, state: MigrationStatus['state']): MigrationStatus => ({
  version,
  name: `m${version}`,
  state,
  appliedAt: state === 'pending' ? null : new Date(0),
});
const current = { installed: 26, required: 26 };

function report(modules: MigrationReport['modules'], status = [row(1, 'applied')]): MigrationReport {
  return { status, pgBoss: current, modules };
}

function failure(check: () => void): Error {
  try {
    check();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the schema to be refused');
}

describe('assertSchemaCurrent', () => {
  it("counts a loaded tool module's pending migrations as the schema being behind", () => {
    const error = failure(() =>
      assertSchemaCurrent(
        report([{ module: 'acme-notes', loaded: true, dir: null, status: [row(1, 'applied'), row(2, 'pending')] }]),
      ),
    );
    expect(isTaskgateError(error, 'TG_MIGRATION_PENDING')).toBe(true);
    expect(error.message).toBe(
      'the database schema is behind this code (1 migration(s) pending, 1 of them of tool modules); run taskgate migrate up first',
    );
  });

  it('refuses a loaded module that is ahead of its code, naming it', () => {
    const error = failure(() =>
      assertSchemaCurrent(report([{ module: 'acme-notes', loaded: true, dir: null, status: [row(3, 'unknown')] }])),
    );
    expect(isTaskgateError(error, 'TG_MIGRATION_DB_AHEAD')).toBe(true);
    expect(error.message).toContain('tool module acme-notes');
  });

  it('accepts applied modules and ignores the rows of modules that are not loaded', () => {
    expect(() =>
      assertSchemaCurrent(
        report([
          { module: 'acme-notes', loaded: true, dir: null, status: [row(1, 'applied')] },
          { module: 'old-module', loaded: false, dir: null, status: [row(1, 'unloaded')] },
        ]),
      ),
    ).not.toThrow();
  });

  it("still counts Taskgate's own pending migrations and pg-boss's schema", () => {
    const error = failure(() =>
      assertSchemaCurrent({ status: [row(1, 'pending')], pgBoss: { installed: null, required: 26 }, modules: [] }),
    );
    expect(error.message).toContain('(1 migration(s) pending, pg-boss schema not current)');
  });
});
