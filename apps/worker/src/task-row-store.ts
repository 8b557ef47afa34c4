import {
  addOutboxEvents,
  appendLogMessages,
  completeKey,
  type Database,
  finishAttempt,
  finishIrreversibleStep,
  isDatabaseUnavailable,
  lockForCompletion,
  type NewLogMessage,
  type OutageRetryOptions,
  type OutboxEvent,
  parkForInput,
  rawQuery,
  readCancelStates,
  readSteps,
  recordCancelObserved,
  recordProgress,
  recordStep,
  releaseAttempt,
  retryWhileUnavailable,
  type StepRecord,
  startIrreversibleStep,
  type TaskAnnouncer,
  type TaskRecord,
  type TaskWriter,
} from '@taskgate/db';
import type { CommitContext, InputRequest, ToolResult } from '@taskgate/sdk';
import type { CommitOutcome, LogEntry, RunCancelState, RunOutcome, RunProgress, RunStore } from '@taskgate/tools';
import type { Kysely, Transaction } from 'kysely';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** A completion without local effects: the task, its attempt, and the result it completes with. */
export interface Completion {
  readonly id: string;
  readonly attempt: number;
  readonly result: unknown;
  readonly reason: string;
  readonly progress?: RunProgress | undefined;
}

/** Test seams that hold a step so a race can be forced by order, not by timing. */
export interface AttemptHooks {
  /** Runs inside the completion transaction, after the task row is locked. */
  readonly afterCompletionLock?: (taskId: string) => Promise<void>;
}

export interface TaskRowStoreOptions {
  /** Reads, and the final commit's transaction. */
  readonly db: Kysely<Database>;
  /** Every task write goes through it, and it announces each change after it commits. */
  readonly announcer: TaskAnnouncer;
  /** Completions without local effects go through here (group commit). */
  readonly completions: { submit(completion: Completion): Promise<TaskRecord | null> };
  /**
   * A write whose outcome is decided (a terminal status, a step's result, a hand-back) is retried
   * while the database is unreachable, for up to `giveUpAfterMs` or until `signal` aborts (the
   * worker is stopping): a Postgres restart delays it instead of losing it.
   */
  readonly outage: Pick<OutageRetryOptions, 'giveUpAfterMs' | 'signal'>;
  readonly logger: { readonly warn: LogFn; readonly debug: LogFn };
  readonly hooks?: AttemptHooks;
}

/** Most log messages in one write. */
const LOG_BATCH = 100;

/** A durable run's store: the task row, written only while this attempt holds it. */
export class TaskRowStore implements RunStore {
  readonly #task: TaskRecord;
  readonly #options: TaskRowStoreOptions;
  readonly #writer: TaskWriter;
  /** ctx.log() messages not written yet, and the write under way. */
  readonly #logQueue: NewLogMessage[] = [];
  #logWrite: Promise<void> | null = null;

  constructor(task: TaskRecord, options: TaskRowStoreOptions) {
    this.#task = task;
    this.#options = options;
    this.#writer = options.announcer.writer(options.db);
  }

  async peekCancelState(): Promise<RunCancelState | null> {
    try {
      const [state] = await readCancelStates(this.#options.db, [this.#task.id]);
      return state ?? null;
    } catch (error) {
      // An outage is said once, by the writes that must land; anything else is worth a line.
      if (!isDatabaseUnavailable(error)) this.#log('warn', error, 'checkpoint read failed');
      return null;
    }
  }

  async readCancelState(): Promise<RunCancelState | null> {
    const [state] = await this.#persist(() => readCancelStates(this.#options.db, [this.#task.id]));
    return state ?? null;
  }

  async recordProgress(progress: RunProgress): Promise<boolean> {
    try {
      // Stored, or the attempt no longer holds the task (writing again would not change that).
      await recordProgress(this.#writer, this.#task.id, this.#task.attempt, progress);
      return true;
    } catch (error) {
      // Progress is replaceable: the next write supersedes a lost one; only the last is written again.
      this.#log(isDatabaseUnavailable(error) ? 'debug' : 'warn', error, 'progress write failed');
      return false;
    }
  }

  /**
   * Keeps a ctx.log() message with the task, for the request that waits for it. Messages logged
   * in one turn of the event loop go in one write; a write that fails is not retried (like
   * progress, a log is best effort), but every write finishes before the attempt's next decided
   * write (a status, a hand-back), so a reader that sees the final status sees every message.
   */
  log(entry: LogEntry): void {
    this.#logQueue.push(entry);
    this.#logWrite ??= this.#writeLogs();
  }

  /**
   * Keeps ctx.elicitationComplete() with the task, in order with its log messages, for the request
   * that waits for it to send as notifications/elicitation/complete (where its client can hear
   * one). Best effort as a log is: the notification is optional, and a client that misses it
   * still retries or reads the task.
   */
  elicitationComplete(elicitationId: string): void {
    this.#logQueue.push({ kind: 'elicitation_complete', elicitationId });
    this.#logWrite ??= this.#writeLogs();
  }

  async #writeLogs(): Promise<void> {
    try {
      while (this.#logQueue.length > 0) {
        await new Promise((resolve) => setImmediate(resolve));
        const messages = this.#logQueue.splice(0, LOG_BATCH);
        try {
          await appendLogMessages(this.#writer, { taskId: this.#task.id, attempt: this.#task.attempt, messages });
        } catch (error) {
          this.#log(isDatabaseUnavailable(error) ? 'debug' : 'warn', error, 'log messages not kept');
        }
      }
    } finally {
      this.#logWrite = null;
    }
  }

  /** Resolves once every message logged so far has been written (or dropped). */
  async #logsWritten(): Promise<void> {
    while (this.#logWrite) await this.#logWrite;
  }

  readSteps(): Promise<Map<string, StepRecord>> {
    return this.#persist(() => readSteps(this.#options.db, this.#task.id));
  }

  startIrreversibleStep(name: string): Promise<boolean> {
    return this.#persist(() =>
      startIrreversibleStep(this.#options.db, { taskId: this.#task.id, attempt: this.#task.attempt, name }),
    );
  }

  recordStep(name: string, result: unknown, irreversible: boolean): Promise<boolean> {
    const step = { taskId: this.#task.id, attempt: this.#task.attempt, name, result };
    return this.#persist(() =>
      irreversible ? finishIrreversibleStep(this.#options.db, step) : recordStep(this.#options.db, step),
    );
  }

  async park(
    requests: Readonly<Record<string, InputRequest>>,
    message: string,
    progress?: RunProgress,
  ): Promise<boolean> {
    await this.#logsWritten();
    const parked = await this.#persist(() =>
      parkForInput(this.#writer, this.#task.id, this.#task.attempt, requests, message, progress),
    );
    return parked !== null;
  }

  async complete(result: ToolResult, reason: string, progress?: RunProgress): Promise<boolean> {
    await this.#logsWritten();
    const completion = { id: this.#task.id, attempt: this.#task.attempt, result, reason, progress };
    return (await this.#persist(() => this.#options.completions.submit(completion))) !== null;
  }

  /**
   * Retried whole while the database is unreachable: a transaction that failed committed nothing,
   * and one whose COMMIT answer was lost is found ended by the next try's lock.
   */
  async commit(
    effects: (tx: CommitContext<unknown>) => Promise<ToolResult>,
    reason: string,
    progress?: RunProgress,
  ): Promise<CommitOutcome> {
    await this.#logsWritten();
    const task = this.#task;
    return this.#persist(() =>
      this.#options.announcer.transaction(this.#options.db, async (writer): Promise<CommitOutcome> => {
        const trx = writer.db as Transaction<Database>;
        const check = await lockForCompletion(trx, task.id, task.attempt);
        if (check.kind === 'cancel-requested') return check;
        if (check.kind === 'superseded') return { kind: 'superseded', status: check.status ?? 'gone' };
        await this.#options.hooks?.afterCompletionLock?.(task.id);
        const events: OutboxEvent[] = [];
        let open = true;
        const result = await effects({
          db: trx as unknown as Transaction<unknown>,
          query: rawQuery(trx as unknown as Kysely<unknown>),
          outbox: {
            add: (event) => {
              if (!open) throw new Error('outbox.add was called after its commit had ended');
              events.push({
                tenantId: task.tenantId,
                aggregateType: event.aggregateType,
                aggregateId: event.aggregateId,
                eventType: event.eventType,
                payload: event.payload,
              });
            },
          },
        }).finally(() => {
          open = false;
        });
        await addOutboxEvents(trx, events);
        const key = task.idempotencyKey;
        if (key !== null) {
          const stored = await completeKey(trx, { tenantId: task.tenantId, key, taskId: task.id, result });
          // Only a task that already ended can lose its key, and then the lock above said so.
          if (!stored) throw new Error(`idempotency key ${key} is no longer held by task ${task.id}`);
        }
        await finishAttempt(writer, task.id, task.attempt, { status: 'completed', result, reason, progress });
        return { kind: 'completed', result };
      }),
    );
  }

  async finish(outcome: RunOutcome): Promise<boolean> {
    await this.#logsWritten();
    return (
      (await this.#persist(() => finishAttempt(this.#writer, this.#task.id, this.#task.attempt, outcome))) !== null
    );
  }

  async release(why: string): Promise<boolean> {
    await this.#logsWritten();
    return this.#persist(() => releaseAttempt(this.#writer, this.#task.id, this.#task.attempt, why));
  }

  recordCancelObserved(how: string): Promise<void> {
    return this.#persist(() => recordCancelObserved(this.#options.db, this.#task.id, this.#task.attempt, how));
  }

  #persist<T>(write: () => Promise<T>): Promise<T> {
    return retryWhileUnavailable(write, {
      ...this.#options.outage,
      onRetry: (error, attempt, delayMs) => {
        if (attempt === 0) {
          this.#options.logger.warn(
            { taskId: this.#task.id, error: (error as Error).message, retryInMs: delayMs },
            'the database is unreachable; the task write is retried until it lands',
          );
        }
      },
    });
  }

  #log(level: 'warn' | 'debug', error: unknown, message: string): void {
    const fields = { taskId: this.#task.id, error: error instanceof Error ? error.message : String(error) };
    if (level === 'warn') this.#options.logger.warn(fields, message);
    else this.#options.logger.debug(fields, message);
  }
}
