import type { TaskRecord } from '@taskgate/db';
import { ErrorCode, type JsonRpcError, META } from '@taskgate/protocol';
import type { MethodOutcome } from '../core/outcomes.ts';
import type { ServerIdentity } from '../core/server-info.ts';
import { isShared } from '../core/shared-results.ts';

/** tools/call's params, or the -32602 a malformed call gets. */
export function readCallParams(
  params: Readonly<Record<string, unknown>> | undefined,
): { name: string; arguments: Record<string, unknown> } | JsonRpcError {
  const name = params?.name;
  const args = params?.arguments ?? {};
  if (typeof name !== 'string' || name === '') {
    return { code: ErrorCode.InvalidParams, message: 'Invalid params: params.name must be the name of a tool' };
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return { code: ErrorCode.InvalidParams, message: 'Invalid params: params.arguments must be an object' };
  }
  return { name, arguments: args as Record<string, unknown> };
}

/**
 * The terminal task as the call's answer. A completed task carries the CallToolResult (a tool
 * error is a result with isError: true); a failed one its JSON-RPC error. Codes in the legacy
 * -32000…-32019 range, which 2026-07-28 asks new implementations not to emit, travel as -32603
 * with the original in data.
 */
export function callOutcome(task: TaskRecord, server: ServerIdentity): MethodOutcome {
  if (task.status === 'completed') {
    return {
      kind: 'result',
      result: withServerInfo((task.result ?? { content: [] }) as Record<string, unknown>, server),
    };
  }
  if (task.status === 'failed') return { kind: 'error', httpStatus: 200, error: taskError(task) };
  return {
    kind: 'error',
    httpStatus: 200,
    error: {
      code: ErrorCode.InternalError,
      message: `the task was cancelled${task.cancelReason ? `: ${task.cancelReason}` : ''}`,
      data: { taskId: task.id, status: task.status },
    },
  };
}

/** A failed task's JSON-RPC error, as the call's error or as tasks/get's `error`. */
export function taskError(task: TaskRecord): JsonRpcError {
  return runError(task.error);
}

/**
 * A failed run's JSON-RPC error as the client gets it, whether the run was durable (the task's
 * stored error) or inline: one mapping, so a tool fails the same way wherever it ran.
 */
export function runError(error: unknown): JsonRpcError {
  const stored = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof stored.code === 'number' ? stored.code : ErrorCode.InternalError;
  const message = typeof stored.message === 'string' ? stored.message : 'the tool failed';
  const legacy = code <= -32000 && code >= -32019;
  return legacy
    ? { code: ErrorCode.InternalError, message, data: { ...(stored.data as object), originalCode: code } }
    : { code, message, ...(stored.data === undefined ? {} : { data: stored.data }) };
}

/** A CallToolResult as 2026-07-28 sends it: resultType, and the server's identity in _meta. */
export function withServerInfo(
  result: Readonly<Record<string, unknown>>,
  server: ServerIdentity,
): Record<string, unknown> {
  return { resultType: 'complete', ...result, _meta: { ...(result._meta as object), [META.serverInfo]: server } };
}

/**
 * A 2026-07-28 result as 2025-11-25 shaped it: no resultType, no cache hints. A shared result comes
 * back as it is: one is made in the shape of the kind of revision it is served to (McpCore's tools/list), and
 * a copy would lose its cached JSON.
 */
export function handshakeResult(result: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  if (isShared(result)) return result;
  const { resultType: _type, ttlMs: _ttl, cacheScope: _scope, ...rest } = result;
  return rest;
}
