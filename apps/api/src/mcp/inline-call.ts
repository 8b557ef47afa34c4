import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { TaskProgress } from '@taskgate/db';
import { ErrorCode } from '@taskgate/protocol';
import { TwoClockDeadline } from '@taskgate/reliability';
import {
  TaskCancelledError,
  TaskTimeoutError,
  type ToolContext,
  type ToolDefinition,
  ToolProtocolError,
  type ToolResult,
} from '@taskgate/tools';
import type { MethodOutcome } from './mcp-methods.ts';

/**
 * A tools/call of an inline tool (declared safe and inline): it runs here, in the API process,
 * with no task row — nothing durable, and nothing lost that a retry would not redo. What makes a
 * call correct is kept: the request's cancel aborts ctx.signal, the two clocks run (idle reset by
 * progress only, max never reset), and progress is strictly increasing.
 */
export async function runInline(
  tool: ToolDefinition,
  args: Record<string, unknown>,
  context: {
    tenantId: string;
    signal: AbortSignal;
    /** The tool's clocks under the server's caps. */
    limits: { idleMs: number | null; maxMs: number | null };
    onProgress?: (progress: TaskProgress) => void;
  },
): Promise<ToolResult | MethodOutcome | null> {
  const controller = new AbortController();
  const onCancel = () => controller.abort(new TaskCancelledError(reasonOf(context.signal.reason)));
  if (context.signal.aborted) return null;
  context.signal.addEventListener('abort', onCancel, { once: true });
  const deadline = new TwoClockDeadline(
    { idleMs: context.limits.idleMs ?? undefined, maxMs: context.limits.maxMs ?? undefined },
    Date.now(),
  );
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    const next = deadline.next();
    if (!next) return;
    timer = setTimeout(
      () => {
        const expiry = deadline.expired(Date.now());
        if (expiry) controller.abort(new TaskTimeoutError(expiry.clock, expiry.limitMs));
        else arm();
      },
      Math.max(0, next.at - Date.now()),
    );
  };
  arm();
  let highest = Number.NEGATIVE_INFINITY;
  const ctx: ToolContext = {
    signal: controller.signal,
    tenant: context.tenantId,
    taskId: `inline-${randomUUID()}`,
    attempt: 1,
    idempotencyKey: null,
    checkpoint: async () => {
      if (controller.signal.aborted) throw controller.signal.reason;
    },
    progress: (value, total, message) => {
      if (controller.signal.aborted || !Number.isFinite(value) || value <= highest) return;
      highest = value;
      deadline.recordProgress(Date.now());
      arm();
      context.onProgress?.({ value, total: total ?? null, message: message ?? null });
    },
    commit: async () => {
      throw new Error(`${tool.name} runs inline and has no transaction to commit effects in`);
    },
    step: (_name, fn) => fn(),
    input: async () => {
      throw new Error(`${tool.name} runs inline and has no task to wait for input in`);
    },
    sleep: async (ms) => {
      try {
        await delay(ms, undefined, { signal: controller.signal });
      } catch {
        throw controller.signal.reason;
      }
    },
  };
  try {
    const result = await tool.handler(args as never, ctx);
    if (controller.signal.aborted) throw controller.signal.reason;
    return result;
  } catch (thrown) {
    const error = controller.signal.aborted ? controller.signal.reason : thrown;
    if (error instanceof TaskCancelledError) return null;
    if (error instanceof TaskTimeoutError) {
      return {
        kind: 'error',
        httpStatus: 200,
        error: {
          code: ErrorCode.InternalError,
          message: error.message,
          data: { clock: error.clock, limitMs: error.limitMs },
        },
      };
    }
    if (error instanceof ToolProtocolError) {
      return {
        kind: 'error',
        httpStatus: 200,
        error: { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) },
      };
    }
    return {
      kind: 'error',
      httpStatus: 200,
      error: { code: ErrorCode.InternalError, message: error instanceof Error ? error.message : String(error) },
    };
  } finally {
    clearTimeout(timer);
    context.signal.removeEventListener('abort', onCancel);
  }
}

function reasonOf(reason: unknown): string | null {
  if (reason instanceof Error) return reason.message;
  return typeof reason === 'string' ? reason : null;
}
