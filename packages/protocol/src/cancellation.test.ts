import { describe, expect, it } from 'vitest';
import { parseCancelledParams } from './cancellation.ts';

describe('parseCancelledParams', () => {
  it('reads the request id and the optional reason', () => {
    expect(parseCancelledParams({ requestId: '123', reason: 'User requested cancellation' })).toEqual({
      requestId: '123',
      reason: 'User requested cancellation',
    });
    expect(parseCancelledParams({ requestId: 7 })).toEqual({ requestId: 7, reason: null });
  });

  it('returns null for malformed params, which the receiver ignores', () => {
    for (const params of [
      undefined,
      null,
      'x',
      {},
      { requestId: null },
      { requestId: 1.5 },
      { requestId: 1, reason: 5 },
    ]) {
      expect(parseCancelledParams(params)).toBeNull();
    }
  });
});
