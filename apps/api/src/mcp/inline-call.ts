import { randomUUID } from 'node:crypto';
import type { TaskProgress } from '@taskgate/db';
import type { ToolResult } from '@taskgate/sdk';
import { type AnyTool, InlineStore, ToolRun } from '@taskgate/tools';
import { type MethodOutcome, runError } from './mcp-methods.ts';

/** No task row, so no flag to read: the request's signal is the only way a cancel arrives. */
const NEVER_READ_FLAG_MS = Number.POSITIVE_INFINITY;

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * A tools/call of an inline tool (declared safe and inline): it runs here, in the API process,
 * with no task row — nothing durable, and nothing lost that a retry would not redo. It runs on the
 * same ToolRun as a durable task, with a store in memory: the request's cancel aborts ctx.signal,
 * the two clocks run (idle reset by progress only, max never reset), progress strictly increases,
 * and a timeout or a protocol error is reported exactly as a durable task reports it.
 */
export async function runInline(
  tool: AnyTool,
  args: Record<string, unknown>,
  context: {
    tenantId: string;
    signal: AbortSignal;
    /** The tool's clocks under the server's caps. */
    limits: { idleMs: number | null; maxMs: number | null };
    onProgress?: (progress: TaskProgress) => void;
    /** The result check a worker applies too: the CallToolResult shape and the outputSchema. */
    resultProblem: (result: unknown) => string | null;
    logger: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
  },
): Promise<ToolResult | MethodOutcome | null> {
  if (context.signal.aborted) return null;
  const store = new InlineStore(tool.name, (progress) =>
    context.onProgress?.({ value: progress.value, total: progress.total ?? null, message: progress.message ?? null }),
  );
  const run = new ToolRun(
    {
      id: `inline-${randomUUID()}`,
      tenantId: context.tenantId,
      tool: tool.name,
      arguments: args,
      attempt: 1,
      idempotencyKey: null,
      inputResponses: {},
      cancelReason: null,
      idleTimeoutMs: context.limits.idleMs,
      maxTimeoutMs: context.limits.maxMs,
    },
    tool,
    {
      store,
      elapsedMs: 0,
      retryable: false,
      logger: context.logger,
      checkpointReadIntervalMs: NEVER_READ_FLAG_MS,
      // The MCP progress stream coalesces on its own; the run passes every increase on.
      progressWriteIntervalMs: 0,
      now: Date.now,
      resultProblem: context.resultProblem,
    },
  );
  const onCancel = () => run.cancel('the request was cancelled', reasonOf(context.signal.reason));
  context.signal.addEventListener('abort', onCancel, { once: true });
  try {
    await run.run();
  } finally {
    context.signal.removeEventListener('abort', onCancel);
  }
  const outcome = store.outcome;
  // Cancelled: the request is gone, and nothing is sent for it.
  if (outcome === null || outcome.status === 'cancelled') return null;
  if (outcome.status === 'completed') return outcome.result as ToolResult;
  return { kind: 'error', httpStatus: 200, error: runError(outcome.error) };
}

function reasonOf(reason: unknown): string | null {
  if (reason instanceof Error) return reason.message;
  return typeof reason === 'string' ? reason : null;
}
