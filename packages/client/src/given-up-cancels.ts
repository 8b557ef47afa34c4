import { TaskgateError } from '@taskgate/errors';
import type { Timers } from './call-clocks.ts';
import { getTask, type RawRequest, TERMINAL_STATUSES } from './task-watch.ts';

/** Why a tasks/cancel did not take: the server's JSON-RPC error, or why the request failed. */
type Refusal = { readonly answer: Record<string, unknown> } | { readonly failure: string };

interface Pending {
  /** Settles once the answer is judged and, if it did not take, reported. Never rejects. */
  done: Promise<void>;
  /** The refusal, once it came: the task is being looked up then. */
  refusal: Refusal | null;
}

/**
 * The tasks/cancel of each task-backed call its caller gave up on (a cancel, a clock). The call
 * has already rejected when the answer comes, so a cancel that did not take can only be reported:
 * to `report` (the client's onError) as TG_TASK_CANCEL_UNCONFIRMED naming the task, which may run
 * to completion. A task that had already ended is no such case — the cancel was moot. The Tasks
 * extension acknowledges that cancel like any other, but 2025-11-25 refuses it with -32602
 * (tasks.mdx "Cancelling Tasks": MUST reject a task in a terminal status), which is also what it
 * answers for an unknown id; so a refused cancel's task is looked up, and only a task not seen
 * ended is reported.
 */
export class GivenUpCancels {
  readonly #request: RawRequest;
  readonly #timers: Timers;
  readonly #report: (error: TaskgateError) => void;
  /** By task id, until judged — or until close() stops waiting and reports it itself. */
  readonly #pending = new Map<string, Pending>();

  constructor(request: RawRequest, timers: Timers, report: (error: TaskgateError) => void) {
    this.#request = request;
    this.#timers = timers;
    this.#report = report;
  }

  /** Sends the task's tasks/cancel, unless one is on its way already. */
  send(taskId: string): void {
    if (this.#pending.has(taskId)) return;
    const pending: Pending = { done: Promise.resolve(), refusal: null };
    this.#pending.set(taskId, pending);
    pending.done = this.#judge(taskId, pending).then((error) => {
      // Not ours any more: settle() gave up waiting and has reported it already.
      if (this.#pending.get(taskId) !== pending) return;
      this.#pending.delete(taskId);
      if (error !== null) this.#report(error);
    });
  }

  /**
   * Waits for the cancels on their way, and for `alongside` (a session's notifications/cancelled
   * POSTs), at most `withinMs`. A tasks/cancel still unjudged then is reported — as unanswered, or
   * as refused if its answer came and only the look-up of its task is missing — and forgotten, so
   * whatever the closing connection does to it later is not reported a second time.
   */
  async settle(alongside: readonly Promise<unknown>[], withinMs: number): Promise<void> {
    const waited = [...this.#pending];
    if (waited.length === 0 && alongside.length === 0) return;
    let timer: unknown;
    const late = new Promise<void>((resolve) => {
      timer = this.#timers.setTimeout(resolve, withinMs);
    });
    await Promise.race([Promise.allSettled([...waited.map(([, pending]) => pending.done), ...alongside]), late]);
    this.#timers.clearTimeout(timer);
    for (const [taskId, pending] of waited) {
      if (this.#pending.get(taskId) !== pending) continue;
      this.#pending.delete(taskId);
      this.#report(
        pending.refusal === null ? cancelUnanswered(taskId, withinMs) : cancelRefused(taskId, pending.refusal, null),
      );
    }
  }

  /** What became of the cancel: null when it took (or was moot), else the error to report. */
  async #judge(taskId: string, pending: Pending): Promise<TaskgateError | null> {
    let refusal: Refusal;
    try {
      const response = await this.#request('tasks/cancel', { taskId });
      if (response.error === undefined) return null;
      refusal = { answer: response.error as Record<string, unknown> };
    } catch (error) {
      // Not answered as JSON-RPC: an HTTP error status (a 503), the connection gone.
      refusal = { failure: error instanceof Error ? error.message : String(error) };
    }
    pending.refusal = refusal;
    // settle() stopped waiting for it: the connection is closing, a look-up could not go out.
    if (this.#pending.get(taskId) !== pending) return null;
    const status = await getTask(this.#request, taskId).then(
      (task) => task.status,
      () => null,
    );
    if (status !== null && TERMINAL_STATUSES.includes(status)) return null;
    return cancelRefused(taskId, refusal, status);
  }
}

/** A refused cancel; `status` is the task's when a look-up found it still going. */
function cancelRefused(taskId: string, refusal: Refusal, status: string | null): TaskgateError {
  const what =
    'answer' in refusal
      ? `was refused: the server answered ${answerText(refusal.answer)}`
      : `failed: ${refusal.failure}`;
  const still = status === null ? 'the task may run to completion' : `the task is ${status} and may run to completion`;
  return new TaskgateError(
    'TG_TASK_CANCEL_UNCONFIRMED',
    `tasks/cancel for task ${taskId} ${what}; ${still}: look it up with tasks/get (cancelTask sends the cancel again)`,
    { details: { taskId, ...refusal, ...(status === null ? {} : { status }) } },
  );
}

function cancelUnanswered(taskId: string, waitedMs: number): TaskgateError {
  return new TaskgateError(
    'TG_TASK_CANCEL_UNCONFIRMED',
    `tasks/cancel for task ${taskId} was not answered within ${waitedMs} ms of close(): the task may run to completion; look it up with tasks/get`,
    { details: { taskId, waitedMs } },
  );
}

function answerText(error: Record<string, unknown>): string {
  const code = typeof error.code === 'number' ? `${error.code} ` : '';
  return `${code}(${typeof error.message === 'string' ? error.message : 'no message'})`;
}
