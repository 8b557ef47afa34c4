import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  CallToolResult,
  GetPromptResult,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import { META, progressOfTask, revisionInfo, TASKS_EXTENSION } from '@taskgate/protocol';
import { deterministicJitter, fingerprintInput, sha256Hex } from '@taskgate/reliability';
import { CallClocks, systemTimers, type Timers } from './call-clocks.ts';
import {
  type CallStop,
  callCancelled,
  callOutcomeUnknown,
  callTimedOut,
  serverRefusal,
  serverUnreachable,
} from './client-errors.ts';
import {
  type CorrelatedTransport,
  correlatedTransport,
  type HeldCall,
  type WireRequest,
} from './correlated-transport.ts';
import { type CorrelationStats, CorrelationTable } from './correlation-table.ts';
import { failureKind } from './failure-kind.ts';
import { GivenUpCancels } from './given-up-cancels.ts';
import type { ReconnectOptions } from './reconnect-schedule.ts';
import { type CallPolicy, callPolicyOf, decideRetry, type FailureKind, type RetryOptions } from './retry-plan.ts';
import {
  type HttpTarget,
  httpSession,
  type SdkRequestOptions,
  type SdkSession,
  type StdioTarget,
  stdioSession,
  v1Session,
} from './sdk-session.ts';
import { SUBSCRIPTION_ID, subscribeTasks, type TaskSubscription } from './task-subscription.ts';
import { getTask, ServerError, sleep, type TaskState, TERMINAL_STATUSES, watchTask } from './task-watch.ts';

export type { HttpTarget, StdioTarget };

export interface ClientOptions {
  readonly clientInfo?: { readonly name: string; readonly version: string };
  /** How long `initialize` may take (default 30 s); on expiry the connection is closed, never cancelled. */
  readonly connectTimeoutMs?: number;
  /** How long an abandoned request id is remembered to drop its late response (default 60 s). */
  readonly tombstoneMs?: number;
  /** Clocks and timers (tests move time themselves). */
  readonly timers?: Timers;
  /** Seen on the wire: a late response dropped, a response to no request of ours. */
  readonly onLateResponse?: (method: string) => void;
  readonly onUnknownResponse?: (message: unknown) => void;
  /** What the SDK client reports and cannot throw (a message it could not handle, a failed send). */
  readonly onError?: (error: Error) => void;
  /** Seeds the retry and reconnect jitter (with the attempt), so delays can be replayed. */
  readonly clientId?: string;
  /** A call is about to be retried. */
  readonly onRetry?: (retry: { tool: string; attempt: number; delayMs: number; failure: FailureKind }) => void;
  /**
   * How long close() waits for the cancels still on their way (a given-up task's tasks/cancel, a
   * session's notifications/cancelled POST) before it closes the connection (default 5 s). A
   * tasks/cancel not answered by then, or refused, goes to onError (TG_TASK_CANCEL_UNCONFIRMED).
   */
  readonly closeCancelsMs?: number;
}

export interface Progress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

export interface CallOptions {
  /** Cancels the call: the waiter settles at once, the transport's cancel goes out. */
  readonly signal?: AbortSignal;
  /** Longest stretch without progress (default 60 s). Only progress resets it. */
  readonly idleMs?: number;
  /** Longest call in all (default 10 min). Nothing resets it. */
  readonly maxMs?: number;
  readonly onProgress?: (progress: Progress) => void;
}

export interface CallToolOptions extends CallOptions {
  /**
   * The call became a task (the server answered with one, the Tasks extension): called with it,
   * then with every state its polls see. Keep the id to look it up, or to cancel it (cancelTask).
   */
  readonly onTask?: (task: TaskState) => void;
  /** The key of a conditional tool's call (default: one the client makes, the same on every attempt). */
  readonly idempotencyKey?: string;
  /** Overrides what the server lists for the tool. */
  readonly policy?: CallPolicy;
  /**
   * On a 2025-11-25 connection, send the call as a task (it outlives the connection; its result is
   * fetched with tasks/result). A tool whose taskSupport is `required` always is. On a per-request
   * revision the server decides.
   */
  readonly asTask?: boolean;
  readonly retry?: RetryOptions;
}

export const DEFAULT_IDLE_MS = 60_000;
export const DEFAULT_MAX_MS = 600_000;
export const DEFAULT_CLOSE_CANCELS_MS = 5_000;
/** Our clocks are the call's; the SDK's own timeout is set past any of them. */
const SDK_NO_TIMEOUT = 2_147_483_647;

/**
 * An MCP client that gets the client's half of reliability right, on the official SDK client:
 * the SDK speaks the wire, and this adds the correlation table (ids never reused, late answers
 * dropped silently), the two clocks per call, and cancels that go out as the transport wants
 * them (stdio: `notifications/cancelled`; `initialize` is never cancelled).
 */
export class TaskgateClient {
  readonly #sdk: SdkSession;
  readonly #table: CorrelationTable<WireRequest>;
  readonly #timers: Timers;
  readonly #random: (attempt: number) => number;
  readonly #onRetry: ClientOptions['onRetry'];
  #policies: Map<string, CallPolicy> | null = null;
  #taskSupport: Map<string, string | undefined> | null = null;
  #raw: CorrelatedTransport | null = null;
  /** The client's own subscriptions, by the wire id their notifications name. */
  readonly #subscriptions = new Map<unknown, (message: Record<string, unknown>) => void>();
  readonly #clientId: string | undefined;
  readonly #clientInfo: { readonly name: string; readonly version: string };
  /** Given-up tasks' tasks/cancel, judged as they are answered: close() delivers them first. */
  readonly #cancels: GivenUpCancels;
  readonly #closeCancelsMs: number;

  private constructor(sdk: SdkSession, table: CorrelationTable<WireRequest>, timers: Timers, options: ClientOptions) {
    this.#sdk = sdk;
    this.#table = table;
    this.#timers = timers;
    const seed = options.clientId;
    this.#clientId = seed;
    // Full jitter from the client id and the attempt when given (a test, a replay gets the same
    // delays), else Math.random.
    this.#random = seed === undefined ? () => Math.random() : (attempt) => deterministicJitter(seed, attempt);
    this.#onRetry = options.onRetry;
    this.#clientInfo = clientInfoOf(options);
    this.#closeCancelsMs = options.closeCancelsMs ?? DEFAULT_CLOSE_CANCELS_MS;
    this.#cancels = new GivenUpCancels(this.#rawRequest, timers, (error) => options.onError?.(error));
  }

  /** Starts the server as a subprocess and completes `initialize` on its stdin and stdout. */
  static connectStdio(target: StdioTarget, options: ClientOptions = {}): Promise<TaskgateClient> {
    return TaskgateClient.#connect(stdioSession(target, clientInfoOf(options)), options);
  }

  /** Connects over Streamable HTTP, negotiating the revision (HttpTarget.revision). */
  static async connectHttp(target: HttpTarget, options: ClientOptions = {}): Promise<TaskgateClient> {
    try {
      return await TaskgateClient.#connect(httpSession(target, clientInfoOf(options)), options);
    } catch (error) {
      throw isTaskgateError(error) ? error : serverUnreachable(target.url, error);
    }
  }

  /** Over a transport made elsewhere (an in-memory pair, a socket): the same client on top. */
  static connectTransport(transport: Transport, options: ClientOptions = {}): Promise<TaskgateClient> {
    return TaskgateClient.#connect(v1Session(transport, clientInfoOf(options)), options);
  }

  static async #connect(sdk: SdkSession, options: ClientOptions): Promise<TaskgateClient> {
    const timers = options.timers ?? systemTimers;
    const table = new CorrelationTable<WireRequest>({
      now: timers.now,
      ...(options.tombstoneMs !== undefined ? { tombstoneMs: options.tombstoneMs } : {}),
    });
    if (options.onError) sdk.onError(options.onError);
    let self: TaskgateClient | null = null;
    let raw: CorrelatedTransport | null = null;
    const wrap = (transport: Transport) => {
      raw = correlatedTransport(transport, table, {
        late: (method) => options.onLateResponse?.(method),
        unknown: (message) => options.onUnknownResponse?.(message),
        contextOf: () => callContext.getStore(),
        augment: (message, context) => {
          const sent = message as { method?: string; params?: Record<string, unknown> };
          if (sent.method !== 'tools/call' || (context as CallContext).asTask !== true) return message;
          return { ...message, params: { ...sent.params, task: {} } } as typeof message;
        },
        notification: (message) => {
          const id = (message.params as { _meta?: Record<string, unknown> } | undefined)?._meta?.[SUBSCRIPTION_ID];
          const handler = self === null ? undefined : self.#subscriptions.get(id);
          if (handler === undefined) return false;
          handler(message);
          return true;
        },
        taskAnswer: (held) => {
          if (self !== null) self.#followTask(held);
        },
        // In arrival order: a call's last progress comes just before its result.
        progress: (context, update) => (context as CallContext).progress(update),
      });
      return raw.transport;
    };
    try {
      // The SDK's own timeout for initialize would send a cancel (the wire drops it); the
      // connection is closed instead, as the spec says for an initialize that takes too long.
      await sdk.connect(wrap, options.connectTimeoutMs ?? 30_000);
    } catch (error) {
      await sdk.close().catch(() => {});
      throw error;
    }
    self = new TaskgateClient(sdk, table, timers, options);
    self.#raw = raw;
    return self;
  }

  /** What the server said of itself in `initialize`. */
  get server() {
    return {
      info: this.#sdk.serverInfo,
      capabilities: this.#sdk.capabilities,
      protocolVersion: this.#sdk.protocolVersion,
    };
  }

  /** The correlation table's counts: waiting requests, tombstones, late and unknown responses dropped. */
  get stats(): CorrelationStats {
    return this.#table.stats;
  }

  async listTools(options: CallOptions = {}): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#withClocks('tools/list', options, (sdkOptions) =>
        this.#sdk.listTools(cursor, sdkOptions),
      );
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /** prompts/list, every page, under the request's clocks and signal. */
  async listPrompts(options: CallOptions = {}): Promise<Prompt[]> {
    return this.#allPages(
      'prompts/list',
      options,
      (cursor, sdkOptions) => this.#sdk.listPrompts(cursor, sdkOptions),
      'prompts',
    );
  }

  /** prompts/get: the prompt's messages for `args` (every argument a string, as MCP has them). */
  async getPrompt(
    name: string,
    args: Readonly<Record<string, string>> = {},
    options: CallOptions = {},
  ): Promise<GetPromptResult> {
    return this.#withClocks('prompts/get', options, (sdkOptions) => this.#sdk.getPrompt(name, { ...args }, sdkOptions));
  }

  /** resources/list, every page. */
  async listResources(options: CallOptions = {}): Promise<Resource[]> {
    return this.#allPages(
      'resources/list',
      options,
      (cursor, sdkOptions) => this.#sdk.listResources(cursor, sdkOptions),
      'resources',
    );
  }

  /** resources/templates/list, every page. */
  async listResourceTemplates(options: CallOptions = {}): Promise<ResourceTemplate[]> {
    return this.#allPages(
      'resources/templates/list',
      options,
      (cursor, sdkOptions) => this.#sdk.listResourceTemplates(cursor, sdkOptions),
      'resourceTemplates',
    );
  }

  /** resources/read: the resource's contents (a task's, `taskgate://tasks/{id}`, or a module's). */
  async readResource(uri: string, options: CallOptions = {}): Promise<ReadResourceResult> {
    return this.#withClocks('resources/read', options, (sdkOptions) => this.#sdk.readResource(uri, sdkOptions));
  }

  /** Every page of a list, each page a request of its own under the clocks. */
  async #allPages<K extends string, T>(
    method: string,
    options: CallOptions,
    page: (
      cursor: string | undefined,
      sdkOptions: SdkRequestOptions,
    ) => Promise<{ [key in K]: T[] } & { nextCursor?: string }>,
    key: K,
  ): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const got = await this.#withClocks(method, options, (sdkOptions) => page(cursor, sdkOptions));
      items.push(...got[key]);
      cursor = got.nextCursor;
    } while (cursor !== undefined);
    return items;
  }

  /**
   * tools/call, with the call's clocks, its cancel and the retry matrix. A tool error is a result
   * (`isError`), not a throw. A call whose answer was lost is repeated only as its tool allows
   * (retry-plan.ts): a safe tool with a new id; a conditional one with the same idempotency key
   * and arguments — the client makes the key when the caller gave none; an unsafe one never, the
   * caller gets TG_CALL_OUTCOME_UNKNOWN with a handle to look it up. The max clock is the call's,
   * shared by every attempt (a retry never resets it); the idle clock restarts with each.
   */
  async callTool(name: string, args: Record<string, unknown>, options: CallToolOptions = {}): Promise<CallToolResult> {
    const policy = options.policy ?? (await this.policyOf(name, options));
    const callArgs =
      policy.retry === 'conditional' && policy.idempotencyKey !== 'none' && args.idempotencyKey === undefined
        ? { ...args, idempotencyKey: options.idempotencyKey ?? randomUUID() }
        : args;
    const key = typeof callArgs.idempotencyKey === 'string' ? callArgs.idempotencyKey : null;
    const asTask = await this.#callsAsTask(name, options);
    // Once one attempt's answer was lost, the call may have taken effect whatever later attempts
    // say: if none of them answers, the caller still gets the handle to look it up.
    let lost = false;
    // The max clock is the call's, not an attempt's: retries share it.
    const startedAt = this.#timers.now();
    const maxMs = options.maxMs ?? DEFAULT_MAX_MS;
    const unknown = (attempts: number, why: string) =>
      callOutcomeUnknown(
        {
          tool: name,
          idempotencyKey: key,
          argumentsFingerprint: sha256Hex(fingerprintInput(name, callArgs)),
          attempts,
          retryClass: policy.retry,
        },
        why,
      );
    for (let attempt = 0; ; attempt += 1) {
      let context: CallContext | null = null;
      try {
        return await this.#withClocks(
          'tools/call',
          options,
          (sdkOptions, progress) => {
            context = {
              ...(options.onTask ? { onTask: options.onTask } : {}),
              progress,
              asTask,
              followed: null,
              ended: null,
            };
            return callContext.run(context, () => this.#sdk.callTool(name, callArgs, sdkOptions));
          },
          startedAt,
          () => {
            const followed = context as CallContext | null;
            const taskId = followed?.followed;
            if (typeof taskId !== 'string') return { kind: 'request' };
            const ended = followed?.ended;
            return typeof ended === 'string' ? { kind: 'task', taskId, ended } : { kind: 'task', taskId };
          },
        );
      } catch (error) {
        const failure = failureKind(error);
        if (failure === 'outcome-unknown') lost = true;
        const decision = decideRetry(policy, failure, attempt, key !== null, options.retry ?? {}, () =>
          this.#random(attempt),
        );
        if (decision.retry && startedAt + maxMs - this.#timers.now() <= decision.delayMs) {
          // The wait alone would outlast the max clock: no attempt is left to make.
          if (!lost) throw error;
          throw unknown(attempt + 1, `the max clock (${maxMs} ms) runs out before another attempt`);
        }
        if (decision.retry) {
          this.#onRetry?.({ tool: name, attempt: attempt + 1, delayMs: decision.delayMs, failure });
          try {
            await this.#sleep(decision.delayMs, options.signal);
          } catch (cancelled) {
            if (!lost) throw cancelled;
            throw unknown(attempt + 1, 'cancelled while waiting to retry');
          }
          continue;
        }
        // After a lost attempt only an answer is final (the server's error for a later attempt
        // says what became of the call); an attempt that never reached it, or a cancel, says nothing.
        const answered = failure === 'final' && !isTaskgateError(error);
        if (!lost || answered) throw error;
        throw unknown(
          attempt + 1,
          decision.why === 'unsafe'
            ? 'the tool is unsafe'
            : decision.why === 'no-key'
              ? 'a conditional tool called without an idempotency key'
              : decision.why === 'attempts'
                ? 'no attempts left'
                : `then ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  }

  /** How a tool may be retried: what the server lists for it (fetched once), or unsafe if unlisted. */
  async policyOf(name: string, options: CallOptions = {}): Promise<CallPolicy> {
    if (this.#policies === null) {
      const tools = await this.listTools(options);
      this.#policies = new Map(tools.map((tool) => [tool.name, callPolicyOf(tool)]));
      this.#taskSupport = new Map(
        tools.map((tool) => [tool.name, (tool as { execution?: { taskSupport?: string } }).execution?.taskSupport]),
      );
    }
    return this.#policies.get(name) ?? { retry: 'unsafe', idempotencyKey: 'none', source: 'annotations' };
  }

  /**
   * Whether a call goes out task-augmented: only on a handshake-revision connection whose server
   * declares tasks for tools/call (2025-11-25), when the tool requires it or the caller asks. On a
   * per-request revision the server decides (the Tasks extension), so nothing is added.
   */
  async #callsAsTask(name: string, options: CallToolOptions): Promise<boolean> {
    const version = this.#sdk.protocolVersion;
    if (version === undefined || revisionInfo(version)?.kind === 'per-request') return false;
    const declared = (this.#sdk.capabilities as { tasks?: { requests?: { tools?: { call?: unknown } } } } | undefined)
      ?.tasks?.requests?.tools?.call;
    if (declared === undefined) return false;
    if (options.asTask === true) return true;
    await this.policyOf(name, options);
    return this.#taskSupport?.get(name) === 'required';
  }

  /** The retry's wait; the caller's cancel during it ends the call as a cancel. */
  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return sleep(this.#timers, ms, signal).catch((reason: unknown) => {
      throw callCancelled('tools/call', reason);
    });
  }

  /** tasks/get (the Tasks extension, on 2026-07-28). */
  async getTask(taskId: string): Promise<TaskState> {
    return getTask(this.#rawRequest, taskId);
  }

  /**
   * tasks/cancel: resolves with the server's acknowledgement, which only says the request was
   * taken — the task may still be working, and may even end `completed` if it finished first.
   * `terminal` resolves with the status it ends in (polled at the server's interval); nothing
   * before that says the work stopped.
   */
  async cancelTask(taskId: string, options: { readonly signal?: AbortSignal } = {}) {
    const response = await this.#rawRequest('tasks/cancel', { taskId });
    if (response.error !== undefined) throw new ServerError('tasks/cancel', response.error as Record<string, unknown>);
    const terminal = watchTask(this.#rawRequest, taskId, {
      timers: this.#timers,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    terminal.catch(() => {});
    return { acknowledged: true as const, terminal };
  }

  /**
   * Watches tasks over subscriptions/listen, reopening a dropped stream (a new request, the same
   * filter, full-jitter backoff) and refetching the tasks after every acknowledgement; `onTask`
   * sees each change of each task once (task-subscription.ts).
   */
  watchTasks(
    taskIds: readonly string[],
    options: {
      readonly onTask: (task: TaskState) => void;
      readonly onAcknowledged?: () => void;
      readonly reconnect?: ReconnectOptions;
    },
  ): TaskSubscription {
    const raw = this.#raw;
    if (raw === null) throw new Error('not connected');
    return subscribeTasks(
      {
        listen: async (ids, signal, onNotification) => {
          const envelope = this.#envelope('subscriptions/listen');
          const { id, answer } = raw.open(
            'subscriptions/listen',
            { notifications: { taskIds: ids }, _meta: envelope },
            { requestSignal: signal },
          );
          this.#subscriptions.set(id, onNotification);
          try {
            return await answer;
          } finally {
            this.#subscriptions.delete(id);
          }
        },
        getTask: (taskId) => getTask(this.#rawRequest, taskId),
      },
      taskIds,
      {
        onTask: options.onTask,
        ...(options.onAcknowledged ? { onAcknowledged: options.onAcknowledged } : {}),
        timers: this.#timers,
        reconnect: { ...(this.#clientId ? { clientId: this.#clientId } : {}), ...options.reconnect },
      },
    );
  }

  /**
   * Polls a task until it ends (at the server's interval), `onUpdate` seeing every state and
   * `onProgress` each rise of the progress the task holds (strictly increasing).
   */
  watchTask(
    taskId: string,
    options: {
      readonly signal?: AbortSignal;
      readonly onUpdate?: (task: TaskState) => void;
      readonly onProgress?: (progress: Progress) => void;
    } = {},
  ): Promise<TaskState> {
    const { onProgress, onUpdate, signal } = options;
    const rising = risingProgress((progress) => onProgress?.(progress));
    return watchTask(this.#rawRequest, taskId, {
      timers: this.#timers,
      ...(signal ? { signal } : {}),
      // Its progress first: the state after it may be the terminal one, the last word.
      onUpdate: (task) => {
        const progress = progressOfTask(task);
        if (progress !== null) rising(progress);
        onUpdate?.(task);
      },
    });
  }

  /**
   * Delivers the cancels still on their way — a given-up task's tasks/cancel, a session's
   * notifications/cancelled — waiting for them at most `closeCancelsMs`, then closes the
   * connection. Closing first would cut them off, and the task would run to completion. A
   * tasks/cancel not answered in time, or refused (for a task not already ended), is reported
   * to `onError` as TG_TASK_CANCEL_UNCONFIRMED, naming the task (given-up-cancels.ts).
   */
  async close(): Promise<void> {
    await this.#cancels.settle(this.#raw?.cancelsInFlight() ?? [], this.#closeCancelsMs);
    await this.#sdk.close();
  }

  /** A request past the SDK, with the per-request fields 2026-07-28 asks for in `_meta`. */
  #rawRequest = (method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const raw = this.#raw;
    if (raw === null) return Promise.reject(new Error('not connected'));
    try {
      const version = this.#sdk.protocolVersion;
      // A 2025-11-25 session's tasks/* need no per-request fields: the session carries them.
      if (version !== undefined && revisionInfo(version)?.kind === 'handshake') return raw.request(method, params);
      return raw.request(method, { ...params, _meta: this.#envelope(method) });
    } catch (error) {
      return Promise.reject(error);
    }
  };

  /** The per-request `_meta` fields, declaring the Tasks extension; only on a per-request revision. */
  #envelope(method: string): Record<string, unknown> {
    const version = this.#sdk.protocolVersion;
    if (version === undefined || revisionInfo(version)?.kind !== 'per-request') {
      throw new Error(
        `${method} is the Tasks extension's, on a per-request revision; this connection speaks ${version ?? 'nothing yet'}`,
      );
    }
    return {
      [META.protocolVersion]: version,
      [META.clientInfo]: this.#clientInfo,
      [META.clientCapabilities]: { extensions: { [TASKS_EXTENSION]: {} } },
    };
  }

  /**
   * A tools/call answered with a task: watch it and finish the SDK's call with its outcome. The
   * call's idle clock counts a change of the task (its lastUpdatedAt) as progress. If the caller
   * gives up (a cancel, a clock), the task is cancelled with tasks/cancel — the extension's way;
   * notifications/cancelled is not for tasks.
   */
  #followTask(held: HeldCall): void {
    const context = held.context as CallContext | undefined;
    const first = held.task as TaskState;
    // Seen ended by the watch (2025-11-25: its result is being fetched): nothing left to cancel.
    let ended: string | null = null;
    const seen = (task: TaskState) => {
      if (ended !== null || !TERMINAL_STATUSES.includes(task.status)) return;
      ended = task.status;
      if (context !== undefined) context.ended = ended;
    };
    if (context !== undefined) context.followed = first.taskId;
    seen(first);
    context?.onTask?.(first);
    let lastUpdate = first.lastUpdatedAt;
    const stop = new AbortController();
    // Sent as the call is given up, not when the watch notices: a close() right after the
    // caller's abort (try … finally) must find it on its way. The call's error, made just
    // before, says which of the two it was (client-errors.ts, stopped()).
    held.signal?.addEventListener(
      'abort',
      () => {
        stop.abort(new Error('the call was given up'));
        if (ended === null) this.#cancels.send(first.taskId);
      },
      { once: true },
    );
    watchTask(this.#rawRequest, first.taskId, {
      timers: this.#timers,
      signal: stop.signal,
      onUpdate: (task) => {
        seen(task);
        if (task.lastUpdatedAt !== lastUpdate) {
          lastUpdate = task.lastUpdatedAt;
          context?.progress();
        }
        // The task row holds the progress its tool reports; the call's onProgress follows it,
        // before the state that may be the terminal one.
        const progress = progressOfTask(task);
        if (progress !== null) context?.progress(progress);
        context?.onTask?.(task);
      },
    })
      .then(async (task) => {
        // Given up meanwhile (a poll or the result on its way): the SDK's call has settled
        // already, and would report an answer to it to onError as one for an unknown id.
        if (stop.signal.aborted) return;
        if (held.shape === 'handshake' && (task.status === 'completed' || task.status === 'failed')) {
          // 2025-11-25 keeps the result apart: tasks/result answers it (a tool error is `failed` there).
          const response = await this.#rawRequest('tasks/result', { taskId: first.taskId });
          if (stop.signal.aborted) return;
          held.finish(
            response.error !== undefined
              ? { error: response.error as Record<string, unknown> }
              : { result: response.result as Record<string, unknown> },
          );
          return;
        }
        held.finish(outcomeOf(task));
      })
      .catch((error: unknown) => {
        if (stop.signal.aborted) return;
        held.finish({
          error: { code: -32603, message: `watching task ${first.taskId} failed: ${(error as Error).message}` },
        });
      });
  }

  /**
   * Runs one request under its two clocks and the caller's signal. Whichever ends it first
   * aborts the SDK request, which rejects the waiter at once and sends the cancel; the error the
   * caller sees names what ended it (TG_CALL_TIMEOUT with the clock, or TG_CALL_CANCELLED).
   */
  async #withClocks<T>(
    method: string,
    options: CallOptions,
    run: (sdkOptions: SdkRequestOptions, progress: (update?: Progress) => void) => Promise<T>,
    startedAt?: number,
    stopOf: () => CallStop = () => ({ kind: 'request' }),
  ): Promise<T> {
    options.signal?.throwIfAborted();
    const ended = this.#sdk.ended;
    if (ended !== null) throw new TaskgateError('TG_SERVER_UNREACHABLE', `${method} was not sent: ${ended}`);
    const controller = new AbortController();
    let ending: Error | null = null;
    // The error is made as the call ends, when what its cancel will be (a task's?) is known.
    const end = (error: (stop: CallStop) => Error) => {
      if (ending !== null) return;
      ending = error(stopOf());
      controller.abort(ending);
    };
    const clocks = new CallClocks(
      { idleMs: options.idleMs ?? DEFAULT_IDLE_MS, maxMs: options.maxMs ?? DEFAULT_MAX_MS },
      this.#timers,
      (clock, limitMs) => end((stop) => callTimedOut(method, clock, limitMs, stop)),
      startedAt,
    );
    const onAbort = () => end((stop) => callCancelled(method, options.signal?.reason, stop));
    // One progress for the call's whole life, notifications first and the task's polls after: a
    // rise resets the idle clock and reaches onProgress, a repeat (the next poll) does neither.
    const rising = risingProgress((update) => {
      clocks.progress();
      options.onProgress?.(update);
    });
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await run(
        {
          signal: controller.signal,
          timeout: SDK_NO_TIMEOUT,
          onprogress: (progress) => {
            clocks.progress();
            rising(progress);
          },
        },
        (update) => (update === undefined ? clocks.progress() : rising(update)),
      );
    } catch (error) {
      // The SDK wraps an abort reason in its own error; ours says what happened.
      if (ending !== null) throw ending;
      throw serverRefusal(error) ?? error;
    } finally {
      clocks.stop();
      options.signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** What a tools/call's caller asked for, carried to the wire (a task answer arrives there). */
interface CallContext {
  readonly onTask?: (task: TaskState) => void;
  /** No update: a change of the task (the idle clock restarts); an update: its progress. */
  readonly progress: (update?: Progress) => void;
  /** 2025-11-25: send the call task-augmented (`task: {}`); the server then answers `{task}`. */
  readonly asTask?: boolean;
  /** The task the call became, once it has (its cancel is then tasks/cancel). */
  followed: string | null;
  /** The terminal status its watch saw, if any: giving up then cancels nothing. */
  ended: string | null;
}

const callContext = new AsyncLocalStorage<CallContext>();

/** Passes on only progress above the highest seen (MCP: progress increases with each notification). */
function risingProgress(report: (progress: Progress) => void): (progress: Progress) => void {
  let highest = Number.NEGATIVE_INFINITY;
  return (progress) => {
    if (!(progress.progress > highest)) return;
    highest = progress.progress;
    report(progress);
  };
}

/** A finished task as the answer its tools/call would have had. */
function outcomeOf(task: TaskState): { result: Record<string, unknown> } | { error: Record<string, unknown> } {
  if (task.status === 'completed' && task.result !== undefined) {
    return { result: { ...task.result, resultType: 'complete' } };
  }
  if (task.status === 'failed' && task.error !== undefined) return { error: { ...task.error } };
  if (task.status === 'cancelled') {
    // Cancelled by someone else (this caller's own cancel ends in TG_CALL_CANCELLED first): the
    // code says so, so a script and `taskgate call` tell it from a refused request.
    const message = `task ${task.taskId} was cancelled${task.statusMessage ? `: ${task.statusMessage}` : ''}`;
    return {
      error: { code: -32603, message, data: { code: 'TG_TASK_CANCELLED', taskId: task.taskId, status: task.status } },
    };
  }
  const message = `task ${task.taskId} ended ${task.status}${task.statusMessage ? `: ${task.statusMessage}` : ''}`;
  return { error: { code: -32603, message, data: { taskId: task.taskId, status: task.status } } };
}

function clientInfoOf(options: ClientOptions) {
  return options.clientInfo ?? { name: 'taskgate-client', version: '0.1.0' };
}
