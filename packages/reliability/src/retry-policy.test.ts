import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprintInput, mayRetryAutomatically } from './retry-policy.ts';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, 1], c: null } })).toBe('{"a":{"c":null,"d":[3,1]},"b":1}');
    expect(canonicalJson({ a: { c: null, d: [3, 1] }, b: 1 })).toBe(canonicalJson({ b: 1, a: { d: [3, 1], c: null } }));
  });

  it('drops undefined members as JSON.stringify does, and writes undefined array items as null', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 2] })).toBe('{"b":[null,2]}');
  });

  it('refuses values with no JSON form instead of hashing something ambiguous', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(/NaN/);
    expect(() => canonicalJson({ a: Number.POSITIVE_INFINITY })).toThrow(/Infinity/);
    expect(() => canonicalJson(undefined)).toThrow(/undefined/);
  });

  it('escapes keys and strings like JSON', () => {
    expect(canonicalJson({ 'a"b': 'x\ny' })).toBe('{"a\\"b":"x\\ny"}');
  });
});

describe('fingerprintInput', () => {
  it('leaves the key out and binds the operation name', () => {
    const a = fingerprintInput('reserve_inventory', { sku: 'A', quantity: 2, idempotencyKey: 'k1' });
    const b = fingerprintInput('reserve_inventory', { quantity: 2, sku: 'A', idempotencyKey: 'k2' });
    expect(a).toBe(b);
    expect(fingerprintInput('charge_account', { sku: 'A', quantity: 2 })).not.toBe(a);
    expect(fingerprintInput('reserve_inventory', { sku: 'A', quantity: 3 })).not.toBe(a);
  });
});

describe('mayRetryAutomatically', () => {
  it('follows the retry matrix', () => {
    expect(mayRetryAutomatically('safe', false)).toBe(true);
    expect(mayRetryAutomatically('conditional', true)).toBe(true);
    expect(mayRetryAutomatically('conditional', false)).toBe(false);
    expect(mayRetryAutomatically('unsafe', true)).toBe(false);
  });
});
