import { ErrorCode, type JsonRpcId } from '@taskgate/protocol';
import type { MethodOutcome } from './outcomes.ts';
import type { ListKind, RequestContext } from './request-context.ts';
import { defaultVersion, type Revision } from './revision.ts';
import type { ListenSink, ListenSubscription, ResourceSubscriptions } from './subscriptions.ts';

/**
 * What the core is made of: the served revisions and the connection-wide features the
 * transports reach it for. Built by createMcpCore (apps/api/src/mcp/core-assembly.ts), which
 * knows the methods; the core itself only routes.
 */
export interface McpCoreParts {
  /** Each served revision's methods, by version; the transports tell which revision a request speaks. */
  readonly revisions: ReadonlyMap<string, Revision>;
  /** Calls `listener` with each list that changed; returns the unsubscribe function. */
  readonly onListChanged: (listener: (kind: ListKind) => void) => () => void;
  /** A connection's resources/subscribe set (handshake revisions). */
  readonly resourceSubscriptions: (
    tenantId: string,
    send: (notification: Record<string, unknown>) => void,
  ) => ResourceSubscriptions;
  /** subscriptions/listen: the subscription to start, or the error that refuses it. */
  readonly listen: (
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
    listenId: JsonRpcId,
    sink: ListenSink,
  ) => ListenSubscription | MethodOutcome;
}

/**
 * The MCP methods, whatever the transport. A tools/call is a `request`-mode task; when the
 * request's signal aborts, the task is cancelled (through the same path as tasks/cancel, so the
 * worker stops at its next checkpoint) and null comes back: a cancelled request gets no response.
 */
export class McpCore {
  readonly #parts: McpCoreParts;

  constructor(parts: McpCoreParts) {
    this.#parts = parts;
  }

  /**
   * One request of the revision the transport determined (`context.revision`, else its kind's
   * latest): its method table's answer, or -32601 for a method that revision does not have.
   */
  async request(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
    const revision = this.#parts.revisions.get(context.revision ?? defaultVersion(context.revisionKind));
    const handler = revision?.methods.get(method);
    if (handler) return handler(params, context);
    return {
      kind: 'error',
      httpStatus: revision?.methodNotFoundStatus ?? 404,
      error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` },
    };
  }

  /**
   * Calls `listener` with each list that changed — the tools offered, the resources (and
   * templates), the prompts — for its list-changed notification. Returns the unsubscribe function.
   */
  onListChanged(listener: (kind: ListKind) => void): () => void {
    return this.#parts.onListChanged(listener);
  }

  /**
   * The status notifications of a revision that has them (2025-11-25's notifications/tasks/status)
   * for the tasks a connection created: `add` each task, `stop` with the connection. Null for a
   * revision without them.
   */
  watchStatus(tenantId: string, revision: string, send: (notification: Record<string, unknown>) => void) {
    return this.#parts.revisions.get(revision)?.statusWatch?.(tenantId, send) ?? null;
  }

  /**
   * A connection's resources/subscribe set (handshake revisions): notifications/resources/updated
   * go to `send` (the session's GET stream, the pipe). `stop` it with the connection.
   */
  resourceSubscriptions(
    tenantId: string,
    send: (notification: Record<string, unknown>) => void,
  ): ResourceSubscriptions {
    return this.#parts.resourceSubscriptions(tenantId, send);
  }

  /**
   * subscriptions/listen: the subscription to start on the transport's stream, or the error that
   * refuses it (an unknown filter field, taskIds without the Tasks extension).
   */
  listen(
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
    listenId: JsonRpcId,
    sink: ListenSink,
  ): ListenSubscription | MethodOutcome {
    return this.#parts.listen(params, context, listenId, sink);
  }
}
