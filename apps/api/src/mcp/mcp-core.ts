import type { TaskRecord } from '@taskgate/db';
import { ErrorCode } from '@taskgate/protocol';
import type { ToolRegistry } from '@taskgate/tools';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { TaskService } from '../tasks/task-service.ts';
import {
  callOutcome,
  discoverResult,
  type MethodOutcome,
  readCallParams,
  refusal,
  type ServerIdentity,
  toolsListResult,
} from './mcp-methods.ts';
import { waitForTerminal } from './task-outcome.ts';

export interface McpCoreOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  readonly tools: ToolRegistry;
  readonly server: ServerIdentity;
  /** The floor under NOTIFY while a call waits for its task. */
  readonly pollMs: number;
}

export interface RequestContext {
  readonly tenantId: string;
  /** Aborted when the request is cancelled (a closed stream, notifications/cancelled, a closed pipe). */
  readonly signal: AbortSignal;
  /** Sees the task on every change while a tools/call runs (for notifications/progress). */
  readonly onTaskChange?: (task: TaskRecord) => void;
  readonly log?: (fields: Record<string, unknown>, message: string) => void;
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

  async #call(
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
    const { service, hub } = this.#options;
    const call = readCallParams(params);
    if ('code' in call) return { kind: 'error', httpStatus: 200, error: call };
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
        ...(context.onTaskChange ? { onChange: context.onTaskChange } : {}),
      });
      return callOutcome(done, this.#options.server);
    } catch (error) {
      if (!context.signal.aborted) throw error;
      cancel();
      return null;
    }
  }
}
