import { describe, expect, it } from 'vitest';
import { RequestCoordinator } from './request-coordinator.ts';

describe('RequestCoordinator', () => {
  it('cancel before complete: the request is cancelled and its late result is dropped', () => {
    const requests = new RequestCoordinator();
    requests.begin(1, 'tools/call');
    expect(requests.cancel(1, 'user gave up')).toEqual({ cancelled: true, reason: 'user gave up' });
    expect(requests.complete(1)).toBe('drop');
    expect(requests.state(1)).toBe('cancelled');
  });

  it('complete before cancel: the response is sent and the late cancel is ignored', () => {
    const requests = new RequestCoordinator();
    requests.begin('a', 'tools/call');
    expect(requests.complete('a')).toBe('send');
    expect(requests.cancel('a')).toEqual({ cancelled: false, why: 'already-completed' });
    expect(requests.state('a')).toBe('completed');
  });

  it('ignores malformed, unknown and duplicate cancels', () => {
    const requests = new RequestCoordinator();
    requests.begin(7, 'tools/call');
    for (const id of [undefined, null, {}, [], Number.NaN, true]) {
      expect(requests.cancel(id)).toEqual({ cancelled: false, why: 'unknown' });
    }
    expect(requests.cancel(8)).toEqual({ cancelled: false, why: 'unknown' });
    // 7 and "7" are different JSON-RPC ids.
    expect(requests.cancel('7')).toEqual({ cancelled: false, why: 'unknown' });
    expect(requests.cancel(7)).toEqual({ cancelled: true, reason: null });
    expect(requests.cancel(7)).toEqual({ cancelled: false, why: 'already-cancelled' });
  });

  it('never cancels initialize', () => {
    const requests = new RequestCoordinator();
    requests.begin(0, 'initialize');
    expect(requests.cancel(0)).toEqual({ cancelled: false, why: 'not-cancellable' });
    expect(requests.complete(0)).toBe('send');
  });

  it('refuses a second request with an id still in flight', () => {
    const requests = new RequestCoordinator();
    expect(requests.begin(1, 'tools/call')).toMatchObject({ ok: true });
    expect(requests.begin(1, 'tools/call')).toEqual({ ok: false, reason: 'duplicate-id' });
    expect(requests.begin('1', 'tools/call')).toMatchObject({ ok: true });
    requests.complete(1);
    expect(requests.begin(1, 'tools/call')).toMatchObject({ ok: true });
    expect(requests.state(1)).toBe('in-flight');
  });

  it('a cancelled request whose id was used again completes nothing of the newer one', () => {
    const requests = new RequestCoordinator();
    const first = requests.begin(7, 'tools/call');
    if (!first.ok) throw new Error('not begun');
    requests.cancel(7, 'stop');
    const second = requests.begin(7, 'tools/call');
    if (!second.ok) throw new Error('not begun');
    expect(second.generation).not.toBe(first.generation);
    // The first call's handler returns late: it is dropped, and the second is still in flight.
    expect(requests.complete(7, first.generation)).toBe('drop');
    expect(requests.state(7)).toBe('in-flight');
    expect(requests.complete(7, second.generation)).toBe('send');
  });

  it('cancels everything in flight when the connection goes, and nothing already settled', () => {
    const requests = new RequestCoordinator();
    requests.begin(1, 'tools/call');
    requests.begin(2, 'tools/call');
    requests.begin('x', 'initialize');
    requests.complete(2);
    expect(requests.cancelAll('stdin closed')).toEqual([1]);
    expect(requests.inFlight).toBe(1);
  });

  it('remembers a bounded number of settled ids', () => {
    const requests = new RequestCoordinator({ memory: 2 });
    for (const id of [1, 2, 3]) {
      requests.begin(id, 'tools/call');
      requests.complete(id);
    }
    expect(requests.state(1)).toBe('unknown');
    expect(requests.state(3)).toBe('completed');
    // A forgotten id may be used again; its late cancel is simply unknown.
    expect(requests.cancel(1)).toEqual({ cancelled: false, why: 'unknown' });
  });
});
