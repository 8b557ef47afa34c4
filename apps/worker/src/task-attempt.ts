import { setTimeout as delay } from 'node:timers/promises';
import {
  completeKey,
  type Database,
  finishAttempt,
  isDatabaseUnavailable,
  lockForCompletion,
  type Outcome,
  parkForInput,
  readCancelStates,
  readSteps,
  recordCancelObserved,
  recordProgress,
  recordStep,
  releaseAttempt,
  retryWhileUnavailable,
  type TaskAnnouncer,
  type TaskRecord,
  type TaskWriter,
} from '@taskgate/db';
import { isTerminalStatus, ProgressGate, type ProgressUpdate, TwoClockDeadline } from '@taskgate/reliability';
import {
  type InputRequest,
  TaskCancelledError,
  TaskParkedError,
  TaskReleasedError,
  TaskTimeoutError,
  type ToolContext,
  type ToolDefinition,
  ToolProtocolError,
  type ToolResult,
} from '@taskgate/tools';
import type { Kysely, Transaction } from 'kysely';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface AttemptSettings {
  /** Reads, and the final commit's transaction. */
  readonly db: Kysely<Database>;
  /** Every task write goes through it, and it announces each change after it commits. */
  readonly announcer: TaskAnnouncer;
  /**
   * A write whose outcome is decided (a terminal status, a step's result, a hand-back) is retried
   * while the database is unreachable, for up to `giveUpAfterMs` or until `signal` aborts (the
   * worker is stopping): a Postgres restart delays it instead of losing it.
   */
  readonly outage: { readonly giveUpAfterMs: number; readonly signal: AbortSignal };
  /** Whether another worker may run the task again if this attempt is handed back or lost. */
  readonly retryable: boolean;
  /** Completions without local effects go through here (group commit). */
  readonly completions: { submit(completion: Completion): Promise<TaskRecord | null> };
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
  /** The longest a checkpoint trusts its last reading of the cancel flag. */
  readonly checkpointReadIntervalMs: number;
  /** At most one progress write (and notification) per task per interval; the latest wins. */
  readonly progressWriteIntervalMs: number;
  readonly now: () => number;
  readonly hooks?: AttemptHooks;
}

/** Test seams that hold a step so a race can be forced by order, not by timing. */
export interface AttemptHooks {
  /** Runs inside the completion transaction, after the task row is locked. */
  readonly afterCompletionLock?: (taskId: string) => Promise<void>;
}

/** A completion without local effects: the task, its attempt, and the result it completes with. */
export interface Completion {
  readonly id: string;
  readonly attempt: number;
  readonly result: unknown;
  readonly reason: string;
}

/** How long a checkpoint waits for its read of the cancel flag before the handler goes on. */
const CHECKPOINT_READ_WAIT_MS = 100;

/** JSON-RPC error codes a failed task carries. */
const INTERNAL_ERROR = -32603;
const REQUEST_TIMEOUT = -32001;

/**
 * One attempt at running a task's handler: its AbortController, its two clocks, its progress, its
 * checkpoints and its single way out. Whatever ends the attempt first — the handler returning,
 * a cancel, a clock, a release — decides the task's fate; the others find it decided.
 */
export class TaskAttempt {
  readonly task: TaskRecord;
  readonly #tool: ToolDefinition;
  readonly #settings: AttemptSettings;
  readonly #controller = new AbortController();
  readonly #deadline: TwoClockDeadline;
  readonly #progressGate: ProgressGate;
  #highestProgress = Number.NEGATIVE_INFINITY;
  #latestProgress: ProgressUpdate | null = null;
  #writtenProgress: ProgressUpdate | null = null;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #progressTimer: NodeJS.Timeout | undefined;
  #progressWrites: Promise<void> = Promise.resolve();
  /** The timeout's terminal write: run() waits for it, so the job is not settled before the task. */
  #timeoutWrite: Promise<unknown> = Promise.resolve();
  #lastFlagReadAt: number;
  /** The checkpoint's read of the cancel flag still under way (at most one at a time). */
  #flagRead: Promise<void> | null = null;
  #committed = false;
  #cancelSeenHow: string | null = null;
  #releaseRequested: string | null = null;
  #steps: Map<string, unknown> | null = null;
  #parked = false;
  readonly #writer: TaskWriter;

  constructor(task: TaskRecord, elapsedMs: number, tool: ToolDefinition, settings: AttemptSettings) {
    this.task = task;
    this.#tool = tool;
    this.#settings = settings;
    this.#writer = settings.announcer.writer(settings.db);
    const now = settings.now();
    this.#lastFlagReadAt = now;
    // The max clock runs from the task's first start, across attempts; the idle clock from now.
    const maxMs = task.maxTimeoutMs === null ? undefined : Math.max(1, Math.round(task.maxTimeoutMs - elapsedMs));
    this.#deadline = new TwoClockDeadline({ idleMs: task.idleTimeoutMs ?? undefined, maxMs }, now);
    this.#progressGate = new ProgressGate({ intervalMs: settings.progressWriteIntervalMs });
  }

  get retryable(): boolean {
    return this.#settings.retryable;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Runs the handler to its end and settles the task. Throws TaskReleasedError to hand the job back. */
  async run(): Promise<void> {
    this.#armDeadline();
    try {
      const result = await this.#tool.handler(this.task.arguments as never, this.#context());
      if (!this.#committed) await this.#complete(result);
    } catch (error) {
      await this.#settleFailure(error);
    } finally {
      clearTimeout(this.#deadlineTimer);
      clearTimeout(this.#progressTimer);
      this.#progressGate.close();
      await this.#progressWrites;
      await this.#timeoutWrite;
    }
  }

  /** A cancel request reached this worker (notification or poll). */
  cancel(how: string): void {
    if (this.#controller.signal.aborted) return;
    this.#cancelSeenHow = how;
    this.#controller.abort(new TaskCancelledError(this.task.cancelReason));
  }

  /**
   * The worker is shutting down: the task goes back to the queue at the handler's next checkpoint,
   * the safe point where it can stop. A handler that finishes before reaching one completes.
   */
  releaseAtCheckpoint(why: string): void {
    this.#releaseRequested ??= why;
  }

  /** Stops the handler now and hands the task to another worker (the grace period is over). */
  release(why: string): void {
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(new TaskReleasedError(why));
  }

  #context(): ToolContext {
    return {
      signal: this.#controller.signal,
      tenant: this.task.tenantId,
      taskId: this.task.id,
      attempt: this.task.attempt,
      idempotencyKey: this.task.idempotencyKey,
      checkpoint: () => this.#checkpoint(),
      progress: (value, total, message) => this.#progress(value, total, message),
      commit: (effects) => this.#commit(effects, 'handler committed'),
      step: (name, fn) => this.#step(name, fn),
      input: (requests) => this.#input(requests),
      sleep: async (ms) => {
        try {
          await delay(ms, undefined, { signal: this.#controller.signal });
        } catch {
          throw this.#controller.signal.reason;
        }
      },
    };
  }

  async #step<T>(name: string, fn: () => Promise<T>): Promise<T> {
    this.#steps ??= await this.#persist(() => readSteps(this.#settings.db, this.task.id));
    // Recorded by an earlier attempt (or earlier in this one): its result, never a second run.
    if (this.#steps.has(name)) return structuredClone(this.#steps.get(name)) as T;
    const signal = this.#controller.signal;
    if (signal.aborted) throw signal.reason;
    const produced = await fn();
    const stored: unknown = produced === undefined ? null : JSON.parse(JSON.stringify(produced));
    const recorded = await this.#persist(() =>
      recordStep(this.#settings.db, {
        taskId: this.task.id,
        attempt: this.task.attempt,
        name,
        result: stored,
      }),
    );
    if (!recorded) {
      // The task moved on (another attempt holds it, or it ended): this attempt must stop here.
      throw signal.aborted ? signal.reason : new Error(`step ${name}: this attempt no longer holds the task`);
    }
    this.#steps.set(name, stored);
    return structuredClone(stored) as T;
  }

  /**
   * Answers the handler from the responses stored with the task, or parks the task for the
   * missing ones: the requests are written, the attempt ends (TaskParkedError) and the worker slot
   * frees; tasks/update queues the next run once every key is answered.
   */
  async #input(requests: Readonly<Record<string, InputRequest>>): Promise<Record<string, unknown>> {
    const answers = this.task.inputResponses;
    const missing = Object.keys(requests).filter((key) => !Object.hasOwn(answers, key));
    if (missing.length === 0) return Object.fromEntries(Object.keys(requests).map((key) => [key, answers[key]]));
    await this.#checkpoint();
    await this.#flushProgress();
    const outstanding = Object.fromEntries(missing.map((key) => [key, requests[key]]));
    const parked = await this.#persist(() =>
      parkForInput(
        this.#writer,
        this.task.id,
        this.task.attempt,
        outstanding,
        `waiting for input: ${missing.join(', ')}`,
      ),
    );
    if (parked) {
      this.#parked = true;
      throw new TaskParkedError(missing);
    }
    // Not parked: a cancel was requested first (or the attempt was superseded).
    const [state] = await this.#persist(() => readCancelStates(this.#settings.db, [this.task.id]));
    if (state?.cancelRequested) this.cancel('input found the flag');
    throw this.#controller.signal.aborted ? this.#controller.signal.reason : new Error('the task moved on');
  }

  async #checkpoint(): Promise<void> {
    const signal = this.#controller.signal;
    if (signal.aborted) throw signal.reason;
    if (this.#releaseRequested !== null) this.release(this.#releaseRequested);
    if (signal.aborted) throw signal.reason;
    const now = this.#settings.now();
    if (this.#flagRead === null && now - this.#lastFlagReadAt >= this.#settings.checkpointReadIntervalMs) {
      this.#lastFlagReadAt = now;
      const read = readCancelStates(this.#settings.db, [this.task.id])
        .then(
          ([state]) => {
            if (state?.cancelRequested) this.cancel('checkpoint read the flag');
          },
          (error: Error) => {
            // Not the handler's failure, outage or not: the flag is read again at a later
            // checkpoint, the watcher polls it, and the final commit reads it under the row lock.
            if (!isDatabaseUnavailable(error)) {
              this.#settings.logger.warn({ taskId: this.task.id, error: error.message }, 'checkpoint read failed');
            }
          },
        )
        .finally(() => {
          this.#flagRead = null;
        });
      this.#flagRead = read;
      // The checkpoint waits for the read only briefly: a database that is slow, full or down must
      // not hold the handler (a pool waits up to 5 s for a connection), or its idle clock would
      // run out for want of progress it was kept from making. A late answer still cancels.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        read,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, CHECKPOINT_READ_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    if (signal.aborted) throw signal.reason;
  }

  #progress(value: number, total?: number, message?: string): void {
    if (this.#controller.signal.aborted || !Number.isFinite(value) || value <= this.#highestProgress) return;
    this.#highestProgress = value;
    this.#latestProgress = { progress: value, total, message };
    const now = this.#settings.now();
    // Only a strictly increasing value is progress, and only progress resets the idle clock.
    this.#deadline.recordProgress(now);
    this.#armDeadline();
    const update = this.#progressGate.offer({ progress: value, total, message }, now);
    if (update) this.#writeProgress(update);
    else this.#armProgressFlush();
  }

  #armProgressFlush(): void {
    const dueAt = this.#progressGate.nextDueAt();
    if (dueAt === null || this.#progressTimer) return;
    this.#progressTimer = setTimeout(
      () => {
        this.#progressTimer = undefined;
        const update = this.#progressGate.due(this.#settings.now());
        if (update) this.#writeProgress(update);
        this.#armProgressFlush();
      },
      Math.max(0, dueAt - this.#settings.now()),
    );
  }

  #writeProgress(update: ProgressUpdate): void {
    this.#writtenProgress = update;
    // Chained, so writes land in the order they were made and the last one wins.
    this.#progressWrites = this.#progressWrites
      .then(() =>
        recordProgress(this.#writer, this.task.id, this.task.attempt, {
          value: update.progress,
          total: update.total,
          message: update.message,
        }),
      )
      .then(
        () => {},
        // Progress is replaceable: a write lost to an outage is superseded by the next one (and
        // an outage is said once by the writes that must land, not ten times a second here).
        (error: Error) => {
          const fields = { taskId: this.task.id, error: error.message };
          if (isDatabaseUnavailable(error)) this.#settings.logger.debug(fields, 'progress write failed');
          else this.#settings.logger.warn(fields, 'progress write failed');
        },
      );
  }

  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    const next = this.#deadline.next();
    if (!next) return;
    this.#deadlineTimer = setTimeout(() => void this.#onDeadline(), Math.max(0, next.at - this.#settings.now()));
  }

  async #onDeadline(): Promise<void> {
    // A parked task waits for its client, not for this attempt's clocks.
    if (this.#parked) return;
    const expiry = this.#deadline.expired(this.#settings.now());
    if (!expiry) return this.#armDeadline();
    // This attempt's max clock is what was left of the task's (it runs from the first start, across
    // attempts); the limit that ran out is the task's own.
    const limitMs = expiry.clock === 'max' ? (this.task.maxTimeoutMs ?? expiry.limitMs) : expiry.limitMs;
    const timeout = new TaskTimeoutError(expiry.clock, limitMs);
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(timeout);
    // The task fails at the deadline, not when the handler gets round to noticing.
    this.#timeoutWrite = this.#finish({
      status: 'failed',
      error: {
        code: REQUEST_TIMEOUT,
        message: timeout.message,
        data: { clock: expiry.clock, limitMs },
      },
      statusMessage: timeout.message,
      reason: `timeout:${expiry.clock}`,
    }).catch((error: Error) =>
      this.#settings.logger.warn({ taskId: this.task.id, error: error.message }, 'timeout write failed'),
    );
    await this.#timeoutWrite;
  }

  /** Completion without local effects: one statement does the lock, the cancel check and the transition. */
  async #complete(result: ToolResult): Promise<void> {
    if (this.task.idempotencyKey !== null) {
      // The stored result must commit with the completion: the transactional path, not the batch.
      await this.#commit(async () => result, 'handler returned');
      return;
    }
    this.#guardCommit();
    await this.#flushProgress();
    const completion = { id: this.task.id, attempt: this.task.attempt, result, reason: 'handler returned' };
    const completed = await this.#persist(() => this.#settings.completions.submit(completion));
    if (completed) {
      this.#committed = true;
      return;
    }
    // Not completed: a cancel came first, or something else ended the attempt (or an earlier try
    // of this very completion committed and lost its answer). Which one?
    const [state] = await this.#persist(() => readCancelStates(this.#settings.db, [this.task.id]));
    if (state && state.attempt === this.task.attempt && !isTerminalStatus(state.status) && state.cancelRequested) {
      this.#cancelled(state.cancelReason, 'final commit found the flag');
      throw this.#controller.signal.reason;
    }
    // Superseded: a clock or a newer attempt ended this one first; nothing more to write.
    this.#committed = true;
    throw this.#controller.signal.aborted
      ? this.#controller.signal.reason
      : new Error(`task is already ${state?.status}`);
  }

  /**
   * The final commit is the last checkpoint: lock the task row, and only if no cancel was requested
   * run the effects and complete the task, all in one transaction.
   */
  async #commit(effects: (trx: Transaction<Database>) => Promise<ToolResult>, reason: string): Promise<ToolResult> {
    if (this.#committed) throw new Error('the task was already committed; commit runs once');
    // The last progress a rate limit held back is stored before the terminal state, never after.
    if (this.#latestProgress && this.#latestProgress !== this.#writtenProgress)
      this.#writeProgress(this.#latestProgress);
    await this.#progressWrites;
    if (this.#controller.signal.aborted && !(this.#controller.signal.reason instanceof TaskCancelledError)) {
      throw this.#controller.signal.reason;
    }
    // Retried whole while the database is unreachable: a transaction that failed committed
    // nothing, and one whose COMMIT answer was lost is found ended by the next try's lock.
    const outcome = await this.#persist(() =>
      this.#settings.announcer.transaction(this.#settings.db, async (writer) => {
        const trx = writer.db as Transaction<Database>;
        const check = await lockForCompletion(trx, this.task.id, this.task.attempt);
        if (check.kind !== 'proceed') return check;
        await this.#settings.hooks?.afterCompletionLock?.(this.task.id);
        const result = await effects(trx);
        const key = this.task.idempotencyKey;
        if (key !== null) {
          const stored = await completeKey(trx, { tenantId: this.task.tenantId, key, taskId: this.task.id, result });
          // Only a task that already ended can lose its key, and then the lock above said so.
          if (!stored) throw new Error(`idempotency key ${key} is no longer held by task ${this.task.id}`);
        }
        await finishAttempt(writer, this.task.id, this.task.attempt, { status: 'completed', result, reason });
        return { kind: 'completed' as const, result };
      }),
    );
    if (outcome.kind === 'completed') {
      this.#committed = true;
      return outcome.result;
    }
    if (outcome.kind === 'cancel-requested') {
      this.#cancelled(outcome.reason, 'final commit found the flag');
      throw this.#controller.signal.reason;
    }
    // Superseded: a clock or a newer attempt ended this one first.
    this.#committed = true;
    throw this.#controller.signal.aborted
      ? this.#controller.signal.reason
      : new Error(`task is already ${outcome.status}`);
  }

  #guardCommit(): void {
    if (this.#committed) throw new Error('the task was already committed; commit runs once');
    // A clock or a release ends the attempt; only a cancel still goes to the final commit, which
    // then finds the flag and ends the task cancelled.
    if (this.#controller.signal.aborted && !(this.#controller.signal.reason instanceof TaskCancelledError)) {
      throw this.#controller.signal.reason;
    }
  }

  /** The last progress a rate limit held back is stored before the terminal state, never after. */
  async #flushProgress(): Promise<void> {
    if (this.#latestProgress && this.#latestProgress !== this.#writtenProgress)
      this.#writeProgress(this.#latestProgress);
    await this.#progressWrites;
  }

  #cancelled(reason: string | null, how: string): void {
    this.#cancelSeenHow ??= how;
    if (!this.#controller.signal.aborted) this.#controller.abort(new TaskCancelledError(reason));
  }

  async #settleFailure(thrown: unknown): Promise<void> {
    // A handler that stops because of the signal often throws an AbortError of its own; the
    // signal's reason says why.
    const error = this.#controller.signal.aborted ? this.#controller.signal.reason : thrown;
    if (error instanceof TaskTimeoutError) return; // failed at the deadline already
    if (this.#committed) return; // superseded at the final commit
    if (this.#parked) return; // input_required: the answer queues the next run
    if (error instanceof TaskReleasedError) {
      if (await this.#persist(() => releaseAttempt(this.#writer, this.task.id, this.task.attempt, error.message))) {
        this.#settings.logger.info(
          { taskId: this.task.id, tool: this.task.tool, attempt: this.task.attempt },
          'task handed back for another worker to run',
        );
        throw error;
      }
      // Not handed back: a cancel was asked for first (nobody is to run it again), or another
      // attempt or a clock ended this one.
      const [state] = await this.#persist(() => readCancelStates(this.#settings.db, [this.task.id]));
      if (state?.attempt !== this.task.attempt || isTerminalStatus(state.status) || !state.cancelRequested) throw error;
      await this.#persist(() =>
        recordCancelObserved(this.#settings.db, this.task.id, this.task.attempt, 'at the hand-back'),
      );
      await this.#finish({
        status: 'cancelled',
        statusMessage: state.cancelReason ? `task cancelled: ${state.cancelReason}` : 'task cancelled',
        reason: 'cancel observed: at the hand-back',
      });
      return;
    }
    if (error instanceof TaskCancelledError) {
      const how = this.#cancelSeenHow ?? 'handler stopped';
      await this.#persist(() => recordCancelObserved(this.#settings.db, this.task.id, this.task.attempt, how));
      await this.#finish({ status: 'cancelled', statusMessage: error.message, reason: `cancel observed: ${how}` });
      return;
    }
    if (error instanceof ToolProtocolError) {
      await this.#finish({
        status: 'failed',
        error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) },
        statusMessage: error.message,
        reason: 'protocol error',
      });
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    this.#settings.logger.warn({ taskId: this.task.id, tool: this.task.tool, error: message }, 'tool handler threw');
    await this.#finish({
      status: 'failed',
      error: { code: INTERNAL_ERROR, message },
      statusMessage: message,
      reason: 'handler threw',
    });
  }

  #finish(outcome: Outcome): Promise<TaskRecord | null> {
    return this.#persist(() => finishAttempt(this.#writer, this.task.id, this.task.attempt, outcome));
  }

  #persist<T>(write: () => Promise<T>): Promise<T> {
    return retryWhileUnavailable(write, {
      ...this.#settings.outage,
      onRetry: (error, attempt, delayMs) => {
        if (attempt === 0) {
          this.#settings.logger.warn(
            { taskId: this.task.id, error: (error as Error).message, retryInMs: delayMs },
            'the database is unreachable; the task write is retried until it lands',
          );
        }
      },
    });
  }
}
