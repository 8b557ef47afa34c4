import type { TaskProgress, TaskRecord } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import { type Capabilities, ErrorCode, missingCapabilities } from '@taskgate/protocol';
import type { ToolDefinition, ToolRegistry } from '@taskgate/tools';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import { type ClockCaps, cappedClocks, type TaskService } from '../tasks/task-service.ts';
import { runInline } from './inline-call.ts';
import {
  callOutcome,
  discoverResult,
  type MethodOutcome,
  readCallParams,
  refusal,
  type ServerIdentity,
  toolsListResult,
  withServerInfo,
} from './mcp-methods.ts';
import { waitForTerminal } from './task-outcome.ts';

export interface McpCoreOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  readonly tools: ToolRegistry;
  readonly server: ServerIdentity;
  /** The floor under NOTIFY while a call waits for its task. */
  readonly pollMs: number;
  /** The server's ceiling on tools' clocks (inline calls; durable ones get it from TaskService). */
  readonly clockCaps?: ClockCaps;
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
}

/**
 * The MCP methods, whatever the transport. A tools/call is a `request`-mode task; when the
 * request's signal aborts, the task is cancelled (through the same path as tasks/cancel, so the
 * worker stops at its next checkpoint) and null comes back: a cancelled request gets no response.
 */
export class McpCore {
  readonly #options: McpCoreOptions;

  constructor(options: McpCoreOptions) {
    this.#options = options;
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
        return { kind: 'result', result: toolsListResult(this.#options.tools, this.#options.server) };
      case 'tools/call':
        return this.#call(params, context);
      default:
        return {
          kind: 'error',
          httpStatus: 404,
          error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` },
        };
    }
  }

  async #inline(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
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
    const { service, hub } = this.#options;
    const call = readCallParams(params);
    if ('code' in call) return { kind: 'error', httpStatus: 200, error: call };
    const tool = this.#options.tools.get(call.name);
    const missing = tool?.requiredClientCapabilities
      ? missingCapabilities(tool.requiredClientCapabilities, context.clientCapabilities)
      : null;
    if (missing) {
      // Refused before a task exists (basic/index: -32021 with the missing capabilities, HTTP 400).
      return {
        kind: 'error',
        httpStatus: 400,
        error: {
          code: ErrorCode.MissingRequiredClientCapability,
          message: `tool ${call.name} needs client capabilities this request did not declare`,
          data: { requiredCapabilities: missing },
        },
      };
    }
    if (tool?.inline) return this.#inline(tool, call.arguments, context);
    let task: TaskRecord;
    try {
      ({ task } = await service.submit(context.tenantId, {
        tool: call.name,
        arguments: call.arguments,
        mode: 'request',
      }));
    } catch (error) {
      const outcome = refusal(error);
      if (outcome.kind === 'error' && outcome.error.code === ErrorCode.InternalError) throw error;
      return outcome;
    }
    const cancel = () => {
      const reason =
        context.signal.reason instanceof Error ? context.signal.reason.message : String(context.signal.reason);
      service.cancel(context.tenantId, task.id, reason).catch((error: Error) => {
        context.log?.(
          { taskId: task.id, error: error.message },
          'cancelling the task of a cancelled MCP request failed',
        );
      });
    };
    if (context.signal.aborted) {
      cancel();
      return null;
    }
    try {
      const done = await waitForTerminal(service, hub, context.tenantId, task.id, {
        pollMs: this.#options.pollMs,
        signal: context.signal,
        ...(context.onProgress ? { onChange: progressOf(context.onProgress) } : {}),
      });
      return callOutcome(done, this.#options.server);
    } catch (error) {
      if (!context.signal.aborted) throw error;
      cancel();
      return null;
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
