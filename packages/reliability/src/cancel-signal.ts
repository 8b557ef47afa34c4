/**
 * What told a running handler to stop. Recorded with a task's cancel request (tasks.cancel_signal)
 * and carried by the abort reasons of the API's requests, so the cancel-latency histogram, the
 * orphan counters and the logs say which path a cancel took.
 */
export const CANCEL_SIGNALS = [
  'notification', // notifications/cancelled (on stdio, or POSTed over HTTP)
  'stream_close', // the call's HTTP response stream closed, or stdin did
  'tasks_cancel', // tasks/cancel
  'rest_cancel', // POST /v1/tasks/:id/cancel
  'idle_clock',
  'max_clock',
  'shutdown', // the worker, or the API serving the call, is stopping
  'other', // an input deadline, a request that went away without saying how
] as const;
export type CancelSignal = (typeof CANCEL_SIGNALS)[number];

export function isCancelSignal(value: unknown): value is CancelSignal {
  return typeof value === 'string' && (CANCEL_SIGNALS as readonly string[]).includes(value);
}

/** An abort reason that says which signal it is. */
export class StopSignalError extends Error {
  readonly signal: CancelSignal;
  constructor(signal: CancelSignal, message: string) {
    super(message);
    this.name = 'StopSignalError';
    this.signal = signal;
  }
}

/** The signal an abort reason carries (a StopSignalError, or anything with a `signal` of the list). */
export function cancelSignalOf(reason: unknown): CancelSignal {
  const signal = typeof reason === 'object' && reason !== null ? (reason as { signal?: unknown }).signal : undefined;
  return isCancelSignal(signal) ? signal : 'other';
}
