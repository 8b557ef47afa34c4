import { randomBytes } from 'node:crypto';
import type { TaskNotification, TaskProgress, TaskRecord } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { ErrorCode, logLevelPasses } from '@taskgate/protocol';
import { cancelSignalOf, isTerminalStatus } from '@taskgate/reliability';
import { type InputRequest, ToolProtocolError } from '@taskgate/sdk';
import type { AnyTool, ToolCatalog } from '@taskgate/tools';
import { isUnavailable } from '../../http/failures.ts';
import type { ClockCaps, TaskService } from '../../tasks/task-service.ts';
import { type CreateTaskInput, cappedClocks } from '../../tasks/task-service.ts';
import type { TaskWatcher } from '../../tasks/task-watch.ts';
import { type MethodOutcome, missingCapability, refusal } from '../core/outcomes.ts';
import type { RequestContext } from '../core/request-context.ts';
import type { ServerIdentity } from '../core/server-info.ts';
import { ServerStopping } from '../core/server-stopping.ts';
import { shareResult } from '../core/shared-results.ts';
import { callOutcome, readCallParams, withServerInfo } from './call-results.ts';
import { runInline } from './inline-call.ts';
import { RequestStateSealer } from './request-state.ts';
import { ClientCapabilityMissing, clientAsker, type Round, RoundTrips } from './round-trips.ts';
import { TaskLogRelay } from './task-log-relay.ts';
import { createTaskResult } from './task-results.ts';
import { elicitationCompleter } from './url-elicitations.ts';

export const DEFAULT_TASK_AFTER_MS = 500;
/** A parked request's task waits this long past its request state's expiry before it is cancelled. */
export const PARKED_INPUT_GRACE_MS = 60_000;

/** What the tools/call of every revision needs of the server (McpCoreOptions adds the rest). */
export interface CallRunnerOptions {
  readonly service: TaskService;
  /**
   * The tools offered (the catalog, in a deployment). An inline tool runs in this process only
   * when `tools.local()` has its handler (its module is loaded here); otherwise its calls go to a
   * worker as durable tasks, like any other tool's.
   */
  readonly tools: ToolCatalog;
  readonly server: ServerIdentity;
  /**
   * The key that signs requestState (multi round-trip requests): the same on every instance a
   * retry may reach (TaskServices reads it from Postgres). Absent: a random key of this process.
   */
  readonly requestStateKey?: Buffer;
  /** The floor under NOTIFY while a call waits for its task. */
  readonly pollMs: number;
  /** The server's ceiling on tools' clocks (inline calls; durable ones get it from TaskService). */
  readonly clockCaps?: ClockCaps;
  /**
   * For a client that declared the Tasks extension: a call of a task-optional tool still running
   * after this long is answered with a CreateTaskResult instead (default 500 ms).
   */
  readonly taskAfterMs?: number;
  /** Where an inline handler's failures are logged (default: nowhere). */
  readonly logger?: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
}

type LogFn = (fields: Record<string, unknown>, message: string) => void;
const SILENT: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn } = {
  info: () => {},
  warn: () => {},
  debug: () => {},
};

/**
 * What every revision's tools/call shares, whatever it does first: running an inline tool,
 * submitting a task, waiting for it (with a hand-over threshold), and results made once per
 * version of the tool offer. The revisions' method tables call these; none of them branches on a
 * revision.
 */
export class CallRunner {
  readonly options: CallRunnerOptions;
  /** Multi round-trip requests, for the revisions that have them. */
  readonly rounds: RoundTrips;
  readonly #watcher: TaskWatcher;
  readonly #lists = new Map<object, { readonly version: string; readonly outcome: MethodOutcome }>();

  constructor(options: CallRunnerOptions, watcher: TaskWatcher) {
    this.options = options;
    this.#watcher = watcher;
    // Without a shared key (tests, a lone process), one of this process's own: its states are
    // good here until it restarts.
    this.rounds = new RoundTrips(new RequestStateSealer({ key: options.requestStateKey ?? randomBytes(32) }));
  }

  /**
   * params.name and params.arguments, checked, and the tool they name (undefined: not offered,
   * which the task's submission refuses with the catalog's error).
   */
  readCall(params: Readonly<Record<string, unknown>> | undefined) {
    const call = readCallParams(params);
    if ('code' in call) return { kind: 'error', httpStatus: 200, error: call } as const;
    return { kind: 'call', call, tool: this.options.tools.get(call.name) } as const;
  }

  /**
   * A result built from the tool offer and shared until the offer changes (tools.version): built
   * and serialised once per change, per `owner` (each revision shapes its own list).
   */
  sharedList(owner: object, build: () => Record<string, unknown>): MethodOutcome {
    const version = this.options.tools.version;
    const cached = this.#lists.get(owner);
    if (cached?.version === version) return cached.outcome;
    const outcome: MethodOutcome = { kind: 'result', result: shareResult(build()) };
    this.#lists.set(owner, { version, outcome });
    return outcome;
  }

  /**
   * An inline tool's call. With `round` (a revision with multi round-trip requests), ctx.input()
   * of a key not yet answered ends the call input_required; without one it fails the call.
   */
  async inline(
    tool: AnyTool,
    args: Record<string, unknown>,
    context: RequestContext,
    round?: Round,
  ): Promise<MethodOutcome | null> {
    const check = this.options.tools.check(tool.name, args);
    if (!check.ok) {
      return refusal(
        new TaskgateError(
          'TG_TOOL_ARGUMENTS_INVALID',
          `the arguments do not match the input schema of ${tool.name}`,
          check.kind === 'invalid-arguments' ? { details: { errors: check.problems } } : {},
        ),
      );
    }
    const clocks = cappedClocks(tool, this.options.clockCaps);
    // Every field named, none spread (a spread copies property by property on every call).
    const outcome = await runInline(tool, args, {
      tenantId: context.tenantId,
      signal: context.signal,
      limits: { idleMs: clocks.idleTimeoutMs, maxMs: clocks.maxTimeoutMs },
      resultProblem: (result) => this.options.tools.resultProblem(tool.name, result),
      logger: this.options.logger ?? SILENT,
      onProgress: context.onProgress,
      rounds: round ? { answers: round.answers } : undefined,
      askClient: round || !context.askClient ? undefined : inlineAsker(clientAsker(context, `tool ${tool.name}`)),
      onLog: (entry) => {
        if (!logLevelPasses(entry.level, context.logLevel)) return;
        context.onLog?.({ jsonrpc: '2.0', method: 'notifications/message', params: { ...entry } });
      },
      // Only where the revision has the notification (2026-07-28's client learns by retrying).
      onElicitationComplete: elicitationCompleter(context),
      clientCapabilities: context.clientCapabilities,
    });
    if (outcome === null || 'kind' in outcome) return outcome;
    if ('asked' in outcome) return this.rounds.ask(round as Round, outcome.asked, context, `tool ${tool.name}`);
    return {
      kind: 'result',
      result: withServerInfo(outcome as unknown as Record<string, unknown>, this.options.server),
    };
  }

  /**
   * The call's task, or the refusal a caller can act on (an unexpected failure propagates). A call
   * that will wait for its task (`awaited`) and whose request hears log messages has the task keep
   * its ctx.log() messages, for await() to send.
   */
  async submit(context: RequestContext, input: CreateTaskInput, awaited: boolean): Promise<TaskRecord | MethodOutcome> {
    const logLevel = awaited && context.onLog && context.logLevel ? context.logLevel : undefined;
    // The handler asks only for input the client can give (ctx.clientCapabilities), as inline.
    const capabilities = storedCapabilities(context.clientCapabilities);
    const submitted = {
      ...input,
      ...(logLevel ? { logLevel } : {}),
      ...(capabilities ? { clientCapabilities: capabilities } : {}),
    };
    try {
      return (await this.options.service.submit(context.tenantId, submitted)).task;
    } catch (error) {
      const outcome = refusal(error);
      if (outcome.kind === 'error' && outcome.error.code === ErrorCode.InternalError) throw error;
      return outcome;
    }
  }

  /**
   * A multi round-trip retry whose state names a durable task parked for input: the answers go to
   * that task (a bad one is refused, and the task goes on waiting for a good one), and the call
   * waits on it again, as the first request did.
   */
  async resume(round: Round & { readonly task: string }, context: RequestContext): Promise<MethodOutcome | null> {
    const { service } = this.options;
    // The task's adoptions once this request adopted it: the fence of this request's own cancel,
    // so that a cancel of it retried late cannot end the task for a newer retry.
    let adoptions: number | null = null;
    try {
      // This request waits on the task now: it is this instance's, lost with it, and no longer
      // bound by the input deadline its parking set (detached again below if it stays parked
      // with nobody waiting: a refused answer, a failure).
      adoptions = await service.adoptParked(context.tenantId, round.task);
      let task = await service.get(context.tenantId, round.task);
      // Ended while parked (its input deadline passed, its instance was lost): the state names
      // a call that is over, and the client starts again.
      if (task.status === 'cancelled') return endedState(task);
      if (task.status === 'input_required' && Object.keys(round.answers).length > 0) {
        task = (await service.answerInput(context.tenantId, task.id, round.answers)).task;
      }
      // Read at once: a task answered in part is still parked, and no notification will say so.
      return await this.await(task, context, null, round, adoptions ?? 0);
    } catch (error) {
      if (adoptions !== null) {
        // Nobody waits on the task now: parked again for a later retry, or ended with a request
        // that was cancelled.
        if (!context.signal.aborted) await this.#detach(round.task, context);
        else {
          await service.cancelAbandoned(
            context.tenantId,
            round.task,
            'its request was cancelled',
            context.log,
            adoptions,
            cancelSignalOf(context.signal.reason),
          );
        }
      }
      // An outage is the transport's to answer (503 and Retry-After over HTTP).
      if (isUnavailable(error)) throw error;
      const outcome = refusal(error);
      if (outcome.kind === 'error' && outcome.error.code === ErrorCode.InternalError) throw error;
      return outcome;
    }
  }

  /**
   * Waits for the call's task. With `handOverAfterMs`, a task still running then is answered with
   * its CreateTaskResult (the client polls it from there). A request cancelled before any answer
   * cancels the task: nobody else knows its id.
   *
   * With `round` (a multi round-trip request that is not a task's), a task that parks for input
   * its request cannot ask on a connection ends the request input_required, with a state naming
   * the task: the client's retry answers it (resume()). Until then the task waits, tied to no
   * instance, until its state has expired (#detach); a retry ties it to the retry's instance.
   */
  async await(
    task: TaskRecord,
    context: RequestContext,
    handOverAfterMs: number | null,
    round?: Round,
    adoptions: number | null = null,
  ): Promise<MethodOutcome | null> {
    const { service } = this.options;
    // Resumed by a retry that adopted the task (resume()), rather than the request that made it.
    const resumed = adoptions !== null;
    // Awaited before the request settles: a transport that ends (stdin closed, the process
    // stopping) waits for its requests, and so for their cancels to be written, before it lets
    // the worker drain. Unwritten, the worker would hand the task back instead of cancelling it.
    const cancel = async (why?: string) => {
      const reason =
        why ?? (context.signal.reason instanceof Error ? context.signal.reason.message : String(context.signal.reason));
      await service.cancelAbandoned(
        context.tenantId,
        task.id,
        reason,
        context.log,
        adoptions ?? 0,
        cancelSignalOf(context.signal.reason),
      );
    };
    if (context.signal.aborted) {
      await cancel();
      return null;
    }
    const handOver = new AbortController();
    const timer = handOverAfterMs === null ? undefined : setTimeout(() => handOver.abort(), handOverAfterMs);
    const inputs = this.#inputRelay(task, context);
    const parks = inputs || !round ? null : parkedFor();
    const signal = AbortSignal.any([
      context.signal,
      handOver.signal,
      ...(inputs ? [inputs.failed] : []),
      ...(parks ? [parks.parked] : []),
    ]);
    const logs = this.#logRelay(task, context);
    const progress = context.onProgress ? progressOf(context.onProgress, () => this.#watcher.connected) : null;
    const onChange =
      progress || logs || inputs || parks
        ? (reading: TaskRecord) => {
            progress?.reading(reading);
            logs?.seen(reading.logCount);
            inputs?.seen(reading, signal);
            parks?.seen(reading);
          }
        : null;
    try {
      const done = await this.#watcher.untilTerminal(context.tenantId, task.id, {
        pollMs: this.options.pollMs,
        signal,
        ...(onChange ? { onChange } : {}),
        // Parks and the input relay need only the status: a plain durable call wakes on no
        // progress or claim notification (the throughput path). A new task is not parked yet.
        ...(onChange && !progress && !logs ? { statusOnly: { readAtStart: resumed } } : {}),
        ...(progress ? { onNotification: progress.notified } : {}),
      });
      progress?.final(done);
      // The messages the handler logged before it ended go before the answer.
      await logs?.drain(done.logCount);
      return callOutcome(done, this.options.server);
    } catch (error) {
      if (parks?.parked.aborted && !context.signal.aborted && round) {
        // The messages logged before it parked go before the answer, as before a result.
        await logs?.drain(parks.logCount);
        const outcome = this.rounds.ask(round, parks.requests, context, `tool ${task.tool}`, task.id);
        // Asked what this client cannot answer: nobody else can answer the task, so it ends.
        if (outcome.kind === 'error') {
          await cancel(`its input could not be asked: ${outcome.error.message}`);
          return outcome;
        }
        const detached = await this.#detach(task.id, context);
        // Cancelled meanwhile (the answer would go nowhere), or not parked any more: the task
        // ends with the call, or is answered as it is now.
        if (context.signal.aborted) {
          await cancel();
          return null;
        }
        if (detached === 'failed') {
          // In an outage this cancel may fail too: it is retried until it lands (cancelAbandoned).
          await cancel('it could not be parked for the retry that would answer it');
          throw new TaskgateError('TG_SERVICE_UNAVAILABLE', 'the call could not wait for its input; call again', {
            details: { retryAfterSeconds: 1 },
          });
        }
        if (detached === 'gone') {
          const now = await service.get(context.tenantId, task.id);
          if (isTerminalStatus(now.status)) return callOutcome(now, this.options.server);
        }
        return outcome;
      }
      if (inputs?.failed.aborted && !context.signal.aborted) {
        // The client could not be asked, or answered what does not answer: nobody else knows the
        // task (the client has no Tasks of its own here), so it ends with the call.
        await cancel('its input could not be asked of the client');
        return inputs.outcome();
      }
      if (context.signal.aborted) {
        // A durable task outlives this server as it outlives a connection: the client gets it.
        if (handOverAfterMs !== null && context.signal.reason instanceof ServerStopping) {
          return { kind: 'result', result: createTaskResult(await service.get(context.tenantId, task.id)) };
        }
        await cancel();
        return null;
      }
      if (!handOver.signal.aborted) throw error;
      // Still running at the threshold: from here on the client polls the task.
      return { kind: 'result', result: createTaskResult(await service.get(context.tenantId, task.id)) };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The request ends input_required with its task parked: until the client's retry (through any
   * instance) adopts the task, it is no instance's — losing this one does not cancel it — and it is
   * cancelled once its state has expired and a grace period passed. Written before the answer is
   * sent, so a retry, which comes after it, cannot be overtaken. 'gone': the task was no longer
   * parked (it ended, or an overlapping retry answered it); 'failed': the write failed.
   */
  async #detach(taskId: string, context: RequestContext): Promise<'detached' | 'gone' | 'failed'> {
    const deadlineMs = this.rounds.stateTtlMs + PARKED_INPUT_GRACE_MS;
    try {
      return (await this.options.service.detachParked(context.tenantId, taskId, deadlineMs)) ? 'detached' : 'gone';
    } catch (error) {
      context.log?.({ taskId, error: (error as Error).message }, 'detaching a parked task from its request failed');
      return 'failed';
    }
  }

  /**
   * A handshake request's task asking for input (ctx.input() in a durable handler: the task goes
   * input_required): its requests are sent to the client on the request's own connection, as an
   * inline tool's are, and the answers given to the task, which runs on. Null where the request
   * cannot ask (2026-07-28, a sessionless POST): there the client answers through tasks/update.
   */
  #inputRelay(task: TaskRecord, context: RequestContext) {
    const ask = clientAsker(context, `tool ${task.tool}`);
    if (!ask) return null;
    const { service } = this.options;
    const failing = new AbortController();
    const asked = new Set<string>();
    let asking = false;
    let failure: unknown = null;
    return {
      failed: failing.signal,
      seen(reading: TaskRecord, signal: AbortSignal) {
        if (reading.status !== 'input_required' || asking) return;
        const answered = reading.inputResponses ?? {};
        const outstanding = Object.entries(reading.inputRequests ?? {}).filter(
          ([key]) => !asked.has(key) && !Object.hasOwn(answered, key),
        );
        if (outstanding.length === 0) return;
        for (const [key] of outstanding) asked.add(key);
        asking = true;
        void Promise.all(
          outstanding.map(async ([key, request]) => [key, await ask(request as InputRequest, signal)] as const),
        )
          .then((answers) => service.answerInput(context.tenantId, task.id, Object.fromEntries(answers)))
          .catch((error: unknown) => {
            if (signal.aborted) return;
            failure = error;
            failing.abort();
          })
          .finally(() => {
            asking = false;
          });
      },
      /** The call's answer once asking failed: the client's gap, a refused answer, or the failure. */
      outcome(): MethodOutcome {
        if (failure instanceof ClientCapabilityMissing) return missingCapability(failure.missing, failure.message);
        const outcome = refusal(failure);
        if (outcome.kind === 'error' && outcome.error.code === ErrorCode.InternalError) {
          context.log?.(
            { taskId: task.id, error: (failure as Error | null)?.message },
            "asking the client for a task's input failed",
          );
        }
        return outcome;
      },
    };
  }

  /**
   * The relay of a task's messages to its request: its log messages, when the task keeps them
   * for it, and its elicitation completions, when the request's client can hear them.
   */
  #logRelay(task: TaskRecord, context: RequestContext): TaskLogRelay | null {
    const { onLog, logLevel } = context;
    if (!onLog) return null;
    const level = logLevel && task.logLevel !== null ? logLevel : undefined;
    const completeElicitation = elicitationCompleter(context);
    if (!level && !completeElicitation) return null;
    const { service } = this.options;
    return new TaskLogRelay({
      read: (afterSeq, limit) => service.logMessages(context.tenantId, task.id, afterSeq, limit),
      send: onLog,
      ...(level ? { level } : {}),
      ...(completeElicitation ? { completeElicitation } : {}),
      ...(context.log ? { log: context.log } : {}),
    });
  }
}

/**
 * A retry whose state names a task cancelled while it was parked: the call it continues is over.
 * -32602, as for an expired state: the client sends the request again without requestState.
 */
function endedState(task: TaskRecord): MethodOutcome {
  return refusal(
    new TaskgateError(
      'TG_REQUEST_STATE_INVALID',
      `requestState names a call that has ended (${task.statusMessage ?? task.status}); call again without requestState`,
      { details: { problem: 'ended', taskId: task.id, status: task.status } },
    ),
  );
}

/**
 * An inline handler's asks on the connection. What its client did not declare (an elicitation mode,
 * sampling) ends the call -32021 naming the capability, as it does a durable task's, rather than
 * as the handler's failure (-32603).
 */
function inlineAsker(
  ask: ((request: InputRequest, signal: AbortSignal) => Promise<unknown>) | undefined,
): ((request: InputRequest, signal: AbortSignal) => Promise<unknown>) | undefined {
  if (!ask) return undefined;
  return (request, signal) =>
    ask(request, signal).catch((error: unknown) => {
      if (!(error instanceof ClientCapabilityMissing)) throw error;
      throw new ToolProtocolError(ErrorCode.MissingRequiredClientCapability, error.message, {
        requiredCapabilities: error.missing,
      });
    });
}

/**
 * The most of a client's declared capabilities a task keeps, as JSON text. Bounded here only: a
 * bound in the column would measure Postgres's own text of the jsonb (spaces after separators,
 * numbers written out in full), which a few bytes of JSON can exceed, and fail the insert.
 */
const MAX_STORED_CAPABILITIES_BYTES = 16 * 1024;
/** Input kinds a handler may ask for: what a task keeps of capabilities too large to keep whole. */
const INPUT_CAPABILITIES = ['elicitation', 'sampling', 'roots'] as const;

/**
 * What a task keeps of the client's capabilities: all of them, or, past the column's bound (a
 * client declaring kilobytes of extensions), which input kinds it declared. Undefined for none.
 */
function storedCapabilities(
  declared: Readonly<Record<string, unknown>> | undefined,
): Readonly<Record<string, unknown>> | undefined {
  if (!declared || Object.keys(declared).length === 0) return undefined;
  if (Buffer.byteLength(JSON.stringify(declared)) <= MAX_STORED_CAPABILITIES_BYTES) return declared;
  return Object.fromEntries(
    INPUT_CAPABILITIES.filter((kind) => Object.hasOwn(declared, kind)).map((kind) => [kind, {}]),
  );
}

/** Watches a task's readings for it parking with requests nobody has answered yet. */
function parkedFor() {
  const controller = new AbortController();
  const found = {
    parked: controller.signal,
    requests: {} as Record<string, InputRequest>,
    logCount: 0,
    seen(reading: TaskRecord) {
      if (controller.signal.aborted || reading.status !== 'input_required') return;
      const answered = reading.inputResponses ?? {};
      const outstanding = Object.entries(reading.inputRequests ?? {}).filter(([key]) => !Object.hasOwn(answered, key));
      if (outstanding.length === 0) return;
      found.requests = Object.fromEntries(outstanding) as Record<string, InputRequest>;
      found.logCount = reading.logCount;
      controller.abort();
    },
  };
  return found;
}

/**
 * A task's progress to strictly increasing values for its request. Notifications carry each value
 * the worker wrote, in the order written, so while the listener is connected every one is told; a
 * reading is a row read, which holds only the latest of the writes since the read before (it
 * would fold the values between, and may overtake notifications still on their way). So a
 * reading's progress is told only where notifications cannot tell it: with the listener down, and
 * in the two readings after a notification came without its value (too long for a payload) or the
 * listener reconnected — the read under way then may predate it, the one after it does not.
 * The first reading (what was written before the watch began) may come back after values written
 * since, whose notifications are on their way: while connected its value is held, dropped once a
 * notification reaches it, and told only at the end otherwise. The final reading is told last
 * (final()): a value whose notification was lost is told there at least.
 */
function progressOf(onProgress: (progress: TaskProgress) => void, connected: () => boolean) {
  let last = Number.NEGATIVE_INFINITY;
  let first = true;
  let owed = 0;
  let held: TaskProgress | null = null;
  const tell = (progress: TaskProgress | null | undefined) => {
    if (!progress || !(progress.value > last)) return;
    last = progress.value;
    onProgress(progress);
  };
  const release = () => {
    const value = held;
    held = null;
    tell(value);
  };
  return {
    reading(task: TaskRecord): void {
      if (first) {
        first = false;
        if (connected()) {
          held = task.progress;
          return;
        }
      } else if (owed > 0) owed -= 1;
      else if (connected()) return;
      tell(task.progress);
    },
    notified(notification: TaskNotification | null): void {
      if (notification?.progress) {
        if (held && notification.progress.value >= held.value) held = null;
        tell(notification.progress);
      } else if (notification === null || notification.event === 'progress') owed = 2;
    },
    final(task: TaskRecord): void {
      release();
      tell(task.progress);
    },
  };
}
