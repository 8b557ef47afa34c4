import { describe, expect, it } from 'vitest';
import { ReconnectSchedule } from './reconnect-schedule.ts';

describe('ReconnectSchedule', () => {
  it('draws each delay under a ceiling that doubles to the cap, and starts over after a success', () => {
    const schedule = new ReconnectSchedule({ baseMs: 100, capMs: 800, clientId: 'c1' });
    const delays = Array.from({ length: 6 }, () => schedule.next());
    delays.forEach((delay, attempt) => {
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(Math.min(800, 100 * 2 ** attempt));
    });
    schedule.reset();
    expect(schedule.attempt).toBe(0);
    expect(schedule.next()).toBeLessThan(100);
  });

  it('is the same for the same client id, and differs between clients', () => {
    const run = (clientId: string) => {
      const schedule = new ReconnectSchedule({ clientId, baseMs: 100, capMs: 30_000 });
      return Array.from({ length: 8 }, () => schedule.next());
    };
    expect(run('a')).toEqual(run('a'));
    expect(run('a')).not.toEqual(run('b'));
  });
});
