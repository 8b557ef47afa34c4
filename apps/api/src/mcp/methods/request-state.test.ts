import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_REQUEST_STATE_CHARS, RequestStateSealer } from './request-state.ts';

const key = randomBytes(32);
const payload = {
  principal: 'acme',
  request: 'r1',
  answers: { a: { action: 'accept' } },
  asked: { b: 'elicitation/create' },
};
const expect_ = { principal: 'acme', request: 'r1' };

describe('RequestStateSealer', () => {
  it('opens what it sealed, on any sealer with the same key', () => {
    const state = new RequestStateSealer({ key }).seal(payload) as string;
    expect(new RequestStateSealer({ key: Buffer.from(key) }).open(state, expect_)).toEqual(payload);
  });

  it('refuses a state altered anywhere, made with another key, or not a state at all', () => {
    const sealer = new RequestStateSealer({ key });
    const state = sealer.seal(payload) as string;
    const [body, mac] = state.split('.') as [string, string];
    // The body says another tenant: its signature no longer matches.
    const forged = Buffer.from(Buffer.from(body, 'base64url').toString().replace('"acme"', '"evil"')).toString(
      'base64url',
    );
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    expect(sealer.open(`${forged}.${mac}`, { principal: 'evil', request: 'r1' })).toEqual({ problem: 'signature' });
    expect(sealer.open(`${flip(body, 5)}.${mac}`, expect_)).toEqual({ problem: 'signature' });
    expect(sealer.open(`${body}.${flip(mac, 3)}`, expect_)).toEqual({ problem: 'signature' });
    expect(sealer.open(`${state}-TAMPERED`, expect_)).toEqual({ problem: 'signature' });
    expect(sealer.open(`${state}!`, expect_)).toEqual({ problem: 'malformed' });
    expect(new RequestStateSealer({ key: randomBytes(32) }).open(state, expect_)).toEqual({ problem: 'signature' });
    for (const junk of ['', '.', 'a.b.c', 7, null, {}, 'x'.repeat(MAX_REQUEST_STATE_CHARS + 1)]) {
      expect(sealer.open(junk, expect_), String(junk).slice(0, 20)).toHaveProperty('problem');
    }
  });

  it('binds the principal, the request and an expiry', () => {
    let now = 1_000;
    const sealer = new RequestStateSealer({ key, now: () => now, ttlMs: 60_000 });
    const state = sealer.seal(payload) as string;
    expect(sealer.open(state, { principal: 'globex', request: 'r1' })).toEqual({ problem: 'principal' });
    expect(sealer.open(state, { principal: 'acme', request: 'r2' })).toEqual({ problem: 'request' });
    now += 59_999;
    expect(sealer.open(state, expect_)).toEqual(payload);
    now += 1;
    expect(sealer.open(state, expect_)).toEqual({ problem: 'expired' });
  });

  it('makes no state too long to carry, and takes no key too short to trust', () => {
    const sealer = new RequestStateSealer({ key });
    expect(sealer.seal({ ...payload, answers: { big: 'x'.repeat(MAX_REQUEST_STATE_CHARS) } })).toBeNull();
    expect(() => new RequestStateSealer({ key: randomBytes(16) })).toThrow(TypeError);
  });
});
