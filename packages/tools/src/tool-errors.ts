/**
 * Why a running handler must stop, carried as the reason of ctx.signal and thrown by
 * ctx.checkpoint(). The worker maps each to the task's fate.
 */

/** A cancel was requested for the task (ends `cancelled`). */
export class TaskCancelledError extends Error {
  readonly reason: string | null;
  constructor(reason: string | null) {
    super(reason ? `task cancelled: ${reason}` : 'task cancelled');
    this.name = 'TaskCancelledError';
    this.reason = reason;
  }
}

/** One of the two clocks ran out (ends `failed` with a timeout error naming the clock). */
export class TaskTimeoutError extends Error {
  readonly clock: 'idle' | 'max';
  readonly limitMs: number;
  constructor(clock: 'idle' | 'max', limitMs: number) {
    super(
      clock === 'idle'
        ? `idle timeout: no progress for ${limitMs} ms`
        : `maximum timeout: the task ran for its limit of ${limitMs} ms`,
    );
    this.name = 'TaskTimeoutError';
    this.clock = clock;
    this.limitMs = limitMs;
  }
}

/** The worker is shutting down and hands the task to another worker (stays `working`). */
export class TaskReleasedError extends Error {
  constructor(why: string) {
    super(`task released: ${why}`);
    this.name = 'TaskReleasedError';
  }
}

/**
 * ctx.input() parked the task until its client answers: this attempt ends here, the task stays
 * `input_required`, and the answer queues the next run. A handler must let it propagate.
 */
export class TaskParkedError extends Error {
  readonly keys: readonly string[];

  constructor(keys: readonly string[]) {
    super(`task waits for input: ${keys.join(', ')}`);
    this.name = 'TaskParkedError';
    this.keys = keys;
  }
}

/**
 * Thrown by a handler to end the task `failed` with a JSON-RPC error (a protocol error), as
 * opposed to a tool error, which is a normal result with `isError: true`.
 */
export class ToolProtocolError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'ToolProtocolError';
    this.code = code;
    this.data = data;
  }
}
