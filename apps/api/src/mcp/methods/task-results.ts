import type { TaskRecord } from '@taskgate/db';
import { ErrorCode, type JsonRpcError, taskProgressMeta } from '@taskgate/protocol';
import type { ServerIdentity } from '../core/server-info.ts';
import { taskError, withServerInfo } from './call-results.ts';
import { withoutUrlElicitationCode } from './url-elicitations.ts';

/**
 * The Tasks extension's views of a task row (tasks-extension/tasks.md "Tasks"): the flat Task
 * fields, CreateTaskResult (`resultType: "task"`), and DetailedTask for tasks/get, which inlines
 * the result, the error or the outstanding input requests by status.
 */
export function taskFields(task: TaskRecord): Record<string, unknown> {
  return {
    taskId: task.id,
    status: task.status,
    ...(task.statusMessage ? { statusMessage: task.statusMessage } : {}),
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttlMs: task.ttlMs,
    ...(task.pollIntervalMs ? { pollIntervalMs: task.pollIntervalMs } : {}),
  };
}

/** What tools/call answers once the task row is committed: the task, no result yet. */
export function createTaskResult(task: TaskRecord): Record<string, unknown> {
  return { resultType: 'task', ...taskFields(task) };
}

/** tasks/get's answer: the task and, by status, its result, its error, or its input requests. */
export function detailedTask(task: TaskRecord, server: ServerIdentity): Record<string, unknown> {
  const detail: Record<string, unknown> = { resultType: 'complete', ...taskFields(task) };
  // Its progress: a call that became a task has no request left for notifications/progress.
  const progress = taskProgressMeta(task.progress);
  if (Object.keys(progress).length > 0) detail._meta = progress;
  if (task.status === 'completed') {
    detail.result = withServerInfo((task.result ?? { content: [] }) as Record<string, unknown>, server);
  } else if (task.status === 'failed') {
    // The Tasks extension is 2026-07-28's, which has no URLElicitationRequiredError.
    detail.error = withoutUrlElicitationCode(taskError(task));
  } else if (task.status === 'input_required') {
    detail.inputRequests = task.inputRequests ?? {};
  }
  return detail;
}

/** tasks/update's and tasks/cancel's acknowledgement: empty, as the extension defines it. */
export const TASK_ACK: Readonly<Record<string, unknown>> = { resultType: 'complete' };

/** -32602 for a taskId that names no task this tenant can see (any tenant's, any shape). */
export function unknownTask(taskId: unknown): JsonRpcError {
  return {
    code: ErrorCode.InvalidParams,
    message: `Invalid params: no task ${JSON.stringify(taskId)}`,
    data: { taskId },
  };
}
