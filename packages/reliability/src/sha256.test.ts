import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from './sha256.ts';

const nodeSha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('sha256Hex', () => {
  it('gives the FIPS 180-4 example digests', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('agrees with node:crypto around every padding boundary', () => {
    for (let length = 0; length <= 200; length++)
      expect(sha256Hex('x'.repeat(length))).toBe(nodeSha256('x'.repeat(length)));
  });

  it('hashes the UTF-8 bytes of any string as node:crypto does', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        // Lone surrogates become U+FFFD in both encoders; well-formed text is what callers pass.
        expect(sha256Hex(text)).toBe(nodeSha256(text));
      }),
      { numRuns: 500 },
    );
  });
});
