/**
 * Why a running handler must stop, carried as the reason of ctx.signal and thrown by
 * ctx.checkpoint(); and the one error a handler throws on purpose (ToolProtocolError).
 *
 * A tool module may bring its own copy of this package (npm installs one per dependency tree
 * when versions differ), and the platform must still recognise what the module throws: each
 * class is recognised by a registered symbol, so `instanceof` holds across copies.
 */

function branded(brand: symbol) {
  return (value: unknown): boolean =>
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

const CANCELLED = Symbol.for('taskgate.sdk.TaskCancelledError');
const TIMEOUT = Symbol.for('taskgate.sdk.TaskTimeoutError');
const RELEASED = Symbol.for('taskgate.sdk.TaskReleasedError');
const PARKED = Symbol.for('taskgate.sdk.TaskParkedError');
const PROTOCOL = Symbol.for('taskgate.sdk.ToolProtocolError');
const RACE_LOST = Symbol.for('taskgate.sdk.RaceLostError');

/** Why a branch of ctx.race() was aborted: another branch succeeded first. */
export class RaceLostError extends Error {
  static override [Symbol.hasInstance] = branded(RACE_LOST);
  readonly [RACE_LOST] = true;
  constructor() {
    super('another branch of ctx.race() finished first');
    this.name = 'RaceLostError';
  }
}

/** A cancel was requested for the task (it ends `cancelled`). */
export class TaskCancelledError extends Error {
  static override [Symbol.hasInstance] = branded(CANCELLED);
  readonly [CANCELLED] = true;
  readonly reason: string | null;
  constructor(reason: string | null) {
    super(reason ? `task cancelled: ${reason}` : 'task cancelled');
    this.name = 'TaskCancelledError';
    this.reason = reason;
  }
}

/** One of the two clocks ran out (the task ends `failed` with a timeout error naming the clock). */
export class TaskTimeoutError extends Error {
  static override [Symbol.hasInstance] = branded(TIMEOUT);
  readonly [TIMEOUT] = true;
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

/** The worker is shutting down and hands the task to another worker (it stays `working`). */
export class TaskReleasedError extends Error {
  static override [Symbol.hasInstance] = branded(RELEASED);
  readonly [RELEASED] = true;
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
  static override [Symbol.hasInstance] = branded(PARKED);
  readonly [PARKED] = true;
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
  static override [Symbol.hasInstance] = branded(PROTOCOL);
  readonly [PROTOCOL] = true;
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'ToolProtocolError';
    this.code = code;
    this.data = data;
  }
}
