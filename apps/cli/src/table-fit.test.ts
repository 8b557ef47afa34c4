import { describe, expect, it } from 'vitest';
import { ago, fitTable, tableWidth } from './table-fit.ts';

describe('fitTable', () => {
  const header = ['ID', 'NAME', 'NOTE'];
  const rows = [['0123456789', 'a-rather-long-name', 'a note longer than the rest of the line']];

  it('cuts the shrinkable columns in order, each down to its floor, and never the others', () => {
    const lines = fitTable(header, rows, 34, [
      { column: 2, min: 8 },
      { column: 1, min: 6 },
    ]);
    expect(lines).toEqual(['ID          NAME          NOTE', '0123456789  a-rather-lo…  a note …']);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(34);
  });

  it('leaves a table alone that fits, and every table when the width is unbounded', () => {
    const wide = fitTable(header, rows, Number.POSITIVE_INFINITY, [{ column: 2, min: 0 }]);
    expect(wide[1]).toBe('0123456789  a-rather-long-name  a note longer than the rest of the line');
  });
});

describe('ago', () => {
  it('says how long ago in the largest whole unit, and how far ahead for a time to come', () => {
    const now = Date.parse('2026-01-02T00:00:00Z');
    expect(ago('2026-01-01T23:59:20Z', now)).toBe('40s ago');
    expect(ago('2026-01-01T22:00:00Z', now)).toBe('2h ago');
    expect(ago('2025-12-30T00:00:00Z', now)).toBe('3d ago');
    expect(ago('2026-01-02T23:00:00Z', now)).toBe('in 23h');
  });
});

describe('tableWidth', () => {
  it('is the terminal width on a terminal (80 when it says none) and unbounded on a pipe', () => {
    expect(tableWidth({ isTTY: true, columns: 100 })).toBe(100);
    expect(tableWidth({ isTTY: true })).toBe(80);
    expect(tableWidth({})).toBe(Number.POSITIVE_INFINITY);
  });
});
