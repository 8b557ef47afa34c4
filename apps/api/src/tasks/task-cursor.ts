import type { TaskCursor } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';

/**
 * Keyset cursors are opaque to clients: base64url of [created_at as Postgres prints it, id]. The
 * timestamp stays text so its microseconds survive (a JavaScript Date would drop them and skip or
 * repeat rows that share a millisecond).
 */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2})?$/;
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
    TIMESTAMP.test(value[0]) &&
    UUID.test(value[1])
  ) {
    return { createdAt: value[0], id: value[1] };
  }
  throw new TaskgateError('TG_CURSOR_INVALID', 'the cursor is not one this API returned; list again without it');
}
