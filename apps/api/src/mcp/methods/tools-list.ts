import { CALL_POLICY_META, META } from '@taskgate/protocol';
import { type ToolSpec, taskSupportOf } from '@taskgate/tools';
import { invalidParams, type MethodOutcome } from '../core/outcomes.ts';
import type { ServerIdentity } from '../core/server-info.ts';

/**
 * Cache hints (server/utilities/caching): the tool list changes when workers that serve other
 * tools come and go, and a client that listens (toolsListChanged) hears of each change.
 */
const LIST_TTL_MS = 60_000;

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
