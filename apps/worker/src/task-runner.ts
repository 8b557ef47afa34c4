import {
  type ClaimedAttempt,
  completeAttempts,
  type Database,
  finishAttempt,
  type Outcome,
  openReconciliationItem,
  readCancelTiming,
  recordCancelObserved,
  releaseAttempt,
  retryWhileUnavailable,
  strayAttempts,
  type TaskAnnouncer,
  type TaskRecord,
} from '@taskgate/db';
import { processMetrics, processTracing, runMetrics, type TaskgateMetrics } from '@taskgate/metrics';
import { isLogLevel, type LogLevel, logLevelPasses } from '@taskgate/protocol';
import { Batcher, mayRetryAutomatically } from '@taskgate/reliability';
import { TaskReleasedError } from '@taskgate/sdk';
import { type LogEntry, type ToolRegistry, ToolRun } from '@taskgate/tools';
import type { Kysely } from 'kysely';
import type { CancelWatcher } from './cancel-watcher.ts';
import { type AttemptHooks, type Completion, TaskRowStore } from './task-row-store.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface TaskRunnerOptions {
  readonly db: Kysely<Database>;
  /** Announces each change after it commits (the API's waiting calls listen for it). */
  readonly announcer: TaskAnnouncer;
  readonly tools: ToolRegistry;
  readonly watcher: CancelWatcher;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
  readonly checkpointReadIntervalMs: number;
  readonly progressWriteIntervalMs: number;
  /** How long a decided write is retried through a database outage (default: until it lands or the worker stops). */
  readonly outageRetryMs?: number;
  readonly now?: () => number;
  readonly hooks?: AttemptHooks;
  /** Where attempts, pickups, stops, orphans and abandoned effects are counted (default: the process's). */
  readonly metrics?: TaskgateMetrics;
}

/** JSON-RPC Invalid params: what a call whose arguments the tool's schema rejects gets. */
const INVALID_PARAMS = -32602;

/**
 * A decided write (a terminal status, a step's result, a hand-back) is retried for as long as the
 * database is unreachable: a handler's outcome is kept however long an outage lasts. What ends the
 * retries is the worker stopping (releaseAll); its tasks are then redelivered, as after a crash.
 */
const DEFAULT_OUTAGE_RETRY_MS = Number.POSITIVE_INFINITY;

/**
 * Runs the tasks pg-boss hands to this worker, one TaskAttempt each, and drains them on shutdown:
 * after beginDrain() every checkpoint releases its task to another worker, and releaseAll() makes
 * the stragglers stop.
 */
export class TaskRunner {
  readonly #options: TaskRunnerOptions;
  readonly #completions: Batcher<Completion, TaskRecord | null>;
  readonly #inFlight = new Map<string, ToolRun>();
  /** Every task a run() here has, from its first line to its last (wider than #inFlight). */
  readonly #claimed = new Set<string>();
  readonly #idleWaiters = new Set<() => void>();
  /** Aborted when the grace period is over: writes still retrying through an outage give up. */
  readonly #stopping = new AbortController();
  #draining = false;

  /** The tools it runs: the options' at first, then what replaceTools gave. */
  #tools: ToolRegistry;

  constructor(options: TaskRunnerOptions) {
    this.#options = options;
    this.#tools = options.tools;
    // Completions without effects share one statement, which commits on its own (a statement is
    // atomic; an explicit transaction would only add BEGIN and COMMIT round trips to every task's
    // critical path). Each row keeps its own conditions (attempt, status, no cancel), so batching
    // changes the number of commits, not who wins a race. The statement locks rows in id order.
    const writer = options.announcer.writer(options.db);
    this.#completions = new Batcher((completions: readonly Completion[]) => completeAttempts(writer, completions));
  }

  /**
   * Runs later claims with these tools (the worker's tools changed). A handler already running
   * goes on with the definition it started with; a task accepted under a definition that changed
   * is checked against the new one (#fitsServedVersion), as after a deploy.
   */
  replaceTools(tools: ToolRegistry): void {
    this.#tools = tools;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Runs one claimed attempt (the claim was made with the job's fetch, in one transaction). A null
   * claim means the task had finished, been cancelled or expired before this delivery: nothing to
   * run. Throws TaskReleasedError when the task was handed back.
   */
  async run(claim: ClaimedAttempt | null): Promise<void> {
    if (!claim) return;
    this.#claimed.add(claim.task.id);
    try {
      await this.#run(claim);
    } catch (error) {
      if (!(error instanceof TaskReleasedError)) await this.#handBackFailed(claim.task, error);
      throw error;
    } finally {
      this.#claimed.delete(claim.task.id);
    }
  }

  /**
   * Hands back the tasks the database says this worker holds but no run here has: an attempt
   * whose run ended without its final write and whose hand-back failed too, or tasks left under
   * this worker id by a previous process that used it. Nothing else would end them — a live
   * holder's task is neither claimed (awaitHolder) nor swept — so the worker audits itself, at
   * start and then every so often. A claim younger than `quietForMs` is left alone: its run may
   * not have begun yet (the fetch commits before the pump starts it). Returns how many.
   */
  async handBackStrays(workerId: string, quietForMs: number): Promise<number> {
    if (this.#stopping.signal.aborted) return 0;
    const strays = await strayAttempts(this.#options.db, workerId, [...this.#claimed], quietForMs);
    for (const { id, attempt } of strays) {
      // Claimed here since the read: running now, not a stray.
      if (this.#claimed.has(id)) continue;
      await this.#handBackFailed({ id, attempt }, new Error('held by this worker, but no run of it is here'));
    }
    if (strays.length > 0) {
      this.#options.logger.warn(
        { workerId, tasks: strays.length },
        'handed back tasks this worker held but did not run',
      );
    }
    return strays.length;
  }

  /**
   * An attempt whose run failed without handing its task back (a decided write the database
   * refused, or one that gave up through an outage) is over, but the row still names this worker,
   * which lives on: a redelivery of its job would wait for it (awaitHolder) while nothing runs the
   * task, and neither the sweeper's max clock nor a cancel ends a live worker's task. Handed back,
   * fenced by the attempt, so the redelivery claims the next one (the tool's retry class decides
   * whether it runs); asked to cancel, it ends cancelled, as a refused hand-back does. Best
   * effort, once; not while stopping (the stopped instance row says this worker is lost).
   */
  async #handBackFailed(task: Pick<ClaimedAttempt['task'], 'id' | 'attempt'>, failure: unknown): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    const { db, logger, announcer } = this.#options;
    const writer = announcer.writer(db);
    const why = `the attempt failed: ${failure instanceof Error ? failure.message : String(failure)}`;
    try {
      if (await releaseAttempt(writer, task.id, task.attempt, why)) return;
      // Refused: a cancel was requested, or the attempt no longer holds the task (then a no-op).
      await finishAttempt(writer, task.id, task.attempt, {
        status: 'cancelled',
        statusMessage: 'task cancelled',
        reason: 'cancel observed: at the hand-back of a failed attempt',
      });
    } catch (error) {
      logger.warn(
        { taskId: task.id, attempt: task.attempt, error: (error as Error).message },
        "a failed attempt could not hand its task back; the worker's audit tries again (handBackStrays)",
      );
    }
  }

  async #run(claim: ClaimedAttempt): Promise<void> {
    const { db, logger, announcer } = this.#options;
    const tools = this.#tools;
    const writer = announcer.writer(db);
    const { task } = claim;
    const taskId = task.id;
    if (claim.lostWorker) {
      logger.warn(
        { taskId, attempt: task.attempt, lostWorker: claim.lostWorker },
        'previous attempt was lost; running again',
      );
    }
    const persist = <T>(write: () => Promise<T>) => retryWhileUnavailable(write, this.#outage());
    const finish = (outcome: Outcome) => persist(() => finishAttempt(writer, task.id, task.attempt, outcome));
    const fail = (code: number, message: string, reason: string) =>
      finish({ status: 'failed', error: { code, message }, statusMessage: message, reason });

    const tool = tools.get(task.tool);
    if (!tool) {
      await fail(-32601, `tool ${task.tool} is not available on this worker`, 'unknown tool');
      return;
    }
    // A run after the client answered a parked task's input is a resumption, not a retry: the
    // previous attempt ended cleanly (no lost worker) at its ctx.input().
    const resumed = claim.lostWorker === null && Object.keys(task.inputResponses).length > 0;
    if (task.attempt > 1 && claim.lostWorker === null && !resumed) {
      logger.info({ taskId, tool: task.tool, attempt: task.attempt }, 'running a task another worker handed back');
    }
    if (task.attempt > 1 && !resumed && !mayRetryAutomatically(tool.retry, task.idempotencyKey !== null)) {
      // An unsafe call (or a conditional one without a key) may have half-done its effect, and
      // nothing would recognise a second run as the same intent: record it for reconciliation
      // instead of running it again.
      const why =
        tool.retry === 'unsafe'
          ? 'an unsafe tool is never retried automatically'
          : 'a conditional tool called without an idempotency key is never retried automatically';
      await persist(() => openReconciliationItem(db, task.id, `attempt ${task.attempt - 1} was lost; ${why}`));
      await fail(-32603, `the outcome of the previous attempt is unknown: ${why}; see reconciliation`, 'retry refused');
      logger.warn({ taskId, tool: task.tool }, 'retry refused; reconciliation item opened');
      return;
    }
    // A cancel comes before a hand-back: a task asked to stop is not run again elsewhere. The
    // release is refused when a cancel was requested since the claim; then it ends cancelled here.
    let cancelRequested = task.cancelRequestedAt !== null;
    if (!cancelRequested && this.#draining) {
      if (await persist(() => releaseAttempt(writer, task.id, task.attempt, 'worker is shutting down'))) {
        throw new TaskReleasedError('worker is shutting down');
      }
      cancelRequested = true;
    }
    if (cancelRequested) {
      await persist(() => recordCancelObserved(db, task.id, task.attempt, 'before start'));
      await finish({
        status: 'cancelled',
        statusMessage: 'cancelled before it started',
        reason: 'cancel observed: before start',
      });
      return;
    }

    if (!(await this.#fitsServedVersion(task, finish))) return;

    const store = new TaskRowStore(task, {
      db,
      announcer,
      completions: this.#completions,
      outage: this.#outage(),
      logger,
      ...(this.#options.hooks ? { hooks: this.#options.hooks } : {}),
    });
    const metrics = this.#options.metrics ?? processMetrics();
    metrics.attempts.inc({ tool: task.tool });
    // The first start, on the database's clock like the creation: the API and this worker may
    // not agree on the time.
    if (task.attempt === 1 && task.startedAt !== null) {
      metrics.pickupLatency.observe(
        { tool: task.tool },
        Math.max(0, (task.startedAt.getTime() - task.createdAt.getTime()) / 1_000),
      );
    }
    /** A cancel the run learnt from the row: its path and latency are read there once it ends. */
    let cancelFromRow = false;
    // One span per attempt when an OTLP endpoint is configured, linked to the creating request.
    const span = processTracing()?.attempt({
      id: task.id,
      tool: task.tool,
      attempt: task.attempt,
      traceParent: task.traceParent ?? null,
    });
    let endStatus: string | null = null;
    const counted = runMetrics(metrics, () => {
      cancelFromRow = true;
    });
    const attempt = new ToolRun(task, tool, {
      store,
      observer: {
        ...counted,
        stopped: (event) => {
          span?.stopped(event.signal ?? 'cancel');
          counted.stopped(event);
        },
        finished: (event) => {
          endStatus = event.status;
          counted.finished(event);
        },
      },
      elapsedMs: claim.elapsedMs,
      retryable: mayRetryAutomatically(tool.retry, task.idempotencyKey !== null),
      logger,
      checkpointReadIntervalMs: this.#options.checkpointReadIntervalMs,
      progressWriteIntervalMs: this.#options.progressWriteIntervalMs,
      now: this.#options.now ?? Date.now,
      resultProblem: (result) => tools.resultProblem(task.tool, result),
      // Kept for the request that waits for the task, which sends it where its client can hear it.
      onElicitationComplete: (elicitationId: string) => store.elicitationComplete(elicitationId),
      // The calling request asked for a level: what passes it is kept for that request to hear.
      ...(isLogLevel(task.logLevel)
        ? {
            onLog: (entry: LogEntry) => {
              if (logLevelPasses(entry.level, task.logLevel as LogLevel)) store.log(entry);
            },
          }
        : {}),
    });
    this.#inFlight.set(task.id, attempt);
    const unwatch = this.#options.watcher.watch(task.id, (how) => attempt.cancel(how));
    try {
      // With the attempt's span active, the Postgres spans of its run are its children.
      await (span ? span.run(() => attempt.run()) : attempt.run());
      if (cancelFromRow) await this.#recordCancel(task.id, task.tool, metrics);
    } catch (error) {
      // Handed back (shutdown) or given up: the task lives on, this attempt is over.
      if (error instanceof TaskReleasedError) endStatus ??= 'released';
      throw error;
    } finally {
      // Parked for input, superseded by another attempt or a clock: the attempt ended unfinished.
      span?.end({ status: endStatus ?? 'unfinished' });
      unwatch();
      this.#inFlight.delete(task.id);
      if (this.#inFlight.size === 0) for (const resolve of this.#idleWaiters) resolve();
    }
  }

  /**
   * Version skew (README, "Version skew"): a task accepted under another definition of its tool
   * than the one this worker serves runs when its arguments still fit this worker's input schema
   * (said in the log, with both fingerprints); otherwise it fails with -32602 naming both. Only the
   * arguments are judged: the schema is the contract a call was accepted under, and a handler may
   * rely on what its own schema guarantees. Tasks from before migration 0007 carry no fingerprint.
   */
  async #fitsServedVersion(task: ClaimedAttempt['task'], finish: (outcome: Outcome) => Promise<unknown>) {
    const { logger } = this.#options;
    const tools = this.#tools;
    const accepted = task.toolFingerprint;
    const served = tools.fingerprint(task.tool);
    if (accepted === null || accepted === served) return true;
    const fields = { taskId: task.id, tool: task.tool, acceptedFingerprint: accepted, servedFingerprint: served };
    const check = tools.check(task.tool, task.arguments);
    if (check.ok) {
      logger.info(fields, 'running a task accepted under another version of its tool: its arguments fit this one');
      return true;
    }
    const problems = check.kind === 'invalid-arguments' ? check.problems : [];
    const message = `version skew: the call was accepted under ${task.tool} ${accepted}, but this worker serves ${task.tool} ${served}, whose input schema rejects its arguments: ${problems
      .map((problem) => `${problem.path || '(arguments)'} ${problem.message}`)
      .join('; ')}`;
    logger.warn(fields, 'failing a task accepted under another version of its tool: its arguments do not fit this one');
    await finish({
      status: 'failed',
      error: {
        code: INVALID_PARAMS,
        message,
        data: {
          code: 'TG_TOOL_VERSION_SKEW',
          tool: task.tool,
          acceptedFingerprint: accepted,
          servedFingerprint: served,
          errors: problems,
        },
      },
      statusMessage: message,
      reason: 'version skew: arguments rejected',
    });
    return false;
  }

  /**
   * A cancelled task's latency from the request's arrival at the API to its end here, and which
   * path it took (both from the row: the database's clock and the API's word), in the histogram
   * and the log. Best effort: a read that fails costs a sample, never the task.
   */
  async #recordCancel(taskId: string, tool: string, metrics: TaskgateMetrics): Promise<void> {
    try {
      const timing = await readCancelTiming(this.#options.db, taskId);
      if (timing === null) return;
      metrics.cancelLatency.observe({ tool, signal: timing.signal }, timing.seconds);
      this.#options.logger.info(
        { taskId, tool, signal: timing.signal, reason: timing.reason, latencySeconds: timing.seconds },
        'task cancelled: the handler stopped',
      );
    } catch (error) {
      this.#options.logger.debug({ taskId, error: (error as Error).message }, 'the cancel timing could not be read');
    }
  }

  /** From now on, running handlers hand their task back at their next checkpoint. */
  beginDrain(): void {
    this.#draining = true;
    // A call that may not be retried is not handed back at a checkpoint (the next worker would only
    // refuse it); it gets the whole grace period to finish.
    for (const attempt of this.#inFlight.values()) {
      if (attempt.retryable) attempt.releaseAtCheckpoint('worker is shutting down');
    }
  }

  /** The grace period is over: every handler still running is stopped and its task handed back. */
  releaseAll(why: string): void {
    // A write still waiting out an outage gives up now; the task is redelivered after this worker's
    // job heartbeats stop, as after a crash.
    this.#stopping.abort();
    for (const attempt of this.#inFlight.values()) attempt.release(why);
  }

  /**
   * SIGKILLs the subprocess trees of every run still in flight: released, they are in their grace
   * periods, and this worker is done waiting (another worker may run their tasks again).
   */
  killSubprocesses(): void {
    for (const attempt of this.#inFlight.values()) attempt.killSubprocesses();
  }

  #outage(): { giveUpAfterMs: number; signal: AbortSignal } {
    return {
      giveUpAfterMs: this.#options.outageRetryMs ?? DEFAULT_OUTAGE_RETRY_MS,
      signal: this.#stopping.signal,
    };
  }

  /** Resolves true when nothing runs any more, or false when `timeoutMs` passes first. */
  async settled(timeoutMs: number): Promise<boolean> {
    if (this.#inFlight.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    let resolveIdle!: () => void;
    const idle = new Promise<boolean>((resolve) => {
      resolveIdle = () => resolve(true);
      this.#idleWaiters.add(resolveIdle);
    });
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([idle, timeout]);
    } finally {
      clearTimeout(timer);
      this.#idleWaiters.delete(resolveIdle);
    }
  }
}
