import { describe, expect, it } from 'vitest';
import { pageOf } from './list-page.ts';

const key = (item: string) => item;

describe('pageOf', () => {
  it('pages a sorted list by key, and an entry added between pages neither repeats nor skips another', () => {
    const first = pageOf(['a', 'c', 'e', 'g'], undefined, 2, key);
    if ('problem' in first) throw new Error(first.problem);
    expect(first.items).toEqual(['a', 'c']);
    // 'b' arrives and 'e' goes before the next page is asked for.
    const second = pageOf(['a', 'b', 'c', 'g'], first.nextCursor, 2, key);
    if ('problem' in second) throw new Error(second.problem);
    expect(second).toEqual({ items: ['g'], nextCursor: null });
  });

  it('gives no cursor on the last page, even a full one', () => {
    expect(pageOf(['a', 'b'], undefined, 2, key)).toEqual({ items: ['a', 'b'], nextCursor: null });
    expect(pageOf([], undefined, 2, key)).toEqual({ items: [], nextCursor: null });
  });

  it('refuses a cursor it did not make', () => {
    const other = Buffer.from('x:a').toString('base64url');
    for (const cursor of ['', 'a b', 'a=', 7, null, {}, other, 'a'.repeat(5000)]) {
      expect(pageOf(['a'], cursor, 2, key)).toHaveProperty('problem');
    }
  });
});
