import { describe, expect, it } from 'vitest';
import { Rng } from './rng.ts';
import { buildSchedule, type FaultKind, RATES_PER_MINUTE } from './schedule.ts';

const count = (schedule: ReturnType<typeof buildSchedule>, kind: FaultKind) =>
  schedule.filter((entry) => entry.fault.kind === kind).length;

describe('the chaos fault schedule', () => {
  it('is the same for the same seed, and another for another seed', () => {
    const first = buildSchedule(new Rng(1234), 300_000, 1);
    expect(buildSchedule(new Rng(1234), 300_000, 1)).toEqual(first);
    expect(buildSchedule(new Rng(1235), 300_000, 1)).not.toEqual(first);
  });

  it('gives a 15-minute run at least 20 Postgres restarts and 50 process kills, whatever the seed', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const schedule = buildSchedule(new Rng(seed), 15 * 60_000, 1);
      expect(count(schedule, 'postgres-restart'), `seed ${seed}`).toBeGreaterThanOrEqual(20);
      expect(count(schedule, 'kill'), `seed ${seed}`).toBeGreaterThanOrEqual(50);
    }
  });

  it('has every kind of fault at least once in a short run, in time order, inside the phase', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const schedule = buildSchedule(new Rng(seed), 60_000, 1.5);
      for (const kind of Object.keys(RATES_PER_MINUTE) as FaultKind[]) {
        expect(count(schedule, kind), `seed ${seed}, ${kind}`).toBeGreaterThan(0);
      }
      const times = schedule.map((entry) => entry.atMs);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(Math.min(...times)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...times)).toBeLessThan(60_000);
    }
  });

  it('scales with intensity', () => {
    const calm = buildSchedule(new Rng(7), 600_000, 0.5);
    const wild = buildSchedule(new Rng(7), 600_000, 4);
    expect(count(wild, 'kill')).toBeGreaterThan(count(calm, 'kill') * 5);
  });
});
