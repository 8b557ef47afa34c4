import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { DownstreamSession } from './downstream-session.ts';

/** A downstream task's statuses after which it changes no more (2025-11-25 tasks). */
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** The poll interval's bounds: a downstream's `pollInterval` is honoured within them. */
const MIN_POLL_MS = 20;
const MAX_POLL_MS = 5_000;
const DEFAULT_POLL_MS = 500;
/** A poll, or the read of a result once the task ended, that takes longer fails the call. */
const REQUEST_TIMEOUT_MS = 30_000;

export interface TaskCallOptions {
  readonly signal: AbortSignal;
  readonly onProgress?: (progress: number, total?: number, message?: string) => void;
  /** The downstream answered with this task: it lives downstream until `onTaskEnd`. */
  readonly onTask: (taskId: string) => void;
  readonly onTaskEnd: (taskId: string) => void;
  /** How long after its tasks/cancel the downstream task may take to reach a terminal status. */
  readonly cancelGraceMs: number;
  /** A downstream task that ended `cancelled` without being asked. */
  readonly ended: (taskId: string, status: string, message: string | undefined) => Error;
  /**
   * A cancelled task still not ended downstream after the grace period (+1), and when it is seen
   * to end, or the watch on it gives up (-1): orphaned downstream work.
   */
  readonly onOrphan?: (taskId: string, delta: 1 | -1) => void;
}

/** How long a task still running after its cancel's grace period is watched, and how often. */
const ORPHAN_WATCH_MS = 5 * 60_000;
const ORPHAN_POLL_MS = 1_000;

/**
 * A call made as a task-augmented request (2025-11-25 tasks): the downstream answers at once with
 * a task, which is polled (`tasks/get`, at its `pollInterval`) until it ends; its result is then
 * read with `tasks/result`. The task's stop becomes the downstream's own signal for a task:
 * `tasks/cancel`, then polling until the task says it ended (bounded by `cancelGraceMs`), so the
 * downstream's work is known to have stopped, or is counted as not known to, before the caller
 * hears of the stop. A downstream that answers with a plain result instead is taken as it is.
 */
export async function callAsTask(
  session: DownstreamSession,
  name: string,
  args: Record<string, unknown>,
  meta: Record<string, unknown>,
  options: TaskCallOptions,
): Promise<CallToolResult> {
  const answer = await session.request(
    'tools/call',
    { name, arguments: args, _meta: meta, task: {} },
    { signal: options.signal, ...(options.onProgress ? { onProgress: options.onProgress } : {}) },
  );
  const task = answer.task as { taskId?: unknown; pollInterval?: unknown } | undefined;
  if (typeof task?.taskId !== 'string') return answer as CallToolResult;
  const taskId = task.taskId;
  options.onTask(taskId);
  let orphaned = false;
  try {
    let interval = pollIntervalOf(task.pollInterval);
    for (;;) {
      if (!options.signal.aborted) await pause(interval, options.signal);
      if (options.signal.aborted) {
        orphaned = !(await cancelled(session, taskId, options));
        if (orphaned) watchOrphan(session, taskId, options);
        throw options.signal.reason;
      }
      const status = await session.request('tasks/get', { taskId }, { timeoutMs: REQUEST_TIMEOUT_MS });
      interval = pollIntervalOf(status.pollInterval, interval);
      if (status.status === 'cancelled') {
        throw options.ended(taskId, 'cancelled', stringOr(status.statusMessage));
      }
      if (TERMINAL.has(String(status.status))) break;
    }
    // completed or failed: tasks/result answers as the call would have (a result, or its error).
    return (await session.request('tasks/result', { taskId }, { timeoutMs: REQUEST_TIMEOUT_MS })) as CallToolResult;
  } finally {
    if (!orphaned) {
      session.taskEnded(taskId);
      options.onTaskEnd(taskId);
    }
  }
}

/**
 * Asks the downstream to cancel and waits, within the grace period, for the task to end there.
 * False when it was still running at the end of it (an orphan); true when it ended, or when
 * nothing more can be known (the cancel or a poll failed: already ended, or the downstream gone).
 */
async function cancelled(session: DownstreamSession, taskId: string, options: TaskCallOptions): Promise<boolean> {
  const deadline = performance.now() + options.cancelGraceMs;
  const bounded = { timeoutMs: Math.max(1, Math.round(options.cancelGraceMs)) };
  try {
    const answer = await session.request('tasks/cancel', { taskId }, bounded);
    let status = String(answer.status ?? '');
    while (!TERMINAL.has(status)) {
      if (performance.now() >= deadline) return false;
      await pause(MIN_POLL_MS * 5, undefined);
      status = String((await session.request('tasks/get', { taskId }, bounded)).status ?? '');
    }
  } catch {
    // tasks/cancel of a task that ended is an error, as is any request to a downstream that is
    // gone: the caller's stop stands either way.
  }
  return true;
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

function pollIntervalOf(value: unknown, fallback = DEFAULT_POLL_MS): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return fallback;
  return Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, value));
}

function stringOr(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Waits `ms`, or less when `signal` aborts (no rejection: the caller looks at the signal). */
// A timer that keeps nothing alive: an orphan's watch must not hold a stopping worker open.
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
