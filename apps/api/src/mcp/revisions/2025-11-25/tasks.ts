import type { TaskRecord } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { ErrorCode, type JsonRpcError, taskProgressMeta } from '@taskgate/protocol';
import { type ToolSpec, taskSupportOf } from '@taskgate/tools';
import { MAX_TTL_MS } from '../../../tasks/task-limits.ts';
import type { TaskService } from '../../../tasks/task-service.ts';
import type { TaskWatcher } from '../../../tasks/task-watch.ts';
import { invalidParams, type MethodOutcome } from '../../core/outcomes.ts';
import type { ServerIdentity } from '../../core/server-info.ts';
import { callOutcome } from '../../methods/call-results.ts';
import { unknownTask } from '../../methods/task-results.ts';

/** `_meta` key tying a message to its task (2025-11-25 tasks "Related Task Metadata"). */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';

const PAGE_SIZE = 50;

/**
 * The status a 2025-11-25 client sees. That revision files a tool error (a CallToolResult with
 * `isError: true`) under `failed`; 2026-07-28's extension calls it `completed`. The row is the same.
 */
export function legacyStatus(task: TaskRecord): string {
  const isError = task.status === 'completed' && (task.result as { isError?: unknown } | null)?.isError === true;
  return isError ? 'failed' : task.status;
}

/** How much of a tool error's text becomes its task's statusMessage. */
const STATUS_MESSAGE_CHARS = 1_000;

/**
 * What a task filed under `failed` because its tool answered `isError` says: the text of the
 * tool's answer. Without it a client of this revision shows only "Task failed", since the result
 * itself is fetched separately (tasks/result).
 */
function toolErrorMessage(task: TaskRecord): string | null {
  if (task.status !== 'completed' || legacyStatus(task) !== 'failed') return null;
  const content = (task.result as { content?: unknown }).content;
  if (!Array.isArray(content)) return null;
  const text = content
    .filter((block) => block?.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string)
    .join('\n');
  if (text === '') return null;
  if (text.length <= STATUS_MESSAGE_CHARS) return text;
  // Cut at a code point, not inside a surrogate pair.
  const cut = /[\uD800-\uDBFF]/.test(text[STATUS_MESSAGE_CHARS - 2] ?? '')
    ? STATUS_MESSAGE_CHARS - 2
    : STATUS_MESSAGE_CHARS - 1;
  return `${text.slice(0, cut)}…`;
}

/**
 * The Task object of 2025-11-25 (tasks.mdx "Task"): `ttl` and `pollInterval`, not ttlMs. A tool
 * error's task carries the tool's text as its statusMessage.
 */
export function handshakeTask(task: TaskRecord): Record<string, unknown> {
  const statusMessage = task.statusMessage ?? toolErrorMessage(task);
  return {
    taskId: task.id,
    status: legacyStatus(task),
    ...(statusMessage ? { statusMessage } : {}),
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttl: task.ttlMs,
    ...(task.pollIntervalMs ? { pollInterval: task.pollIntervalMs } : {}),
  };
}

/** notifications/tasks/status with the full Task (tasks.mdx "Task Status Notification"). */
export function statusNotification(task: TaskRecord): Record<string, unknown> {
  return { jsonrpc: '2.0', method: 'notifications/tasks/status', params: handshakeTask(task) };
}

/**
 * tools/call's `task` param (TaskMetadata): present means the client asks for a task. Its `ttl`,
 * when given, is a whole number of milliseconds up to MAX_TTL_MS (REST's bound on ttlMs); anything
 * else — `1e308` would overflow the bigint column, `-1` break its check — is -32602 rather than
 * silently replaced.
 */
export function requestedTask(
  params: Readonly<Record<string, unknown>> | undefined,
): { ttl?: number } | { refused: JsonRpcError } | null {
  const task = params?.task;
  if (typeof task !== 'object' || task === null || Array.isArray(task)) return null;
  const ttl = (task as { ttl?: unknown }).ttl;
  if (ttl === undefined) return {};
  if (typeof ttl === 'number' && Number.isSafeInteger(ttl) && ttl >= 1 && ttl <= MAX_TTL_MS) return { ttl };
  return {
    refused: {
      code: ErrorCode.InvalidParams,
      message: `Invalid params: task.ttl must be a whole number of milliseconds from 1 to ${MAX_TTL_MS}`,
      data: { code: 'TG_JSON_NUMBER_INVALID', path: '/params/task/ttl' },
    },
  };
}

/**
 * Whether a 2025-11-25 tools/call may go ahead as asked: a task for a tool that forbids tasks, or
 * no task for one that requires one, is -32601 (tasks.mdx "Tool-Level Negotiation").
 */
export function handshakeTaskRefusal(tool: ToolSpec | undefined, asTask: boolean): JsonRpcError | null {
  if (!tool) return null;
  const support = taskSupportOf(tool);
  if (asTask && support === 'forbidden') {
    return { code: ErrorCode.MethodNotFound, message: `${tool.name} does not run as a task; call it without task` };
  }
  if (!asTask && support === 'required') {
    return { code: ErrorCode.MethodNotFound, message: `${tool.name} runs only as a task; call it with task: {}` };
  }
  return null;
}

/**
 * tasks/get, tasks/result, tasks/list and tasks/cancel as 2025-11-25 defines them, for the clients
 * deployed today (the SDK v1 client's experimental tasks API). Unlike the 2026-07-28 extension,
 * tasks/cancel moves the task to cancelled before it answers (the worker still stops at its next
 * checkpoint), refuses an ended task with -32602, and tasks/result blocks until the task ends.
 */
export class HandshakeTaskMethods {
  readonly #service: TaskService;
  readonly #watcher: TaskWatcher;
  readonly #server: ServerIdentity;
  readonly #pollMs: number;

  constructor(options: { service: TaskService; watcher: TaskWatcher; server: ServerIdentity; pollMs: number }) {
    this.#service = options.service;
    this.#watcher = options.watcher;
    this.#server = options.server;
    this.#pollMs = options.pollMs;
  }

  async request(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    context: {
      readonly tenantId: string;
      readonly signal: AbortSignal;
      readonly onTaskStatus?: ((notification: Record<string, unknown>) => void) | undefined;
    },
  ): Promise<MethodOutcome | null> {
    if (method === 'tasks/list') return this.#list(params, context.tenantId);
    // The taskId param names the task; a `task` param on these requests (the SDK sends its call's
    // options along) means nothing here and is ignored.
    const taskId = params?.taskId;
    if (typeof taskId !== 'string' || taskId === '') {
      return invalidParams(`${method} needs params.taskId, the id of a task`, 200);
    }
    try {
      switch (method) {
        case 'tasks/get': {
          const task = await this.#service.get(context.tenantId, taskId);
          // Its progress, as on 2026-07-28's tasks/get (packages/protocol/src/task-progress.ts).
          const progress = taskProgressMeta(task.progress);
          return result({ ...handshakeTask(task), ...(Object.keys(progress).length > 0 ? { _meta: progress } : {}) });
        }
        case 'tasks/cancel':
          return await this.#cancel(context.tenantId, taskId);
        case 'tasks/result':
          return await this.#result(context.tenantId, taskId, context.signal, context.onTaskStatus);
        default:
          return {
            kind: 'error',
            httpStatus: 200,
            error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` },
          };
      }
    } catch (error) {
      if (isTaskgateError(error, 'TG_TASK_NOT_FOUND'))
        return { kind: 'error', httpStatus: 200, error: unknownTask(taskId) };
      throw error;
    }
  }

  /** Ends a working or waiting task now; an ended one is -32602 (tasks.mdx "Cancelling Tasks"). */
  async #cancel(tenantId: string, taskId: string): Promise<MethodOutcome> {
    const { task, cancelled } = await this.#service.cancelNow(tenantId, taskId, 'cancelled with tasks/cancel');
    if (!cancelled) {
      return invalidParams(`task ${taskId} has already ended (${legacyStatus(task)}) and cannot be cancelled`, 200);
    }
    return result(handshakeTask(task));
  }

  /**
   * The underlying call's answer once the task has ended, with the related-task `_meta`. If the
   * request is cancelled first (its stream closed, notifications/cancelled), nothing is answered and
   * the task is left alone.
   */
  async #result(
    tenantId: string,
    taskId: string,
    signal: AbortSignal,
    onStatus?: (notification: Record<string, unknown>) => void,
  ): Promise<MethodOutcome | null> {
    const current = await this.#service.get(tenantId, taskId); // an unknown task is -32602 now, not a wait
    let last = legacyStatus(current);
    let task: TaskRecord;
    try {
      task = await this.#watcher.untilTerminal(tenantId, taskId, {
        pollMs: this.#pollMs,
        signal,
        ...(onStatus
          ? {
              onChange: (reading: TaskRecord) => {
                if (legacyStatus(reading) === last) return;
                last = legacyStatus(reading);
                onStatus(statusNotification(reading));
              },
            }
          : {}),
      });
    } catch (error) {
      if (signal.aborted) return null;
      throw error;
    }
    if (onStatus && legacyStatus(task) !== last) onStatus(statusNotification(task));
    const outcome = callOutcome(task, this.#server);
    const related = { [RELATED_TASK]: { taskId } };
    if (outcome.kind === 'result') {
      return result({ ...outcome.result, _meta: { ...(outcome.result._meta as object), ...related } });
    }
    return { ...outcome, error: { ...outcome.error, data: { ...(outcome.error.data as object), _meta: related } } };
  }

  async #list(params: Readonly<Record<string, unknown>> | undefined, tenantId: string): Promise<MethodOutcome> {
    const cursor = params?.cursor;
    if (cursor !== undefined && typeof cursor !== 'string') return invalidParams('params.cursor must be a string', 200);
    try {
      const page = await this.#service.list(tenantId, {
        limit: PAGE_SIZE,
        ...(cursor === undefined ? {} : { cursor }),
      });
      return result({
        tasks: page.tasks.map(handshakeTask),
        ...(page.nextCursor === null ? {} : { nextCursor: page.nextCursor }),
      });
    } catch (error) {
      if (isTaskgateError(error, 'TG_CURSOR_INVALID')) return invalidParams(error.message, 200);
      throw error;
    }
  }
}

function result(value: Record<string, unknown>): MethodOutcome {
  return { kind: 'result', result: value };
}
