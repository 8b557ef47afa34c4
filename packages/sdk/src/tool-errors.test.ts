import { describe, expect, it } from 'vitest';
import { TaskCancelledError, TaskTimeoutError, ToolProtocolError } from './tool-errors.ts';

describe('the SDK errors', () => {
  it('are recognised when thrown by another copy of the package', () => {
    // What a second copy of @taskgate/sdk (a tool module's own) constructs: another class with the
    // same registered brand. The platform's instanceof must still see it.
    const brand: unique symbol = Symbol.for('taskgate.sdk.ToolProtocolError') as never;
    class OtherCopy extends Error {
      readonly [brand] = true;
      readonly code = -32602;
    }
    expect(new OtherCopy('bad') instanceof ToolProtocolError).toBe(true);
    expect(new OtherCopy('bad') instanceof TaskCancelledError).toBe(false);
  });

  it('do not recognise plain errors or values without the brand', () => {
    expect(new Error('x') instanceof ToolProtocolError).toBe(false);
    expect((null as unknown as object) instanceof TaskTimeoutError).toBe(false);
    expect({ code: 1 } instanceof ToolProtocolError).toBe(false);
  });

  it('keep what the platform reads from them', () => {
    const timeout = new TaskTimeoutError('idle', 5_000);
    expect(timeout).toBeInstanceOf(Error);
    expect([timeout.clock, timeout.limitMs, timeout.message]).toEqual([
      'idle',
      5_000,
      'idle timeout: no progress for 5000 ms',
    ]);
    expect(new TaskCancelledError(null).message).toBe('task cancelled');
  });
});
