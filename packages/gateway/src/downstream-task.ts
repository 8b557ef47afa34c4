import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { DownstreamSession } from './downstream-session.ts';

/** A downstream task's statuses after which it changes no more (2025-11-25 tasks). */
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** The poll interval's bounds: a downstream's `pollInterval` is honoured within them. */
const MIN_POLL_MS = 20;
const MAX_POLL_MS = 5_000;
const DEFAULT_POLL_MS = 500;
/** A poll, or the read of a result once the task ended, that takes longer fails. */
const REQUEST_TIMEOUT_MS = 30_000;
/** How long a task still running after its cancel's grace period is watched, and how often. */
const ORPHAN_WATCH_MS = 5 * 60_000;
const ORPHAN_POLL_MS = 1_000;

export interface TaskCallOptions {
  readonly signal: AbortSignal;
  readonly onProgress?: (progress: number, total?: number, message?: string) => void;
  /** The downstream answered with this task: it lives downstream until `onTaskEnd`. */
  readonly onTask: (taskId: string) => void;
  readonly onTaskEnd: (taskId: string) => void;
  /** How long after its tasks/cancel the downstream task may take to reach a terminal status. */
  readonly cancelGraceMs: number;
  /** A downstream task that ended without a result the gateway can give (cancelled, or asking for input). */
  readonly ended: (taskId: string, status: string, message: string | undefined) => Error;
  /**
   * A stopped task not known to have ended downstream after the grace period (+1), and when it is
   * seen to end, or the watch on it gives up (-1): orphaned downstream work.
   */
  readonly onOrphan?: (taskId: string, delta: 1 | -1) => void;
  /**
   * Whether the connection the task was made on still stands. A stdio downstream that exited
   * took its process group with it: its tasks ended with it, and are not orphans.
   */
  readonly connected?: () => boolean;
}

/**
 * A call made as a task-augmented request (2025-11-25 tasks): the downstream answers at once with
 * a task, which is polled (`tasks/get`, at its `pollInterval`) until it ends; its result is then
 * read with `tasks/result`. The task's stop becomes the downstream's own signal for a task,
 * `tasks/cancel`, and the downstream is polled until it says the task ended (within
 * `cancelGraceMs`): a task not known to have ended then is orphaned work, watched until it ends.
 * A task that completed before its cancel landed gives its result: the work was done.
 * A downstream that answers with a plain result instead is taken as it is.
 */
export async function callAsTask(
  session: DownstreamSession,
  name: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown>,
  options: TaskCallOptions,
): Promise<CallToolResult> {
  // The task is made whatever happens meanwhile: a stop would leave a task nobody knows of. A
  // stop waits a grace period for the answer; an answer later than that is still followed up:
  // the task it names is cancelled (and counted, if it cannot be seen to end).
  const creating = session.request(
    'tools/call',
    { name, arguments: args, _meta: meta, task: {} },
    { timeoutMs: REQUEST_TIMEOUT_MS, ...(options.onProgress ? { onProgress: options.onProgress } : {}) },
  );
  const answer = await answeredWithin(creating, options.signal, options.cancelGraceMs);
  if (answer === null) {
    void creating.then(
      (late) => {
        const lateTask = late.task as { taskId?: unknown } | undefined;
        if (typeof lateTask?.taskId !== 'string') return;
        const lateId = lateTask.taskId;
        options.onTask(lateId);
        return cancel(session, lateId, options.cancelGraceMs).then((outcome) => {
          if (outcome.state === 'unknown') watchOrphan(session, lateId, options);
          else {
            session.taskEnded(lateId);
            options.onTaskEnd(lateId);
          }
        });
      },
      () => {},
    );
    throw options.signal.reason;
  }
  const task = answer.task as { taskId?: unknown; pollInterval?: unknown } | undefined;
  // A plain result (the downstream chose not to make a task): the work is done, stop or not.
  if (typeof task?.taskId !== 'string') return answer as CallToolResult;
  const taskId = task.taskId;
  options.onTask(taskId);
  let watched = false;
  const stopped = async (): Promise<CallToolResult> => {
    const outcome = await cancel(session, taskId, options.cancelGraceMs);
    if (outcome.state === 'completed') return outcome.result;
    if (outcome.state === 'unknown') {
      watched = true;
      watchOrphan(session, taskId, options);
    }
    throw options.signal.reason;
  };
  try {
    let interval = pollIntervalOf(task.pollInterval);
    for (;;) {
      if (!options.signal.aborted) await pause(interval, options.signal);
      if (options.signal.aborted) return await stopped();
      let status: Record<string, unknown>;
      const poll = linked(options.signal);
      try {
        status = await session.request('tasks/get', { taskId }, { signal: poll.signal, timeoutMs: REQUEST_TIMEOUT_MS });
      } catch (error) {
        if (options.signal.aborted) return await stopped();
        if (options.connected?.() === false) throw error;
        // Its status cannot be read: ended here, and asked to end there, in case it runs on.
        const outcome = await cancel(session, taskId, options.cancelGraceMs);
        if (outcome.state === 'completed') return outcome.result;
        if (outcome.state === 'unknown') {
          watched = true;
          watchOrphan(session, taskId, options);
        }
        throw error;
      } finally {
        poll.done();
      }
      interval = pollIntervalOf(status.pollInterval, interval);
      if (status.status === 'cancelled') {
        throw options.ended(taskId, 'cancelled', stringOr(status.statusMessage));
      }
      if (status.status === 'input_required') {
        // The gateway declares no elicitation or sampling: nothing could answer it. Cancelled
        // rather than left waiting for an answer that will not come.
        const outcome = await cancel(session, taskId, options.cancelGraceMs);
        if (outcome.state === 'completed') return outcome.result;
        if (outcome.state === 'unknown') {
          watched = true;
          watchOrphan(session, taskId, options);
        }
        throw options.ended(taskId, 'input_required', 'it asks for input, which a gateway cannot give');
      }
      if (TERMINAL.has(String(status.status))) break;
    }
    // completed or failed: tasks/result answers as the call would have (a result, or its error).
    return (await session.request('tasks/result', { taskId }, { timeoutMs: REQUEST_TIMEOUT_MS })) as CallToolResult;
  } finally {
    if (!watched) {
      session.taskEnded(taskId);
      options.onTaskEnd(taskId);
    }
  }
}

type CancelOutcome =
  | { readonly state: 'ended' }
  | { readonly state: 'completed'; readonly result: CallToolResult }
  | { readonly state: 'unknown' };

/**
 * Asks the downstream to cancel the task and waits, within the grace period, for it to end there.
 * `unknown` when it was still running at the end, or nothing could be read (a hang, a downstream
 * gone): counted as orphaned until shown otherwise. A task that had completed gives its result.
 */
async function cancel(session: DownstreamSession, taskId: string, graceMs: number): Promise<CancelOutcome> {
  const deadline = performance.now() + graceMs;
  const left = () => Math.max(1, Math.round(deadline - performance.now()));
  let status = '';
  try {
    status = String((await session.request('tasks/cancel', { taskId }, { timeoutMs: left() })).status ?? '');
  } catch {
    // A terminal task cannot be cancelled (an error): what it ended as is read below.
  }
  try {
    // Read at least once, whatever the cancel took: a task that completed meanwhile gives its result.
    let reads = 0;
    while (!TERMINAL.has(status)) {
      if (reads > 0 && performance.now() >= deadline) return { state: 'unknown' };
      if (reads > 0) await pause(MIN_POLL_MS * 5, undefined);
      reads += 1;
      status = String(
        (await session.request('tasks/get', { taskId }, { timeoutMs: reads === 1 ? REQUEST_TIMEOUT_MS : left() }))
          .status ?? '',
      );
    }
    if (status === 'completed') {
      const result = await session.request('tasks/result', { taskId }, { timeoutMs: REQUEST_TIMEOUT_MS });
      return { state: 'completed', result: result as CallToolResult };
    }
    return { state: 'ended' };
  } catch {
    return { state: 'unknown' };
  }
}

/** An orphaned task, watched (bounded) until it ends downstream; then it leaves the map. */
function watchOrphan(session: DownstreamSession, taskId: string, options: TaskCallOptions): void {
  options.onOrphan?.(taskId, 1);
  const until = performance.now() + ORPHAN_WATCH_MS;
  void (async () => {
    try {
      while (performance.now() < until) {
        await pause(ORPHAN_POLL_MS, undefined);
        const status = await session.request('tasks/get', { taskId }, { timeoutMs: ORPHAN_POLL_MS * 5 });
        if (TERMINAL.has(String(status.status))) return;
      }
    } catch {
      // The downstream is gone, or forgot the task: nothing more can be seen of it.
    } finally {
      session.taskEnded(taskId);
      options.onTaskEnd(taskId);
      options.onOrphan?.(taskId, -1);
    }
  })();
}

/**
 * The request's answer; or, once `signal` aborted, the answer if it comes within `graceMs`, else
 * null (the request goes on: the caller follows it up).
 */
function answeredWithin<T>(request: Promise<T>, signal: AbortSignal, graceMs: number): Promise<T | null> {
  return new Promise<T | null>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      timer = setTimeout(() => resolve(null), graceMs);
      timer.unref();
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    request.then(
      (value) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A signal of its own for one request, aborted with `parent` until `done()`: the SDK leaves its
 * listener on a request's signal after the answer, and an abort of a long-lived signal would
 * then send a cancel for every request it was ever given.
 */
function linked(parent: AbortSignal): { readonly signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const abort = () => controller.abort(parent.reason);
  if (parent.aborted) abort();
  else parent.addEventListener('abort', abort, { once: true });
  return { signal: controller.signal, done: () => parent.removeEventListener('abort', abort) };
}

function pollIntervalOf(value: unknown, fallback = DEFAULT_POLL_MS): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return fallback;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, value));
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Waits `ms`, or less when `signal` aborts (no rejection: the caller looks at the signal). Its
 * timer keeps nothing alive: an orphan's watch must not hold a stopping worker open.
 */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    timer.unref();
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
