import { describe, expect, it } from 'vitest';
import { callPolicyOf, decideRetry } from './retry-plan.ts';

const withKey = { type: 'object', properties: { idempotencyKey: { type: 'string' } } };

describe('callPolicyOf', () => {
  it('takes what Taskgate publishes', () => {
    expect(
      callPolicyOf({
        inputSchema: withKey,
        _meta: {
          'dev.taskgate/retry': 'conditional',
          'dev.taskgate/idempotencyKey': 'required',
          'dev.taskgate/timeouts': { maxMs: 5 },
        },
      }),
    ).toEqual({ retry: 'conditional', idempotencyKey: 'required', timeouts: { maxMs: 5 }, source: 'published' });
  });

  it('reads annotations only towards caution for other servers', () => {
    expect(callPolicyOf({ annotations: { readOnlyHint: true } }).retry).toBe('safe');
    expect(callPolicyOf({ inputSchema: withKey, annotations: { idempotentHint: true } }).retry).toBe('conditional');
    // Idempotent by its word, but no key to make a retry the same call: unsafe.
    expect(callPolicyOf({ inputSchema: { type: 'object' }, annotations: { idempotentHint: true } }).retry).toBe(
      'unsafe',
    );
    expect(callPolicyOf({}).retry).toBe('unsafe');
    expect(callPolicyOf({ _meta: { 'dev.taskgate/retry': 'always' } }).source).toBe('annotations');
  });
});

describe('decideRetry', () => {
  const half = () => 0.5;
  it('retries an unknown outcome of a safe tool, and of a conditional one with its key', () => {
    expect(decideRetry({ retry: 'safe' }, 'outcome-unknown', 0, false, {}, half)).toEqual({
      retry: true,
      delayMs: 100,
    });
    expect(decideRetry({ retry: 'conditional' }, 'outcome-unknown', 1, true, {}, half)).toEqual({
      retry: true,
      delayMs: 200,
    });
  });

  it('never repeats an unsafe call, or a conditional one without a key, whose outcome is unknown', () => {
    expect(decideRetry({ retry: 'unsafe' }, 'outcome-unknown', 0, true, {}, half)).toEqual({
      retry: false,
      why: 'unsafe',
    });
    expect(decideRetry({ retry: 'conditional' }, 'outcome-unknown', 0, false, {}, half)).toEqual({
      retry: false,
      why: 'no-key',
    });
  });

  it('retries any class when the server said nothing ran, and nothing that was answered', () => {
    expect(decideRetry({ retry: 'unsafe' }, 'unavailable', 0, false, {}, half).retry).toBe(true);
    expect(decideRetry({ retry: 'safe' }, 'final', 0, false, {}, half)).toEqual({ retry: false, why: 'final' });
  });

  it('stops after the attempts, with capped full-jitter delays', () => {
    expect(decideRetry({ retry: 'safe' }, 'unavailable', 2, false, { attempts: 3 }, half)).toEqual({
      retry: false,
      why: 'attempts',
    });
    expect(
      decideRetry({ retry: 'safe' }, 'unavailable', 9, false, { attempts: 20, baseMs: 100, capMs: 1_000 }, () => 0.999),
    ).toEqual({
      retry: true,
      delayMs: 999,
    });
  });
});
