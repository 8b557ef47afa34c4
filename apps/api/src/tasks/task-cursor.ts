import type { TaskCursor } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';

/**
 * Keyset cursors are opaque to clients: base64url of [created_at as Postgres prints it, id]. The
 * timestamp stays text so its microseconds survive (a JavaScript Date would drop them and skip or
 * repeat rows that share a millisecond).
 *
 * A cursor comes back from the client, so its timestamp is checked field by field before Postgres
 * casts it: a shape alone would let `2026-13-45 99:99:99+00` through to a cast that raises. What
 * passes is what `timestamptz::text` prints under DateStyle ISO: years 0001–9999 (Postgres has no
 * year 0), real calendar days, no leap second, and an offset within Postgres's ±15:59:59.
 */
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?[+-](\d{2})(?::(\d{2})(?::(\d{2}))?)?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function encodeCursor(cursor: TaskCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt, cursor.id])).toString('base64url');
}

export function decodeCursor(text: string): TaskCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    value = null;
  }
  if (
    Array.isArray(value) &&
    value.length === 2 &&
    typeof value[0] === 'string' &&
    typeof value[1] === 'string' &&
    isPrintedTimestamp(value[0]) &&
    UUID.test(value[1])
  ) {
    return { createdAt: value[0], id: value[1] };
  }
  throw new TaskgateError('TG_CURSOR_INVALID', 'the cursor is not one this API returned; list again without it');
}

function isPrintedTimestamp(text: string): boolean {
  const match = TIMESTAMP.exec(text);
  if (!match) return false;
  const fields = match.slice(1).map((field) => (field === undefined ? 0 : Number(field)));
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, offsetH = 0, offsetM = 0, offsetS = 0] =
    fields;
  return (
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysIn(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59 &&
    offsetH <= 15 &&
    offsetM <= 59 &&
    offsetS <= 59
  );
}

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
