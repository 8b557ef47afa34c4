import { describe, expect, it } from 'vitest';
import { BoundedBuffer, type BufferItem } from './bounded-buffer.ts';

function update(key: string, value: string): BufferItem<string> {
  return { kind: 'replaceable', key, value };
}

function final(value: string): BufferItem<string> {
  return { kind: 'final', value };
}

function drain<T>(buffer: BoundedBuffer<T>): BufferItem<T>[] {
  const items: BufferItem<T>[] = [];
  for (let item = buffer.shift(); item !== undefined; item = buffer.shift()) items.push(item);
  return items;
}

describe('bounded buffer', () => {
  it('hands items out in the order they were pushed', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 4 });
    for (const item of [update('a', '1'), final('f'), update('b', '1')])
      expect(buffer.push(item)).toEqual({ accepted: true });
    expect(buffer.size).toBe(3);
    expect(drain(buffer)).toEqual([update('a', '1'), final('f'), update('b', '1')]);
    expect(buffer.shift()).toBeUndefined();
    expect(buffer.dropped).toBe(0);
    expect(buffer.needsRefetch).toBe(false);
  });

  it('replaces the last item in place when it has the same key', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 4 });
    buffer.push(update('a', '1'));
    buffer.push(update('b', '1'));
    buffer.push(update('b', '2'));
    expect(drain(buffer)).toEqual([update('a', '1'), update('b', '2')]);
    expect(buffer.dropped).toBe(0);
    expect(buffer.needsRefetch).toBe(false);
  });

  it('in adjacent mode, does not coalesce with an earlier item of the same key', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 4 });
    buffer.push(update('a', '1'));
    buffer.push(update('b', '1'));
    buffer.push(update('a', '2'));
    expect(drain(buffer)).toEqual([update('a', '1'), update('b', '1'), update('a', '2')]);
  });

  it('does not coalesce across a final item', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 4, coalesce: 'adjacent' });
    buffer.push(update('a', '1'));
    buffer.push(final('f'));
    buffer.push(update('a', '2'));
    expect(drain(buffer)).toEqual([update('a', '1'), final('f'), update('a', '2')]);
  });

  it('in by-key mode, replaces an earlier item of the same key and moves the new value to the end', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 4, coalesce: 'by-key' });
    buffer.push(update('a', '1'));
    buffer.push(update('b', '1'));
    buffer.push(final('f'));
    buffer.push(update('a', '2'));
    expect(buffer.size).toBe(3);
    expect(drain(buffer)).toEqual([update('b', '1'), final('f'), update('a', '2')]);
    expect(buffer.dropped).toBe(0);
  });

  it('coalesces even when full, without dropping anything', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 2 });
    buffer.push(update('a', '1'));
    buffer.push(update('b', '1'));
    expect(buffer.push(update('b', '2'))).toEqual({ accepted: true });
    expect(buffer.dropped).toBe(0);
    expect(drain(buffer)).toEqual([update('a', '1'), update('b', '2')]);
  });

  it('at capacity, drops the oldest replaceable item, counts it and asks for a refetch', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 3 });
    buffer.push(final('f1'));
    buffer.push(update('a', '1'));
    buffer.push(update('b', '1'));
    expect(buffer.push(update('c', '1'))).toEqual({ accepted: true });
    expect(buffer.size).toBe(3);
    expect(buffer.dropped).toBe(1);
    expect(buffer.needsRefetch).toBe(true);
    expect(drain(buffer)).toEqual([final('f1'), update('b', '1'), update('c', '1')]);
  });

  it('makes room for a final item by dropping a replaceable one, never a final', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 3 });
    buffer.push(final('f1'));
    buffer.push(update('a', '1'));
    buffer.push(final('f2'));
    expect(buffer.push(final('f3'))).toEqual({ accepted: true });
    expect(buffer.dropped).toBe(1);
    expect(buffer.needsRefetch).toBe(true);
    expect(drain(buffer)).toEqual([final('f1'), final('f2'), final('f3')]);
  });

  it('refuses a final item when keeping it would drop another final', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 2 });
    buffer.push(final('f1'));
    buffer.push(final('f2'));
    expect(buffer.push(final('f3'))).toEqual({ accepted: false, reason: 'would_drop_final' });
    // Refused, not dropped: the producer still has it, and nothing the consumer saw is incomplete.
    expect(buffer.dropped).toBe(0);
    expect(buffer.needsRefetch).toBe(false);
    expect(drain(buffer)).toEqual([final('f1'), final('f2')]);
  });

  it('drops a replaceable item that arrives when the buffer is full of finals', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 2 });
    buffer.push(final('f1'));
    buffer.push(final('f2'));
    expect(buffer.push(update('a', '1'))).toEqual({ accepted: false, reason: 'full_of_finals' });
    expect(buffer.dropped).toBe(1);
    expect(buffer.needsRefetch).toBe(true);
    expect(drain(buffer)).toEqual([final('f1'), final('f2')]);
  });

  it('accepts a refused final once the consumer has made room', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 1 });
    buffer.push(final('f1'));
    expect(buffer.push(final('f2')).accepted).toBe(false);
    expect(buffer.shift()).toEqual(final('f1'));
    expect(buffer.push(final('f2')).accepted).toBe(true);
  });

  it('clears the refetch flag when it is taken, and raises it again on the next loss', () => {
    const buffer = new BoundedBuffer<string>({ capacity: 1 });
    buffer.push(update('a', '1'));
    buffer.push(update('b', '1'));
    expect(buffer.takeRefetchFlag()).toBe(true);
    expect(buffer.needsRefetch).toBe(false);
    expect(buffer.takeRefetchFlag()).toBe(false);
    buffer.push(update('c', '1'));
    expect(buffer.takeRefetchFlag()).toBe(true);
    expect(buffer.dropped).toBe(2);
  });

  it('refuses a capacity that is not an integer of at least 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new BoundedBuffer({ capacity: bad })).toThrow(
        new RangeError(`capacity must be an integer of at least 1, got ${bad}`),
      );
    }
    expect(new BoundedBuffer({ capacity: 1 }).capacity).toBe(1);
  });
});
