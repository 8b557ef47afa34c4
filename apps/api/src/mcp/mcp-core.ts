import type { TaskProgress, TaskRecord } from '@taskgate/db';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import {
  type Capabilities,
  declaresTasks,
  ErrorCode,
  type JsonRpcId,
  missingCapabilities,
  type ProtocolEra,
  TASK_METHODS,
  TASKS_EXTENSION,
  TASKS_REQUIRED,
} from '@taskgate/protocol';
import { isTerminalStatus } from '@taskgate/reliability';
import { type AnyTool, type ToolCatalog, type ToolSpec, taskSupportOf } from '@taskgate/tools';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import { type ClockCaps, type CreateTaskInput, cappedClocks, type TaskService } from '../tasks/task-service.ts';
import { changesStatus, TaskWatcher } from '../tasks/task-watch.ts';
import { runInline } from './inline-call.ts';
import { LegacyTaskMethods, legacyTask, legacyTaskRefusal, requestedTask } from './legacy-tasks.ts';
import {
  callOutcome,
  discoverResult,
  invalidParams,
  legacyResult,
  type MethodOutcome,
  missingCapability,
  readCallParams,
  refusal,
  type ServerIdentity,
  shareResult,
  toolsListResult,
  withServerInfo,
} from './mcp-methods.ts';
import { createTaskResult, detailedTask, TASK_ACK, unknownTask } from './mcp-tasks.ts';
import { type ListenSink, readListenFilter, TaskSubscription } from './task-subscriptions.ts';

export interface McpCoreOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  /**
   * The tools offered (the catalog, in a deployment). An inline tool runs in this process only
   * when `tools.local()` has its handler (its module is loaded here); otherwise its calls go to a
   * worker as durable tasks, like any other tool's.
   */
  readonly tools: ToolCatalog;
  readonly server: ServerIdentity;
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
const SILENT: NonNullable<McpCoreOptions['logger']> = { info: () => {}, warn: () => {}, debug: () => {} };

export const DEFAULT_TASK_AFTER_MS = 500;

/**
 * The reason a call's signal aborts when the server closes with the call still waiting: a task
 * the client may be handed is handed over (it polls it elsewhere) instead of being cancelled.
 */
export class ServerStopping extends Error {
  constructor() {
    super('the server is shutting down');
    this.name = 'ServerStopping';
  }
}

export interface RequestContext {
  readonly tenantId: string;
  /** Aborted when the request is cancelled (a closed stream, notifications/cancelled, a closed pipe). */
  readonly signal: AbortSignal;
  /**
   * Sees each new progress value while a tools/call runs (for notifications/progress). The core
   * calls it with strictly increasing values only, durable or inline, so transports need no filter.
   */
  readonly onProgress?: (progress: TaskProgress) => void;
  readonly log?: (fields: Record<string, unknown>, message: string) => void;
  /**
   * What the client declared: per request in 2026-07-28 (`_meta`), at initialize in 2025-11-25.
   * Absent means nothing was declared.
   */
  readonly clientCapabilities?: Capabilities;
  /** The revision the request speaks: 2025-11-25 (`legacy`) has its own tasks methods. */
  readonly era?: ProtocolEra;
  /** Sees each status change of the task a 2025-11-25 tasks/result waits for. */
  readonly onTaskStatus?: (task: TaskRecord) => void;
}

/**
 * The MCP methods, whatever the transport. A tools/call is a `request`-mode task; when the
 * request's signal aborts, the task is cancelled (through the same path as tasks/cancel, so the
 * worker stops at its next checkpoint) and null comes back: a cancelled request gets no response.
 */
export class McpCore {
  readonly #options: McpCoreOptions;
  readonly #legacyTasks: LegacyTaskMethods;
  readonly #watcher: TaskWatcher;
  /**
   * tools/list of the current offer, per era: built and serialised once per change of the tool
   * list (tools.version). The legacy one is already in its era's shape, since a shared result is
   * sent as it was serialised.
   */
  #listed: { version: string; modern: MethodOutcome; legacy: MethodOutcome } | null = null;

  constructor(options: McpCoreOptions) {
    this.#options = options;
    this.#watcher = new TaskWatcher(options);
    this.#legacyTasks = new LegacyTaskMethods({ ...options, watcher: this.#watcher });
  }

  async request(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
    switch (method) {
      case 'server/discover':
        return { kind: 'result', result: discoverResult(this.#options.server) };
      case 'tools/list':
        return this.#toolsList(context.era === 'legacy');
      case 'tools/call':
        return this.#call(params, context);
      case 'tasks/get':
      case 'tasks/cancel':
      case 'tasks/update':
        if (context.era === 'legacy' && method !== 'tasks/update')
          return this.#legacyTasks.request(method, params, context);
        if (context.era !== 'legacy') return this.#taskMethod(method, params, context);
        break;
      case 'tasks/result':
      case 'tasks/list':
        if (context.era === 'legacy') return this.#legacyTasks.request(method, params, context);
        break;
    }
    return {
      kind: 'error',
      httpStatus: 404,
      error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` },
    };
  }

  /** Calls `listener` after each change of the tools offered (for list-changed notifications). */
  onToolsChanged(listener: () => void): () => void {
    return this.#options.tools.onChange(listener);
  }

  #toolsList(legacy: boolean): MethodOutcome {
    const { tools, server } = this.#options;
    const version = tools.version;
    if (this.#listed?.version !== version) {
      const list = tools.list();
      this.#listed = {
        version,
        modern: { kind: 'result', result: shareResult(toolsListResult(list, server)) },
        legacy: { kind: 'result', result: shareResult(legacyResult(toolsListResult(list, server, true))) },
      };
    }
    return legacy ? this.#listed.legacy : this.#listed.modern;
  }

  /**
   * Calls `onStatus` with a task each time its status changes, until it ends (for 2025-11-25's
   * notifications/tasks/status), for every task added: one watch per connection, so one poll
   * timer however many tasks it created. Woken by the tasks' notifications, with the poll under
   * them — on the embedded database there are no notifications, and the poll is all there is.
   * Each task is read once at once: a task that ended before it was added is still reported.
   */
  watchStatus(tenantId: string, onStatus: (task: TaskRecord) => void): { add(taskId: string): void; stop(): void } {
    const last = new Map<string, string>();
    const watch = this.#watcher.watch(
      { tenantId, pollMs: this.#options.pollMs, wakeOn: changesStatus, readAtStart: true },
      (taskId, reading) => {
        // An expired task has nothing more to say; an outage is waited out by the next poll.
        if (reading.kind === 'missing') {
          watch.remove(taskId);
          last.delete(taskId);
        }
        if (reading.kind !== 'task' || reading.task.status === last.get(taskId)) return;
        last.set(taskId, reading.task.status);
        onStatus(reading.task);
        if (isTerminalStatus(reading.task.status)) {
          watch.remove(taskId);
          last.delete(taskId);
        }
      },
    );
    return {
      add: (taskId) => {
        last.set(taskId, 'working'); // tasks start working: only changes are reported
        watch.add(taskId);
      },
      stop: () => watch.stop(),
    };
  }

  /**
   * subscriptions/listen: the subscription to start on the transport's stream, or the error that
   * refuses it (an unknown filter field, taskIds without the Tasks extension).
   */
  listen(
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
    listenId: JsonRpcId,
    sink: ListenSink,
  ): TaskSubscription | MethodOutcome {
    const filter = readListenFilter(params, context.clientCapabilities);
    if ('kind' in filter) return filter;
    return new TaskSubscription(
      { ...this.#options, watcher: this.#watcher },
      { tenantId: context.tenantId, listenId, filter },
      sink,
    );
  }

  async #inline(tool: AnyTool, args: Record<string, unknown>, context: RequestContext): Promise<MethodOutcome | null> {
    const check = this.#options.tools.check(tool.name, args);
    if (!check.ok) {
      return refusal(
        new TaskgateError(
          'TG_TOOL_ARGUMENTS_INVALID',
          `the arguments do not match the input schema of ${tool.name}`,
          check.kind === 'invalid-arguments' ? { details: { errors: check.problems } } : {},
        ),
      );
    }
    const clocks = cappedClocks(tool, this.#options.clockCaps);
    const outcome = await runInline(tool, args, {
      tenantId: context.tenantId,
      signal: context.signal,
      limits: { idleMs: clocks.idleTimeoutMs, maxMs: clocks.maxTimeoutMs },
      resultProblem: (result) => this.#options.tools.resultProblem(tool.name, result),
      logger: this.#options.logger ?? SILENT,
      ...(context.onProgress ? { onProgress: context.onProgress } : {}),
    });
    if (outcome === null || 'kind' in outcome) return outcome;
    return {
      kind: 'result',
      result: withServerInfo(outcome as unknown as Record<string, unknown>, this.#options.server),
    };
  }

  async #call(
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
    const call = readCallParams(params);
    if ('code' in call) return { kind: 'error', httpStatus: 200, error: call };
    const tool = this.#options.tools.get(call.name);
    if (context.era === 'legacy') return this.#legacyCall(tool, call, params, context);
    const support = tool ? taskSupportOf(tool) : 'forbidden';
    const asTask = support !== 'forbidden' && declaresTasks(context.clientCapabilities);
    const required = { ...tool?.requiredClientCapabilities, ...(support === 'required' ? TASKS_REQUIRED : {}) };
    const missing = missingCapabilities(required, context.clientCapabilities);
    if (missing)
      return missingCapability(missing, `tool ${call.name} needs client capabilities this request did not declare`);
    const local = tool?.inline ? this.#options.tools.local(call.name) : undefined;
    if (local) return this.#inline(local, call.arguments, context);
    // Input asked in the call, before any task (multi round-trip): until every key is answered in
    // params.inputResponses, the call is answered with the outstanding requests and creates nothing.
    let inputResponses: Record<string, unknown> | undefined;
    if (tool?.askFirst) {
      const given = params?.inputResponses;
      const answers = typeof given === 'object' && given !== null && !Array.isArray(given) ? given : {};
      const outstanding = Object.entries(tool.askFirst).filter(([key]) => !Object.hasOwn(answers, key));
      if (outstanding.length > 0) {
        return {
          kind: 'result',
          result: { resultType: 'input_required', inputRequests: Object.fromEntries(outstanding) },
        };
      }
      inputResponses = Object.fromEntries(
        Object.keys(tool.askFirst).map((key) => [key, (answers as Record<string, unknown>)[key]]),
      );
    }
    const task = await this.#submit(context, {
      tool: call.name,
      arguments: call.arguments,
      // A task the client may be handed outlives its connection; a request's task does not.
      mode: asTask ? 'task' : 'request',
      ...(inputResponses ? { inputResponses } : {}),
    });
    if ('kind' in task) return task;
    // The row is committed: a required-task tool is answered with its task at once.
    if (asTask && support === 'required') return { kind: 'result', result: createTaskResult(task) };
    return this.#await(task, context, asTask ? (this.#options.taskAfterMs ?? DEFAULT_TASK_AFTER_MS) : null);
  }

  /**
   * A 2025-11-25 tools/call: with a `task` param (and a tool that allows it) the answer is
   * `{task}` as soon as the row is committed; without one, the call waits for its task as usual.
   */
  async #legacyCall(
    tool: ToolSpec | undefined,
    call: { name: string; arguments: Record<string, unknown> },
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
    const asked = requestedTask(params);
    if (asked && 'refused' in asked) return { kind: 'error', httpStatus: 200, error: asked.refused };
    const refused = legacyTaskRefusal(tool, asked !== null);
    if (refused) return { kind: 'error', httpStatus: 200, error: refused };
    const missing = tool?.requiredClientCapabilities
      ? missingCapabilities(tool.requiredClientCapabilities, context.clientCapabilities)
      : null;
    if (missing)
      return missingCapability(missing, `tool ${call.name} needs client capabilities this session did not declare`);
    const local = tool?.inline ? this.#options.tools.local(call.name) : undefined;
    if (local) return this.#inline(local, call.arguments, context);
    const task = await this.#submit(context, {
      tool: call.name,
      arguments: call.arguments,
      mode: asked ? 'task' : 'request',
      ...(asked?.ttl ? { ttlMs: asked.ttl } : {}),
    });
    if ('kind' in task) return task;
    if (asked) return { kind: 'result', result: { task: legacyTask(task) } };
    return this.#await(task, context, null);
  }

  /** The call's task, or the refusal a caller can act on (an unexpected failure propagates). */
  async #submit(context: RequestContext, input: CreateTaskInput): Promise<TaskRecord | MethodOutcome> {
    try {
      return (await this.#options.service.submit(context.tenantId, input)).task;
    } catch (error) {
      const outcome = refusal(error);
      if (outcome.kind === 'error' && outcome.error.code === ErrorCode.InternalError) throw error;
      return outcome;
    }
  }

  /**
   * Waits for the call's task. With `handOverAfterMs`, a task still running then is answered with
   * its CreateTaskResult (the client polls it from there). A request cancelled before any answer
   * cancels the task: nobody else knows its id.
   */
  async #await(
    task: TaskRecord,
    context: RequestContext,
    handOverAfterMs: number | null,
  ): Promise<MethodOutcome | null> {
    const { service } = this.#options;
    // Awaited before the request settles: a transport that ends (stdin closed, the process
    // stopping) waits for its requests, and so for their cancels to be written, before it lets
    // the worker drain. Unwritten, the worker would hand the task back instead of cancelling it.
    const cancel = async () => {
      const reason =
        context.signal.reason instanceof Error ? context.signal.reason.message : String(context.signal.reason);
      await service.cancel(context.tenantId, task.id, reason).catch((error: Error) => {
        context.log?.(
          { taskId: task.id, error: error.message },
          'cancelling the task of a cancelled MCP request failed',
        );
      });
    };
    if (context.signal.aborted) {
      await cancel();
      return null;
    }
    const handOver = new AbortController();
    const timer = handOverAfterMs === null ? undefined : setTimeout(() => handOver.abort(), handOverAfterMs);
    const signal = AbortSignal.any([context.signal, handOver.signal]);
    try {
      const done = await this.#watcher.untilTerminal(context.tenantId, task.id, {
        pollMs: this.#options.pollMs,
        signal,
        ...(context.onProgress ? { onChange: progressOf(context.onProgress) } : {}),
      });
      return callOutcome(done, this.#options.server);
    } catch (error) {
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
   * tasks/get, tasks/update and tasks/cancel (tasks-extension/tasks.md). The client must declare
   * the extension on the request — checked before the task is looked up, so a client without it
   * learns nothing about which ids exist. Another tenant's task is as unknown as a made-up id.
   */
  async #taskMethod(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome> {
    if (!TASK_METHODS.includes(method) || !declaresTasks(context.clientCapabilities)) {
      return missingCapability(
        TASKS_REQUIRED,
        `${method} is part of the Tasks extension; declare ${TASKS_EXTENSION} in the request's client capabilities`,
      );
    }
    const taskId = params?.taskId;
    if (typeof taskId !== 'string' || taskId === '') {
      return invalidParams(`${method} needs params.taskId, the id of a task`);
    }
    const inputResponses = params?.inputResponses;
    if (
      method === 'tasks/update' &&
      (typeof inputResponses !== 'object' || inputResponses === null || Array.isArray(inputResponses))
    ) {
      return invalidParams('tasks/update needs params.inputResponses, an object of responses by request key');
    }
    const { service } = this.#options;
    try {
      if (method === 'tasks/get') {
        const task = await service.get(context.tenantId, taskId);
        return { kind: 'result', result: detailedTask(task, this.#options.server) };
      }
      if (method === 'tasks/cancel') {
        // Acknowledged at once; the task stays working until its worker reaches a checkpoint.
        // On a task that already ended this changes nothing and is acknowledged the same way.
        await service.cancel(context.tenantId, taskId, 'cancelled with tasks/cancel');
        return { kind: 'result', result: TASK_ACK };
      }
      // tasks/update: answers to outstanding keys are stored (and the task resumes once none is
      // left) before the ack, so the next tasks/get already shows them; other keys are ignored.
      await service.answerInput(context.tenantId, taskId, inputResponses as Record<string, unknown>);
      return { kind: 'result', result: TASK_ACK };
    } catch (error) {
      if (isTaskgateError(error, 'TG_TASK_NOT_FOUND'))
        return { kind: 'error', httpStatus: 200, error: unknownTask(taskId) };
      throw error;
    }
  }
}

/** Task readings to strictly increasing progress values. */
function progressOf(onProgress: (progress: TaskProgress) => void): (task: TaskRecord) => void {
  let last = Number.NEGATIVE_INFINITY;
  return (task) => {
    if (!task.progress || !(task.progress.value > last)) return;
    last = task.progress.value;
    onProgress(task.progress);
  };
}
