import { describe, expect, it } from 'vitest';
import { SerialRead } from './serial-read.ts';

describe('SerialRead', () => {
  it('runs one read at a time, folds the wakes during a read into one more, and reads nothing after stop', async () => {
    const pending: (() => void)[] = [];
    let reads = 0;
    const errors: string[] = [];
    const serial = new SerialRead(
      () => {
        reads += 1;
        if (reads === 3) return Promise.reject(new Error('outage'));
        return new Promise<void>((resolve) => pending.push(resolve));
      },
      (error) => errors.push(error.message),
    );
    serial.wake();
    serial.wake();
    serial.wake();
    expect(reads).toBe(1);
    pending.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
    // The two wakes during the first read: one more read, not two.
    expect(reads).toBe(2);
    serial.wake();
    pending.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
    // The third read failed: heard, and the next wake reads again.
    expect([reads, errors]).toEqual([3, ['outage']]);
    serial.wake();
    expect(reads).toBe(4);
    serial.wake();
    const stopped = serial.stop();
    pending.shift()?.();
    await stopped;
    // The wake during the fourth read came before stop: still, nothing starts after it.
    expect(reads).toBe(4);
    serial.wake();
    expect(reads).toBe(4);
  });
});
