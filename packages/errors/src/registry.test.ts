import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorRegistry, isErrorCode } from './registry.ts';
import { isTaskgateError, TaskgateError } from './taskgate-error.ts';

const docs = readFileSync(path.resolve(import.meta.dirname, '../../../docs/reference/errors.md'), 'utf8');

/** code → [exit, http] from the table in docs/reference/errors.md. */
function documented(): Map<string, [number, number]> {
  const rows = new Map<string, [number, number]>();
  for (const match of docs.matchAll(/^\| `(TG_[A-Z_]+)` \| (\d+) \| (\d+) \|/gm)) {
    rows.set(match[1] as string, [Number(match[2]), Number(match[3])]);
  }
  return rows;
}

describe('error registry', () => {
  it('documents every code, with its exit status and HTTP status, and nothing else', () => {
    const table = documented();
    expect([...table.keys()].sort()).toEqual(Object.keys(errorRegistry).sort());
    for (const [code, definition] of Object.entries(errorRegistry)) {
      expect(table.get(code), code).toEqual([definition.exitCode, definition.httpStatus]);
    }
  });

  it('uses sysexits exit statuses and real HTTP error statuses', () => {
    for (const definition of Object.values(errorRegistry)) {
      expect(definition.exitCode).toBeGreaterThanOrEqual(64);
      expect(definition.exitCode).toBeLessThanOrEqual(78);
      expect(definition.httpStatus).toBeGreaterThanOrEqual(400);
      expect(definition.httpStatus).toBeLessThan(600);
    }
  });

  it('TaskgateError carries its code, definition, details and cause', () => {
    const cause = new Error('ECONNREFUSED');
    const error = new TaskgateError('TG_DB_UNREACHABLE', 'database unreachable', { cause, details: { port: 1 } });
    expect(error.code).toBe('TG_DB_UNREACHABLE');
    expect(error.definition.exitCode).toBe(69);
    expect(error.details).toEqual({ port: 1 });
    expect(error.cause).toBe(cause);
    expect(isTaskgateError(error, 'TG_DB_UNREACHABLE')).toBe(true);
    expect(isTaskgateError(error, 'TG_USAGE')).toBe(false);
    expect(isTaskgateError(new Error('x'))).toBe(false);
    expect(isErrorCode('TG_USAGE')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
  });
});
