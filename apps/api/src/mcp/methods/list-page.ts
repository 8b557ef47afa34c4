/** One page of a sorted list, and the cursor of the next (null on the last). */
export interface ListPage<T> {
  readonly items: readonly T[];
  readonly nextCursor: string | null;
}

const PREFIX = 'k:';

/**
 * A page of `items` (sorted by `key`, keys unique) after `cursor`. The cursor is the last key
 * sent, base64url: opaque to the client (server/utilities/pagination), and keyed rather than an
 * offset, so an entry that comes or goes between two pages neither repeats nor skips another.
 * A cursor this server did not make is -32602.
 */
export function pageOf<T>(
  items: readonly T[],
  cursor: unknown,
  size: number,
  key: (item: T) => string,
): ListPage<T> | { readonly problem: string } {
  let start = 0;
  if (cursor !== undefined) {
    const after = typeof cursor === 'string' ? decode(cursor) : null;
    if (after === null) return { problem: 'params.cursor is not a cursor this server gave out' };
    // The first key after the cursor's (a binary search: lists are sorted by key).
    let low = 0;
    let high = items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (key(items[middle] as T) <= after) low = middle + 1;
      else high = middle;
    }
    start = low;
  }
  const page = items.slice(start, start + size);
  const last = page.at(-1);
  const more = start + size < items.length && last !== undefined;
  return { items: page, nextCursor: more ? Buffer.from(PREFIX + key(last as T)).toString('base64url') : null };
}

function decode(cursor: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  return text.startsWith(PREFIX) ? text.slice(PREFIX.length) : null;
}
