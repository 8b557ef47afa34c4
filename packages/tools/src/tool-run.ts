import { checkJsonValue, isLogLevel, LOG_LEVELS, type LogLevel } from '@taskgate/protocol';
import {
  type CancelSignal,
  isTerminalStatus,
  ProgressGate,
  type ProgressUpdate,
  TwoClockDeadline,
} from '@taskgate/reliability';
import {
  type CommitContext,
  DEFAULT_SUBPROCESS_GRACE_MS,
  type InputRequest,
  TaskCancelledError,
  TaskParkedError,
  TaskReleasedError,
  TaskTimeoutError,
  type ToolContext,
  ToolProtocolError,
  type ToolResult,
} from '@taskgate/sdk';
import type { AnyTool } from './any-tool.ts';
import { inputAnswersProblem } from './input-answers.ts';
import type { RunObserver } from './run-observer.ts';
import type { CommitOutcome, RunOutcome, RunProgress, RunStore, RunTask, StepRecord } from './run-store.ts';
import { StopWatch } from './stop-watch.ts';
import { killSubprocessTrees } from './subprocess.ts';
import { taskScope } from './task-scope.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Progress writes a task may make back to back before its interval applies: a tool reporting a few
 * quick steps is told step by step, a chatty one still costs one write per interval.
 */
export const PROGRESS_BURST = 5;

export interface RunSettings {
  /** Where the task lives: its row (a durable run) or memory (an inline one). */
  readonly store: RunStore;
  /** How long the task ran in earlier attempts: the max clock runs from its first start. */
  readonly elapsedMs: number;
  /** Whether another worker may run the task again if this attempt is handed back or lost. */
  readonly retryable: boolean;
  readonly logger: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
  /** The longest a checkpoint trusts its last reading of the cancel flag. */
  readonly checkpointReadIntervalMs: number;
  /**
   * One progress write (and notification) per task per interval on average, PROGRESS_BURST of them
   * back to back; what comes faster is held and the latest wins.
   */
  readonly progressWriteIntervalMs: number;
  readonly now: () => number;
  /** What is wrong with a result of this tool's handler, or null (ToolRegistry.resultProblem). */
  readonly resultProblem?: (result: unknown) => string | null;
  /** Where ctx.log() messages go (an inline call's client); absent: the run's logger, at debug. */
  readonly onLog?: (entry: LogEntry) => void;
  /**
   * Where ctx.elicitationComplete() goes: an inline call whose client can hear it (a handshake
   * revision's stream, a client that declared URL elicitation); absent: nowhere, said at debug.
   */
  readonly onElicitationComplete?: (elicitationId: string) => void;
  /** Who counts stops, orphans and abandoned effects (metrics). */
  readonly observer?: RunObserver;
}

/** One ctx.log() message. */
export interface LogEntry {
  readonly level: LogLevel;
  readonly data: unknown;
  readonly logger?: string;
}

/** The most a ctx.log() message's data may take as JSON: a log line, not a payload. */
export const MAX_LOG_DATA_BYTES = 64 * 1024;

/** Why a value cannot travel as a log message's data as it is, or null. */
function logDataProblem(value: unknown): string | null {
  if (value === undefined) return 'undefined';
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return (error as Error).message.split('\n')[0] ?? 'not JSON';
  }
  // Durable runs keep every message (up to 1,000 per task): a bound per message bounds the rows.
  if (Buffer.byteLength(json) > MAX_LOG_DATA_BYTES) return `more than ${MAX_LOG_DATA_BYTES} bytes as JSON`;
  return checkJsonValue(value)?.message ?? null;
}

/** At most this many ctx.log() messages per run go anywhere (server/utilities/logging: rate limit). */
export const MAX_LOG_MESSAGES = 200;

/** How long a checkpoint waits for its read of the cancel flag before the handler goes on. */
const CHECKPOINT_READ_WAIT_MS = 100;

/** JSON-RPC error codes a failed run carries: one set, whether the run was inline or durable. */
export const INTERNAL_ERROR = -32603;
export const INVALID_PARAMS = -32602;
export const REQUEST_TIMEOUT = -32001;

/**
 * One attempt at running a tool's handler, and the one implementation of ToolContext: its
 * AbortController, its two clocks, its progress, its checkpoints and its single way out. Whatever
 * ends the attempt first — the handler returning, a cancel, a clock, a release — decides the
 * task's fate; the others find it decided. Inline and durable runs differ only in their store.
 */
export class ToolRun {
  readonly task: RunTask;
  readonly #tool: AnyTool;
  readonly #settings: RunSettings;
  readonly #store: RunStore;
  /** Why the run was stopped (a cancel, a clock, a release), once it was; #abort sets both. */
  #isStopped = false;
  #stopReason: unknown;
  readonly #deadline: TwoClockDeadline;
  readonly #progressGate: ProgressGate;
  #highestProgress = Number.NEGATIVE_INFINITY;
  #latestProgress: ProgressUpdate | null = null;
  /** The last progress handed to a write, and the last one the store confirmed it stored. */
  #queuedProgress: ProgressUpdate | null = null;
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
  /** The result this run's own commit completed the task with (not set when superseded). */
  #committedResult: ToolResult | null = null;
  #warnedProgress = false;
  #cancelSeenHow: string | null = null;
  #releaseRequested: string | null = null;
  #steps: Map<string, StepRecord> | null = null;
  #stepsLoad: Promise<Map<string, StepRecord>> | null = null;
  /** Steps under way, by name: a second call of one waits for the first (#step). */
  #stepsRunning: Map<string, Promise<unknown>> | null = null;
  #parked = false;
  /**
   * ctx.signal, the root scope's: aborted with the run's stop (#abort), and when run() is over,
   * whatever ended it: what the handler started and left running (a spawn it did not await, a
   * request of a branch that outlived it) is stopped with the run, and nothing new starts bound
   * to a run that is over. The run's one AbortController: its own checks read #isStopped (a run
   * that ended was not stopped). Every inline call makes a run: AbortSignal.any (its weak
   * references) cost one about 4% of its CPU time, a second controller followed by a listener more.
   */
  readonly #scope = new AbortController();
  /** The run's subprocess trees while they live: its worker SIGKILLs them if it stops waiting. */
  #subprocesses: Set<number> | null = null;
  /**
   * When a stop (cancel, clock, shutdown) reached this run, and whether the handler outlived it:
   * made by the first stop (most runs have none), told of an exit before it by #handlerExited.
   */
  #stopWatch: StopWatch | null = null;
  #handlerExited = false;
  /** ctx.commit's transaction is under way: a clock that runs out waits for its outcome. */
  #committing = false;
  /** The timeout of a clock that ran out during ctx.commit, written only if the commit did not complete. */
  #timeoutAfterCommit: RunOutcome | null = null;
  /** The end this run wrote for its task, if it wrote one. */
  #endStatus: 'completed' | 'failed' | 'cancelled' | null = null;

  constructor(task: RunTask, tool: AnyTool, settings: RunSettings) {
    this.task = task;
    this.#tool = tool;
    this.#settings = settings;
    this.#store = settings.store;
    const elapsedMs = settings.elapsedMs;
    const now = settings.now();
    this.#lastFlagReadAt = now;
    // The max clock runs from the task's first start, across attempts; the idle clock from now.
    const maxMs = task.maxTimeoutMs === null ? undefined : Math.max(1, Math.round(task.maxTimeoutMs - elapsedMs));
    this.#deadline = new TwoClockDeadline({ idleMs: task.idleTimeoutMs ?? undefined, maxMs }, now);
    this.#progressGate = new ProgressGate({ intervalMs: settings.progressWriteIntervalMs, burst: PROGRESS_BURST });
  }

  get retryable(): boolean {
    return this.#settings.retryable;
  }

  /** Aborted when the run is stopped, and once it is over. */
  get signal(): AbortSignal {
    return this.#scope.signal;
  }

  /** Runs the handler to its end and settles the task. Throws TaskReleasedError to hand the job back. */
  async run(): Promise<void> {
    this.#armDeadline();
    try {
      const result = await this.#runHandler();
      if (!this.#committed) await this.#complete(this.#checked(result));
      else if (
        this.#committedResult !== null &&
        // The usual `return ctx.commit(...)` hands back the very object: no serializing to compare.
        result !== this.#committedResult &&
        JSON.stringify(result) !== JSON.stringify(this.#committedResult)
      ) {
        // The task completed with its commit's result; a different return value reaches nobody.
        this.#settings.logger.warn(
          { taskId: this.task.id, tool: this.task.tool },
          'the handler returned a result other than the one its ctx.commit stored; the task keeps the committed one',
        );
      }
    } catch (error) {
      await this.#settleFailure(error);
    } finally {
      // A run that was stopped has its scope aborted already, with the stop's reason.
      this.#scope.abort(RUN_ENDED);
      clearTimeout(this.#deadlineTimer);
      clearTimeout(this.#progressTimer);
      this.#progressGate.close();
      await this.#progressWrites;
      await this.#timeoutWrite;
      this.#report();
    }
  }

  /** The handler itself: its exit ends the stop's latency and the orphan watch. */
  async #runHandler(): Promise<ToolResult> {
    try {
      return await this.#tool.handler(this.task.arguments as never, this.#context());
    } finally {
      // The handler's outcome is decided: from here no clock may change it. A completion write
      // held up by an outage or a lock lands when it can (the store retries it), not when a clock
      // would have said the handler took too long.
      this.#handlerExited = true;
      clearTimeout(this.#deadlineTimer);
      this.#stopWatch?.exited();
    }
  }

  #stopped(signal: CancelSignal | null, watch = true): void {
    if (this.#stopWatch === null) {
      const task = this.task;
      const settings = this.#settings;
      const graceMs = this.#tool.subprocessGraceMs ?? DEFAULT_SUBPROCESS_GRACE_MS;
      this.#stopWatch = new StopWatch({
        graceMs,
        now: settings.now,
        onOrphan: (delta, orphanSignal) => {
          if (delta > 0) {
            settings.logger.warn(
              { taskId: task.id, tool: task.tool, signal: orphanSignal ?? 'cancel', graceMs },
              'the handler is still running a grace period after it was told to stop: orphaned work',
            );
          }
          settings.observer?.orphan?.({ kind: 'handler', tool: task.tool, delta });
        },
      });
      if (this.#handlerExited) this.#stopWatch.exited();
    }
    this.#stopWatch.stopped(signal, watch);
  }

  /** Stops the handler and whatever ctx started (the run's signal), with one reason. */
  #abort(reason: unknown): void {
    this.#isStopped = true;
    this.#stopReason = reason;
    this.#scope.abort(reason);
  }

  /** What the run tells its observer once it is over. */
  #report(): void {
    const observer = this.#settings.observer;
    if (!observer) return;
    const tool = this.task.tool;
    if (this.#endStatus !== null) observer.finished?.({ tool, status: this.#endStatus });
    // A stop that the handler outran (it completed anyway) is no cancel latency.
    const measured = this.#stopWatch?.measured ?? null;
    if (measured !== null && this.#endStatus !== 'completed') observer.stopped?.({ tool, ...measured });
    if (this.#endStatus === 'failed' || this.#endStatus === 'cancelled') {
      const irreversible = [...(this.#steps?.values() ?? [])].filter((step) => step.irreversible);
      if (irreversible.length > 0) {
        observer.abandoned?.({
          tool,
          outcome: irreversible.some((step) => step.state === 'started') ? 'unknown' : 'effects',
        });
      }
    }
  }

  /** A cancel request reached this worker (notification or poll). */
  cancel(how: string, reason: string | null = this.task.cancelReason, signal: CancelSignal | null = null): void {
    if (this.#isStopped) return;
    this.#cancelSeenHow = how;
    this.#stopped(signal);
    this.#abort(new TaskCancelledError(reason));
  }

  /**
   * The worker is shutting down: the task goes back to the queue at the handler's next checkpoint,
   * the safe point where it can stop. A handler that finishes before reaching one completes.
   */
  releaseAtCheckpoint(why: string): void {
    this.#releaseRequested ??= why;
    this.#stopped('shutdown', false);
  }

  /**
   * SIGKILLs what the run's ctx.spawn() calls still have running: its worker will not wait out
   * their grace periods (it is stopping, and the task goes to another worker).
   */
  killSubprocesses(): void {
    if (this.#subprocesses) killSubprocessTrees(this.#subprocesses);
  }

  /** Stops the handler now and hands the task to another worker (the grace period is over). */
  release(why: string): void {
    if (this.#isStopped) return;
    this.#stopped('shutdown');
    this.#abort(new TaskReleasedError(why));
  }

  #context(): ToolContext {
    // signal, sleep, spawn, fetch, all and race: the run's root scope (task-scope.ts).
    const scope = taskScope(this.#scope.signal, {
      spawnGraceMs: this.#tool.subprocessGraceMs ?? DEFAULT_SUBPROCESS_GRACE_MS,
      idempotencyKey: this.task.idempotencyKey,
      // Made by the first ctx.spawn(): most runs spawn nothing.
      subprocesses: () => {
        this.#subprocesses ??= new Set();
        return this.#subprocesses;
      },
      onOrphan: (delta) => this.#settings.observer?.orphan?.({ kind: 'subprocess', tool: this.task.tool, delta }),
      log: (fields, message) =>
        this.#settings.logger.info({ taskId: this.task.id, tool: this.task.tool, ...fields }, message),
    });
    // Every field named, none spread: a spread copies property by property on every call.
    return {
      tenant: this.task.tenantId,
      taskId: this.task.id,
      attempt: this.task.attempt,
      idempotencyKey: this.task.idempotencyKey,
      checkpoint: () => this.#checkpoint(),
      progress: (value, total, message) => this.#progress(value, total, message),
      log: (level, data, logger) => this.#log(level, data, logger),
      commit: (effects) => this.#commit(effects, 'handler committed'),
      step: (name, fn, options) => this.#step(name, fn, options),
      input: (requests) => this.#input(requests),
      elicitationComplete: (elicitationId) => this.#elicitationComplete(elicitationId),
      clientCapabilities: this.task.clientCapabilities,
      signal: scope.signal,
      sleep: scope.sleep,
      spawn: scope.spawn,
      fetch: scope.fetch,
      all: scope.all,
      race: scope.race,
    };
  }

  #logged = 0;

  #log(level: unknown, data: unknown, logger: unknown): void {
    if (!isLogLevel(level)) throw new TypeError(`ctx.log level must be one of ${LOG_LEVELS.join(', ')}`);
    if (logger !== undefined && typeof logger !== 'string') throw new TypeError('ctx.log logger must be a string');
    const problem = logDataProblem(data);
    if (problem !== null) throw new TypeError(`ctx.log data must be a JSON value of at most 64 KiB: ${problem}`);
    this.#logged += 1;
    if (this.#logged > MAX_LOG_MESSAGES) return;
    const entry: LogEntry = { level, data, ...(logger === undefined ? {} : { logger }) };
    if (this.#settings.onLog) this.#settings.onLog(entry);
    else this.#settings.logger.debug({ taskId: this.task.id, tool: this.task.tool, ...entry }, 'tool log message');
  }

  #elicitationComplete(elicitationId: unknown): void {
    if (typeof elicitationId !== 'string' || elicitationId === '') {
      throw new TypeError('ctx.elicitationComplete needs the elicitationId of a URL elicitation, a non-empty string');
    }
    if (this.#settings.onElicitationComplete) this.#settings.onElicitationComplete(elicitationId);
    else {
      this.#settings.logger.debug(
        { taskId: this.task.id, tool: this.task.tool, elicitationId },
        'elicitation completion not sent: this call has no client stream that can carry it',
      );
    }
  }

  /**
   * ctx.step(). One run of a name at a time: a second call while the first is under way (two
   * branches of ctx.all naming the same step) waits for it and gets its result, so a step runs
   * once per task even within one attempt.
   */
  #step<T>(name: string, fn: () => Promise<T>, options: unknown): Promise<T> {
    const irreversible = stepIrreversible(options);
    this.#stepsRunning ??= new Map();
    const stepsRunning = this.#stepsRunning;
    const running = stepsRunning.get(name);
    if (running) return running.then((result) => structuredClone(result) as T);
    const run = this.#runStep(name, fn, irreversible).finally(() => stepsRunning.delete(name));
    stepsRunning.set(name, run);
    return run.then((result) => structuredClone(result) as T);
  }

  async #runStep(name: string, fn: () => Promise<unknown>, irreversible: boolean): Promise<unknown> {
    // One read for the run, however many steps start before it answers.
    this.#stepsLoad ??= this.#store.readSteps();
    const steps = await this.#stepsLoad;
    this.#steps = steps;
    const known = steps.get(name);
    // Recorded by an earlier attempt (or earlier in this one): its result, never a second run.
    if (known?.state === 'done') return known.result;
    if (known?.state === 'started') {
      // Started and never recorded: it may have taken effect. Running it again could do it twice.
      throw new ToolProtocolError(
        INTERNAL_ERROR,
        `irreversible step ${name} was started by attempt ${known.attempt} and its outcome was never recorded; it is not run again (see the task's reconciliation item)`,
        { code: 'TG_STEP_OUTCOME_UNKNOWN', step: name },
      );
    }
    if (this.#isStopped) throw this.#stopReason;
    if (irreversible) {
      if (!(await this.#store.startIrreversibleStep(name))) {
        throw this.#isStopped ? this.#stopReason : new Error(`step ${name}: this attempt no longer holds the task`);
      }
      // From here until its result is recorded, a second call of this step is an unknown outcome.
      steps.set(name, { state: 'started', irreversible: true, attempt: this.task.attempt });
    }
    const produced = await fn();
    const stored: unknown = produced === undefined ? null : JSON.parse(JSON.stringify(produced));
    let recorded: boolean;
    try {
      recorded = await this.#store.recordStep(name, stored, irreversible);
    } catch (error) {
      if (irreversible) {
        // The effect happened and its record did not land: the log is the only place it is kept.
        this.#settings.logger.warn(
          {
            taskId: this.task.id,
            tool: this.task.tool,
            step: name,
            result: JSON.stringify(stored).slice(0, 2_000),
            error: (error as Error).message,
          },
          'an irreversible step took effect but its result could not be recorded',
        );
      }
      throw error;
    }
    if (irreversible) steps.set(name, { state: 'done', result: stored, irreversible: true });
    if (!recorded) {
      // The task moved on (another attempt holds it, or it ended): this attempt must stop here.
      throw this.#isStopped ? this.#stopReason : new Error(`step ${name}: this attempt no longer holds the task`);
    }
    steps.set(name, { state: 'done', result: stored, irreversible });
    return stored;
  }

  /**
   * Answers the handler from the responses stored with the task, or parks the task for the
   * missing ones: the requests are written, the attempt ends (TaskParkedError) and the worker slot
   * frees; tasks/update queues the next run once every key is answered.
   */
  async #input(requests: Readonly<Record<string, InputRequest>>): Promise<Record<string, unknown>> {
    const answers = this.task.inputResponses;
    const missing = Object.keys(requests).filter((key) => !Object.hasOwn(answers, key));
    if (missing.length === 0) {
      return checkedAnswers(requests, Object.fromEntries(Object.keys(requests).map((key) => [key, answers[key]])));
    }
    await this.#checkpoint();
    const outstanding = Object.fromEntries(missing.map((key) => [key, requests[key] as InputRequest]));
    if (this.#store.ask) {
      // Asked and answered within the call: nothing parks, the handler goes on with the answers.
      let got: Readonly<Record<string, unknown>>;
      try {
        got = await this.#store.ask(outstanding, this.#scope.signal);
      } catch (error) {
        throw this.#isStopped ? this.#stopReason : error;
      }
      return checkedAnswers(
        requests,
        Object.fromEntries(
          Object.keys(requests).map((key) => [key, Object.hasOwn(answers, key) ? answers[key] : got[key]]),
        ),
      );
    }
    await this.#flushProgress();
    const parked = await this.#store.park(
      outstanding,
      `waiting for input: ${missing.join(', ')}`,
      this.#unstoredProgress(),
    );

    if (parked) {
      this.#parked = true;
      throw new TaskParkedError(missing);
    }
    // Not parked: a cancel was requested first (or the attempt was superseded).
    const state = await this.#store.readCancelState();
    if (state?.cancelRequested) this.cancel('input found the flag');
    throw this.#isStopped ? this.#stopReason : new Error('the task moved on');
  }

  async #checkpoint(): Promise<void> {
    if (this.#isStopped) throw this.#stopReason;
    if (this.#releaseRequested !== null) this.release(this.#releaseRequested);
    if (this.#isStopped) throw this.#stopReason;
    const now = this.#settings.now();
    if (this.#flagRead === null && now - this.#lastFlagReadAt >= this.#settings.checkpointReadIntervalMs) {
      this.#lastFlagReadAt = now;
      const read = this.#store
        .peekCancelState()
        .then(
          (state) => {
            if (state?.cancelRequested) this.cancel('checkpoint read the flag');
          },
          // Not the handler's failure (the store logs it): the flag is read again at a later
          // checkpoint, the watcher polls it, and the final commit reads it under the row lock.
          () => {},
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
    if (this.#isStopped) throw this.#stopReason;
  }

  #progress(value: number, total?: number, message?: string): void {
    if (this.#isStopped) return;
    if (
      !Number.isFinite(value) ||
      (total !== undefined && !Number.isFinite(total)) ||
      (message !== undefined && typeof message !== 'string')
    ) {
      // Ignored, as a value that does not increase is; said once, since only the author can fix it.
      if (!this.#warnedProgress) {
        this.#warnedProgress = true;
        this.#settings.logger.warn(
          { taskId: this.task.id, tool: this.task.tool, value: String(value), total: String(total) },
          'ctx.progress ignored a call: value and total must be finite numbers and message a string',
        );
      }
      return;
    }
    if (value <= this.#highestProgress) return;
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
    this.#queuedProgress = update;
    // Chained, so writes land in the order they were made and the last one wins.
    this.#progressWrites = this.#progressWrites
      .then(() => this.#store.recordProgress({ value: update.progress, total: update.total, message: update.message }))
      .then((stored) => {
        if (stored) this.#writtenProgress = update;
      })
      // Progress is replaceable: a lost write is superseded by the next one (the store logs it).
      .catch(() => {});
  }

  #armDeadline(): void {
    clearTimeout(this.#deadlineTimer);
    // Progress from what the handler left running does not restart a clock it has outrun.
    if (this.#handlerExited) return;
    const next = this.#deadline.next();
    if (!next) return;
    this.#deadlineTimer = setTimeout(() => void this.#onDeadline(), Math.max(0, next.at - this.#settings.now()));
  }

  async #onDeadline(): Promise<void> {
    // A parked task waits for its client, not for this attempt's clocks; a handler that returned
    // or threw has decided the outcome (#runHandler clears the timer; this holds if it did not).
    if (this.#parked || this.#handlerExited) return;
    const expiry = this.#deadline.expired(this.#settings.now());
    if (!expiry) return this.#armDeadline();
    // This attempt's max clock is what was left of the task's (it runs from the first start, across
    // attempts); the limit that ran out is the task's own.
    const limitMs = expiry.clock === 'max' ? (this.task.maxTimeoutMs ?? expiry.limitMs) : expiry.limitMs;
    const timeout = new TaskTimeoutError(expiry.clock, limitMs);
    if (this.#isStopped) return;
    this.#stopped(expiry.clock === 'idle' ? 'idle_clock' : 'max_clock');
    this.#abort(timeout);
    const failed: RunOutcome = {
      status: 'failed',
      error: {
        code: REQUEST_TIMEOUT,
        message: timeout.message,
        data: { clock: expiry.clock, limitMs },
      },
      statusMessage: timeout.message,
      reason: `timeout:${expiry.clock}`,
    };
    // The handler's final commit is under way (held up by an outage or a lock, say): its outcome
    // stands if it completes. The stop still reaches what honours ctx.signal inside it, so a
    // commit stuck on such work ends; only then does the task fail by the clock (#commit).
    if (this.#committing) {
      this.#timeoutAfterCommit = failed;
      return;
    }
    // The task fails at the deadline, not when the handler gets round to noticing.
    await this.#writeTimeout(failed);
  }

  #writeTimeout(failed: RunOutcome): Promise<unknown> {
    this.#timeoutWrite = this.#finish(failed).catch((error: Error) =>
      this.#settings.logger.warn({ taskId: this.task.id, error: error.message }, 'timeout write failed'),
    );
    return this.#timeoutWrite;
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
    const completed = await this.#store.complete(result, 'handler returned', this.#unstoredProgress());
    if (completed) {
      this.#committed = true;
      this.#endStatus = 'completed';
      return;
    }
    // Not completed: a cancel came first, or something else ended the attempt (or an earlier try
    // of this very completion committed and lost its answer). Which one?
    const state = await this.#store.readCancelState();
    if (state && state.attempt === this.task.attempt && !isTerminalStatus(state.status) && state.cancelRequested) {
      this.#cancelled(state.cancelReason, 'final commit found the flag');
      throw this.#stopReason;
    }
    // Superseded: a clock or a newer attempt ended this one first; nothing more to write.
    this.#committed = true;
    throw this.#isStopped ? this.#stopReason : new Error(`task is already ${state?.status}`);
  }

  /**
   * The final commit is the last checkpoint: lock the task row, and only if no cancel was requested
   * run the effects and complete the task, all in one transaction.
   */
  async #commit(effects: (tx: CommitContext<unknown>) => Promise<ToolResult>, reason: string): Promise<ToolResult> {
    if (this.#committed) throw new Error('the task was already committed; commit runs once');
    await this.#flushProgress();
    if (this.#isStopped && !(this.#stopReason instanceof TaskCancelledError)) {
      throw this.#stopReason;
    }
    // ctx.commit's transaction decides the outcome as a handler's return does: a clock that runs
    // out while it is held up (an outage, a lock) must not race it with a failure once the
    // database is back. The clock's failure is written only if the commit did not complete.
    let outcome: CommitOutcome | undefined;
    this.#committing = true;
    try {
      // Checked inside the transaction: an invalid result rolls the effects back with it.
      outcome = await this.#store.commit(
        async (tx) => this.#checked(await effects(tx)),
        reason,
        this.#unstoredProgress(),
      );
    } finally {
      this.#committing = false;
      const timedOut = this.#timeoutAfterCommit;
      this.#timeoutAfterCommit = null;
      if (timedOut !== null && outcome?.kind !== 'completed') await this.#writeTimeout(timedOut);
    }

    if (outcome.kind === 'completed') {
      this.#committed = true;
      this.#committedResult = outcome.result;
      this.#endStatus = 'completed';
      return outcome.result;
    }
    if (outcome.kind === 'cancel-requested') {
      this.#cancelled(outcome.reason, 'final commit found the flag');
      throw this.#stopReason;
    }
    // Superseded: a clock or a newer attempt ended this one first.
    this.#committed = true;
    throw this.#isStopped ? this.#stopReason : new Error(`task is already ${outcome.status}`);
  }

  /** The result, if it is one a client can take; else the task fails, naming what is wrong. */
  #checked(result: ToolResult): ToolResult {
    const problem = this.#settings.resultProblem?.(result) ?? null;
    if (problem !== null) throw new Error(`tool ${this.task.tool} returned an invalid result: ${problem}`);
    return result;
  }

  #guardCommit(): void {
    if (this.#committed) throw new Error('the task was already committed; commit runs once');
    // A clock or a release ends the attempt; only a cancel still goes to the final commit, which
    // then finds the flag and ends the task cancelled.
    if (this.#isStopped && !(this.#stopReason instanceof TaskCancelledError)) {
      throw this.#stopReason;
    }
  }

  /** The last progress a rate limit held back is written before the terminal state, never after. */
  async #flushProgress(): Promise<void> {
    const latest = this.#latestProgress;
    if (!latest) return;
    if (latest.progress !== this.#queuedProgress?.progress) this.#writeProgress(latest);
    await this.#progressWrites;
  }

  /**
   * The last progress when no write stored it (its write failed: an outage drops progress writes).
   * The decided write that follows carries it, and is retried with it until it lands, so a task
   * never ends showing an older value than its handler reported.
   */
  #unstoredProgress(): RunProgress | undefined {
    const latest = this.#latestProgress;
    if (!latest || latest.progress === this.#writtenProgress?.progress) return undefined;
    return { value: latest.progress, total: latest.total, message: latest.message };
  }

  #cancelled(reason: string | null, how: string): void {
    this.#cancelSeenHow ??= how;
    if (this.#isStopped) return;
    this.#stopped(null);
    this.#abort(new TaskCancelledError(reason));
  }

  async #settleFailure(thrown: unknown): Promise<void> {
    // A handler that stops because of the signal often throws an AbortError of its own; the
    // signal's reason says why.
    const error = this.#isStopped ? this.#stopReason : thrown;
    if (error instanceof TaskTimeoutError) return; // failed at the deadline already
    if (this.#committed) {
      // Superseded at the final commit (nothing to say), or the handler threw after its own commit
      // (a second ctx.commit, say): the task completed already, and keeps that result.
      if (this.#committedResult !== null) {
        this.#settings.logger.warn(
          { taskId: this.task.id, tool: this.task.tool, error: error instanceof Error ? error.message : String(error) },
          'the handler threw after its ctx.commit completed the task; the task keeps the committed result',
        );
      }
      return;
    }
    if (this.#parked) return; // input_required: the answer queues the next run
    if (error instanceof TaskReleasedError) {
      if (await this.#store.release(error.message)) {
        this.#settings.logger.info(
          { taskId: this.task.id, tool: this.task.tool, attempt: this.task.attempt },
          'task handed back for another worker to run',
        );
        throw error;
      }
      // Not handed back: a cancel was asked for first (nobody is to run it again), or another
      // attempt or a clock ended this one.
      const state = await this.#store.readCancelState();
      if (state?.attempt !== this.task.attempt || isTerminalStatus(state.status) || !state.cancelRequested) throw error;
      await this.#store.recordCancelObserved('at the hand-back');
      await this.#finish({
        status: 'cancelled',
        statusMessage: state.cancelReason ? `task cancelled: ${state.cancelReason}` : 'task cancelled',
        reason: 'cancel observed: at the hand-back',
      });
      return;
    }
    if (error instanceof TaskCancelledError) {
      const how = this.#cancelSeenHow ?? 'handler stopped';
      await this.#store.recordCancelObserved(how);
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

  async #finish(outcome: RunOutcome): Promise<boolean> {
    const progress = this.#unstoredProgress();
    const finished = await this.#store.finish(progress === undefined ? outcome : { ...outcome, progress });
    if (finished) this.#endStatus = outcome.status;
    return finished;
  }
}

/**
 * The answers, once each is found to answer its request (inputAnswersProblem): a handler never gets
 * an elicitation's content that its requestedSchema refuses, whichever way the answer came (a
 * tasks/update, a multi round-trip retry, a response on the call's stream). One that does not
 * fails the call with -32602 naming the key, as arguments that do not match a tool's schema do.
 */
function checkedAnswers(
  requests: Readonly<Record<string, InputRequest>>,
  answers: Record<string, unknown>,
): Record<string, unknown> {
  const found = inputAnswersProblem(requests, answers);
  if (found !== null) {
    throw new ToolProtocolError(INVALID_PARAMS, `the client's answer to input ${found.key} ${found.problem}`, {
      code: 'TG_INPUT_RESPONSES_INVALID',
      key: found.key,
    });
  }
  return answers;
}

/** Whether ctx.step's options mark the step irreversible (a wrong type is refused, not coerced). */
function stepIrreversible(options: unknown): boolean {
  if (options === undefined) return false;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError('ctx.step options must be an object such as { irreversible: true }');
  }
  const { irreversible } = options as { irreversible?: unknown };
  if (irreversible !== undefined && typeof irreversible !== 'boolean') {
    throw new TypeError('ctx.step options.irreversible must be a boolean');
  }
  return irreversible === true;
}

/** The reason of what a run left behind when it ended on its own (returned or threw). */
class RunEndedError extends Error {
  constructor() {
    super('the handler has ended: what it left running is stopped');
    this.name = 'RunEndedError';
  }
}

/**
 * One for every run: it says only that the run ended. An Error made per run (its stack captured
 * at the end of an async handler) was 12% of an inline tools/call's CPU time.
 */
const RUN_ENDED = new RunEndedError();
