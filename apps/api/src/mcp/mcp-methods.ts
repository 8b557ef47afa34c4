import type { TaskRecord } from '@taskgate/db';
import { toJsonRpcError } from '@taskgate/errors';
import { CALL_POLICY_META, type Capabilities, ErrorCode, type JsonRpcError, META } from '@taskgate/protocol';
import { type ToolSpec, taskSupportOf } from '@taskgate/tools';
import type { ServerIdentity } from './server-info.ts';

/** What a method handler produces: a result, or a JSON-RPC error (with the HTTP status to use). */
export type MethodOutcome =
  | { readonly kind: 'result'; readonly result: Readonly<Record<string, unknown>> }
  | { readonly kind: 'error'; readonly error: JsonRpcError; readonly httpStatus: number };

export type { ServerIdentity } from './server-info.ts';
export { discoverInstructions, discoverResult, initializeResult, TOOLS_CAPABILITY } from './server-info.ts';

/**
 * Cache hints (server/utilities/caching): the tool list changes when workers that serve other
 * tools come and go, and a client that listens (toolsListChanged) hears of each change.
 */
const LIST_TTL_MS = 60_000;

/**
 * Results a server hands out again and again unchanged (tools/list of one version of the offer):
 * their JSON is made once and reused, as text (stdio writes lines) and as UTF-8 bytes (HTTP writes
 * those as they are). Serialising 200 tools' schemas (~104 KB) per request would be most of what
 * answering tools/list costs; encoding the text to UTF-8 again for every response cost 0.1-0.2 ms
 * of the server's time and ten times the young-generation collections (bench/tools-list.ts).
 * Entries go with their results.
 */
const serialized = new WeakMap<object, { readonly text: string; readonly bytes: Buffer }>();
const RESPONSE_END = Buffer.from('}');

/** Marks `result` as shared and unchanging: sent by its cached JSON from now on (resultJson, sharedResponse). */
export function shareResult<T extends object>(result: T): T {
  const text = JSON.stringify(result);
  serialized.set(result, { text, bytes: Buffer.from(text) });
  return result;
}

/** The JSON-RPC response of `result` as text, reusing the JSON of a shared result. */
export function resultJson(id: unknown, result: Readonly<Record<string, unknown>>): string {
  const json = serialized.get(result)?.text ?? JSON.stringify(result);
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${json}}`;
}

/**
 * The JSON-RPC response of a shared result as the byte pieces to write in order — the id's, the
 * cached result's, the end — or null when `result` is not shared.
 */
export function sharedResponse(id: unknown, result: Readonly<Record<string, unknown>>): readonly Buffer[] | null {
  const shared = serialized.get(result);
  if (!shared) return null;
  return [Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`), shared.bytes, RESPONSE_END];
}

/**
 * tools/list. For a 2025-11-25 client each tool also says whether it runs as a task
 * (`execution.taskSupport`, that revision's tool-level negotiation).
 */
export function toolsListResult(
  tools: readonly ToolSpec[],
  server: ServerIdentity,
  shape: {
    /** `execution.taskSupport` on each entry (2025-11-25's tasks). */
    readonly execution?: boolean;
    /** Which tools the revision can call at all. */
    readonly include?: (tool: ToolSpec) => boolean;
    /** The entry as the revision defines one (the fields it lacks removed). */
    readonly entry?: (entry: Record<string, unknown>) => Record<string, unknown>;
  } = {},
): Record<string, unknown> {
  const entry = shape.entry ?? ((value: Record<string, unknown>) => value);
  return {
    resultType: 'complete',
    tools: tools
      .filter((tool) => shape.include?.(tool) ?? true)
      .map((tool) =>
        entry({
          name: tool.name,
          ...(tool.title ? { title: tool.title } : {}),
          description: tool.description,
          inputSchema: tool.inputSchema,
          ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
          ...(tool.annotations ? { annotations: tool.annotations } : {}),
          ...(shape.execution ? { execution: { taskSupport: taskSupportOf(tool) } } : {}),
          _meta: callPolicyOf(tool),
        }),
      ),
    ttlMs: LIST_TTL_MS,
    cacheScope: 'public',
    _meta: { [META.serverInfo]: server },
  };
}

/**
 * What a client needs to call a tool reliably, which annotations only hint at: how it may be
 * retried (`safe`: with a new id; `conditional`: with the same idempotency key and arguments;
 * `unsafe`: never automatically — look it up), whether it takes an `idempotencyKey` argument,
 * and its two clocks. @taskgate/client and `taskgate review` read these.
 */
export function callPolicyOf(tool: ToolSpec): Record<string, unknown> {
  return {
    [CALL_POLICY_META.retry]: tool.retry,
    ...(tool.retry === 'conditional' ? { [CALL_POLICY_META.idempotencyKey]: tool.idempotencyKey ?? 'optional' } : {}),
    ...(tool.timeouts ? { [CALL_POLICY_META.timeouts]: { ...tool.timeouts } } : {}),
  };
}

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

/** -32602 for params the method cannot use (400 on 2026-07-28 HTTP; 2025-11-25 answers on a 200). */
export function invalidParams(message: string, httpStatus = 400): MethodOutcome {
  return { kind: 'error', httpStatus, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${message}` } };
}

/**
 * tools/list is one page (no nextCursor is ever given), so any cursor is one this server did not
 * give out: -32602, as a list with pages answers a cursor it cannot read (utilities/pagination).
 * Null when there is none.
 */
export function oneToolsPage(
  params: Readonly<Record<string, unknown>> | undefined,
  httpStatus: number,
): MethodOutcome | null {
  if (params?.cursor === undefined) return null;
  return invalidParams('params.cursor is not a cursor this server gave out (tools/list has one page)', httpStatus);
}

/** -32021 naming what the client did not declare (basic/index: HTTP 400), before anything runs. */
export function missingCapability(requiredCapabilities: Capabilities, message: string): MethodOutcome {
  return {
    kind: 'error',
    httpStatus: 400,
    error: { code: ErrorCode.MissingRequiredClientCapability, message, data: { requiredCapabilities } },
  };
}

/** A refused call (unknown tool, bad arguments, an idempotency problem) as its JSON-RPC error. */
export function refusal(error: unknown): MethodOutcome {
  return { kind: 'error', error: toJsonRpcError(error), httpStatus: 200 };
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
 * back as it is: one is made in the shape of the era it is served to (McpCore's tools/list), and
 * a copy would lose its cached JSON.
 */
export function legacyResult(result: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  if (serialized.has(result)) return result;
  const { resultType: _type, ttlMs: _ttl, cacheScope: _scope, ...rest } = result;
  return rest;
}

/** A capabilities object as a 2025-11-25 initialize declared it, or undefined for anything else. */
