import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkJsonValue, MAX_JSON_DEPTH } from './json-value-check.ts';

/** `depth` arrays around `inner`, built without recursion. */
function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** The value a JSON Pointer names (RFC 6901). */
function resolve(value: unknown, pointer: string): unknown {
  if (pointer === '') return value;
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((at, key) => (at as Record<string, unknown>)[key], value);
}

// Strings with any UTF-16 code unit, so lone surrogates and NUL turn up.
const codeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)) });
const goodJson = fc.jsonValue({ maxDepth: 8, stringUnit: 'binary' }).filter((value) => {
  const text = JSON.stringify(value);
  return !text.includes('\\u0000');
});
const badLeaf = fc.oneof(
  fc.constant({ leaf: 'a\u0000b' as unknown, code: 'TG_JSON_STRING_INVALID' }),
  fc.constant({ leaf: 'x\ud800' as unknown, code: 'TG_JSON_STRING_INVALID' }),
  fc.constant({ leaf: '\udfffy' as unknown, code: 'TG_JSON_STRING_INVALID' }),
  fc.constant({ leaf: Number.POSITIVE_INFINITY as unknown, code: 'TG_JSON_NUMBER_INVALID' }),
  fc.constant({ leaf: Number.NEGATIVE_INFINITY as unknown, code: 'TG_JSON_NUMBER_INVALID' }),
  fc.constant({ leaf: Number.NaN as unknown, code: 'TG_JSON_NUMBER_INVALID' }),
);

describe('checkJsonValue', () => {
  it('accepts ordinary JSON, including astral characters and the deepest nesting allowed', () => {
    expect(checkJsonValue({ a: [1, 'é', '😀', null, true, { b: -0.5 }] })).toBeNull();
    expect(checkJsonValue(nested(MAX_JSON_DEPTH))).toBeNull();
    expect(checkJsonValue('plain')).toBeNull();
  });

  it('refuses nesting one level past the limit, and names where', () => {
    expect(checkJsonValue(nested(MAX_JSON_DEPTH + 1))).toEqual({
      code: 'TG_JSON_TOO_DEEP',
      path: `/${Array(MAX_JSON_DEPTH).fill('0').join('/')}`,
      message: expect.stringContaining(`deeper than ${MAX_JSON_DEPTH} levels`),
    });
    expect(checkJsonValue({ a: { b: {} } }, { maxDepth: 2 })?.path).toBe('/a/b');
  });

  it('checks a value nested far beyond any stack without overflowing its own', () => {
    expect(checkJsonValue(JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`))?.code).toBe('TG_JSON_TOO_DEEP');
  });

  it('refuses NUL and unpaired surrogates in strings and in object keys', () => {
    expect(checkJsonValue({ name: 'a\u0000' })).toMatchObject({ code: 'TG_JSON_STRING_INVALID', path: '/name' });
    expect(checkJsonValue(['ok', '\ud83d'])).toMatchObject({ code: 'TG_JSON_STRING_INVALID', path: '/1' });
    expect(checkJsonValue({ 'k\u0000/~': 1 })).toMatchObject({
      code: 'TG_JSON_STRING_INVALID',
      path: '/k\\u0000~1~0',
      message: expect.stringContaining('an object key'),
    });
  });

  it('refuses numbers JSON.parse read as Infinity', () => {
    expect(checkJsonValue(JSON.parse('{"ttl": 1e400}'))).toMatchObject({
      code: 'TG_JSON_NUMBER_INVALID',
      path: '/ttl',
    });
    expect(checkJsonValue(JSON.parse('[-1e400]'))?.code).toBe('TG_JSON_NUMBER_INVALID');
    expect(checkJsonValue(1e308)).toBeNull();
  });

  describe('properties', () => {
    it('accepts every JSON value that is shallow enough and holds only NUL-free Unicode', () => {
      fc.assert(fc.property(goodJson, (value) => checkJsonValue(value) === null));
    });

    it('finds a bad leaf put anywhere in a good value, and its path names that leaf', () => {
      fc.assert(
        fc.property(goodJson, fc.array(fc.nat()), badLeaf, (base, choices, { leaf, code }) => {
          // Walk down `choices` through the containers there are, then put the leaf there.
          const root: { value: unknown } = { value: structuredClone(base) };
          let holder: Record<string, unknown> | unknown[] = root as Record<string, unknown>;
          let key: string | number = 'value';
          for (const choice of choices) {
            const next = (holder as Record<string, unknown>)[key as string];
            if (next === null || typeof next !== 'object') break;
            const keys = Array.isArray(next) ? next.map((_, i) => i) : Object.keys(next);
            if (keys.length === 0) break;
            holder = next as Record<string, unknown>;
            key = keys[choice % keys.length] as string | number;
          }
          // defineProperty: fc.jsonValue makes "__proto__" keys, which plain assignment would not set.
          Object.defineProperty(holder, key, { value: leaf, enumerable: true, writable: true, configurable: true });
          const found = checkJsonValue(root.value);
          expect(found?.code).toBe(code);
          expect(Object.is(resolve(root.value, found?.path ?? ''), leaf)).toBe(true);
        }),
      );
    });

    it('decides by nesting alone: a good value wrapped n times is refused exactly when it gets too deep', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: MAX_JSON_DEPTH + 3 }), fc.integer({ min: 0, max: 3 }), (n, inner) => {
          const value = nested(n, nested(inner, 'x'));
          expect(checkJsonValue(value)?.code ?? null).toBe(n + inner > MAX_JSON_DEPTH ? 'TG_JSON_TOO_DEEP' : null);
        }),
      );
    });

    it('never throws, whatever strings it meets, and refuses exactly the strings Postgres cannot hold', () => {
      fc.assert(
        fc.property(codeUnits, codeUnits, (key, text) => {
          const found = checkJsonValue({ [key]: text });
          const bad = (s: string) => s.includes('\u0000') || !s.isWellFormed();
          expect(found === null).toBe(!bad(key) && !bad(text));
          if (found) expect(found.code).toBe('TG_JSON_STRING_INVALID');
        }),
      );
    });
  });
});
