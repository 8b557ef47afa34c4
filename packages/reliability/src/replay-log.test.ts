import { describe, expect, it } from 'vitest';
import { ReplayLog } from './replay-log.ts';

describe('ReplayLog', () => {
  it('replays the latest event of each key sent after the given id, in order', () => {
    const log = new ReplayLog<string>('s1', 10);
    expect(log.lastId).toBe('s1.0');
    expect(log.append('tools', 't1')).toBe('s1.1');
    expect(log.append('updated a', 'a1')).toBe('s1.2');
    expect(log.append('tools', 't2')).toBe('s1.3');
    expect(log.append('updated b', 'b1')).toBe('s1.4');
    // From the priming id: each key once, its latest, in the order they were last sent.
    expect(log.after('s1.0')).toEqual([
      { id: 's1.2', key: 'updated a', value: 'a1' },
      { id: 's1.3', key: 'tools', value: 't2' },
      { id: 's1.4', key: 'updated b', value: 'b1' },
    ]);
    // t1 (1) was superseded by t2 (3), which the client has not read yet.
    expect(log.after('s1.2')).toEqual([
      { id: 's1.3', key: 'tools', value: 't2' },
      { id: 's1.4', key: 'updated b', value: 'b1' },
    ]);
    expect(log.after('s1.4')).toEqual([]);
  });

  it('does not answer for an id that is not its stream’s, malformed, or from the future', () => {
    const log = new ReplayLog<string>('s1', 10);
    log.append('tools', 't1');
    for (const id of [
      's2.0',
      's1',
      's1.',
      's1.01',
      's1.-1',
      's1.1.0',
      '.1',
      's1.2',
      's1.99999999999999999',
      '',
      's1.1 ',
    ]) {
      expect(log.after(id), id).toBeNull();
    }
    expect(log.after('s1.1')).toEqual([]);
  });

  it('keeps at most maxKeys keys, and cannot answer a resume from before what it forgot', () => {
    const log = new ReplayLog<string>('s1', 2);
    log.append('a', 'a1'); // 1
    log.append('b', 'b1'); // 2
    log.append('c', 'c1'); // 3: a is forgotten
    expect(log.after('s1.0')).toBeNull();
    // The client had read a (1): what it missed is still all here.
    expect(log.after('s1.1')).toEqual([
      { id: 's1.2', key: 'b', value: 'b1' },
      { id: 's1.3', key: 'c', value: 'c1' },
    ]);
    log.append('b', 'b2'); // 4: c is now the oldest, nothing forgotten
    expect(log.after('s1.1')).toEqual([
      { id: 's1.3', key: 'c', value: 'c1' },
      { id: 's1.4', key: 'b', value: 'b2' },
    ]);
  });

  it('refuses a stream id that could not round-trip in an event id', () => {
    expect(() => new ReplayLog('a.b', 1)).toThrow(RangeError);
    expect(() => new ReplayLog('', 1)).toThrow(RangeError);
    expect(() => new ReplayLog('ok', 0)).toThrow(RangeError);
  });
});
