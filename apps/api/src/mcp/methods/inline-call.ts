import { randomUUID } from 'node:crypto';
import type { TaskProgress } from '@taskgate/db';
import { processMetrics, runMetrics } from '@taskgate/metrics';
import { cancelSignalOf } from '@taskgate/reliability';
import type { InputRequest, ToolResult } from '@taskgate/sdk';
import { type AnyTool, InlineStore, type LogEntry, ToolRun } from '@taskgate/tools';
import type { MethodOutcome } from '../core/outcomes.ts';
import { runError } from './call-results.ts';

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
    /**
     * A multi round-trip request (2026-07-28): the answers gathered so far, which ctx.input()
     * returns, and a missing key ends the run with `{ asked }` instead of failing it.
     */
    readonly rounds?: { readonly answers: Readonly<Record<string, unknown>> };
    readonly clientCapabilities?: Readonly<Record<string, unknown>>;
    /** Where the handler's ctx.log() messages go. */
    readonly onLog?: (entry: LogEntry) => void;
    /** Where the handler's ctx.elicitationComplete() goes (a client that can hear it); absent: nowhere. */
    readonly onElicitationComplete?: (elicitationId: string) => void;
    /**
     * Asks the client one input request on the call's connection (a handshake revision): its
     * result. With it, ctx.input() waits for the answers within the call.
     */
    readonly askClient?: (request: InputRequest, signal: AbortSignal) => Promise<unknown>;
  },
): Promise<ToolResult | MethodOutcome | { readonly asked: Readonly<Record<string, InputRequest>> } | null> {
  if (context.signal.aborted) return null;
  const store = new InlineStore(
    tool.name,
    (progress) =>
      context.onProgress?.({ value: progress.value, total: progress.total ?? null, message: progress.message ?? null }),
    { canAsk: context.rounds !== undefined, ask: context.askClient ? askEach(context.askClient) : undefined },
  );
  const run = new ToolRun(
    {
      id: `inline-${randomUUID()}`,
      tenantId: context.tenantId,
      tool: tool.name,
      arguments: args,
      attempt: 1,
      idempotencyKey: null,
      inputResponses: context.rounds?.answers ?? {},
      clientCapabilities: context.clientCapabilities,
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
      // Messages nobody will hear still cost nothing beyond the level check.
      onLog: context.onLog ?? (() => {}),
      onElicitationComplete: context.onElicitationComplete,
      observer: runMetrics(processMetrics()),
    },
  );
  // The request's abort reason says which path the cancel took (a stream close, a notification).
  const onCancel = () =>
    run.cancel('the request was cancelled', reasonOf(context.signal.reason), cancelSignalOf(context.signal.reason));
  context.signal.addEventListener('abort', onCancel, { once: true });
  try {
    await run.run();
  } finally {
    context.signal.removeEventListener('abort', onCancel);
  }
  const outcome = store.outcome;
  if (outcome === null && store.asked !== null && !context.signal.aborted) return { asked: store.asked };
  // Cancelled: the request is gone, and nothing is sent for it.
  if (outcome === null || outcome.status === 'cancelled') return null;
  if (outcome.status === 'completed') return outcome.result as ToolResult;
  return { kind: 'error', httpStatus: 200, error: runError(outcome.error) };
}

/** Every request of one ctx.input() asked at once; the answers by key once all are in. */
function askEach(askClient: (request: InputRequest, signal: AbortSignal) => Promise<unknown>) {
  return async (requests: Readonly<Record<string, InputRequest>>, signal: AbortSignal) => {
    const entries = await Promise.all(
      Object.entries(requests).map(async ([key, request]) => [key, await askClient(request, signal)] as const),
    );
    return Object.fromEntries(entries);
  };
}

function reasonOf(reason: unknown): string | null {
  if (reason instanceof Error) return reason.message;
  return typeof reason === 'string' ? reason : null;
}
