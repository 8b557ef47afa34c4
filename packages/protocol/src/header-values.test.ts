import { describe, expect, it } from 'vitest';
import { decodeHeaderValue, encodeHeaderValue } from './header-values.ts';

describe('header value encoding (2026-07-28 Value Encoding)', () => {
  it('round-trips the examples of the spec', () => {
    const examples: [string, string][] = [
      ['us-west1', 'us-west1'],
      ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
      [' padded ', '=?base64?IHBhZGRlZCA=?='],
      ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
      ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
    ];
    for (const [value, header] of examples) {
      expect(encodeHeaderValue(value)).toBe(header);
      expect(decodeHeaderValue(header)).toBe(value);
    }
  });

  it('refuses values a header may not carry, and broken Base64', () => {
    expect(decodeHeaderValue('caf\u00e9')).toBeNull();
    expect(decodeHeaderValue('a\u0000b')).toBeNull();
    expect(decodeHeaderValue('=?base64?not base64!?=')).toBeNull();
    expect(decodeHeaderValue('=?base64?/w==?=')).toBeNull(); // 0xFF is not UTF-8
    expect(decodeHeaderValue('=?base64?SGVsbG8?=')).toBeNull(); // padding missing
    expect(decodeHeaderValue('=?base64?SGVs!!!bG8=?=')).toBeNull();
  });

  it('takes a value with only one of the two markers as a literal', () => {
    expect(decodeHeaderValue('=?base64?unterminated')).toBe('=?base64?unterminated');
    expect(decodeHeaderValue('SGVsbG8=?=')).toBe('SGVsbG8=?=');
  });
});
