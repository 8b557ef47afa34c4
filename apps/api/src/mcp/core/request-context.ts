import type { TaskProgress } from '@taskgate/db';
import type { Capabilities, LogLevel, RequestHeaders, RevisionKind } from '@taskgate/protocol';
import type { SubscriptionSet } from './subscriptions.ts';

/** A list whose changes a client may hear of: notifications/<kind>/list_changed. */
export type ListKind = 'tools' | 'resources' | 'prompts';

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
  /** The kind of revision the request speaks, when the transport names no `revision`: that kind's latest. */
  readonly revisionKind?: RevisionKind;
  /** The revision the request speaks (negotiated at initialize, or per request). */
  readonly revision?: string;
  /**
   * The least severe level of notifications/message this request hears (2026-07-28: its `_meta`
   * logLevel; before: the session's logging/setLevel); absent or null: none.
   */
  readonly logLevel?: LogLevel | null;
  /**
   * Where the request's own notifications go (its response stream, or the pipe): its
   * notifications/message, and a handshake revision's notifications/elicitation/complete.
   */
  readonly onLog?: (notification: Record<string, unknown>) => void;
  /**
   * Sends the client a request on this request's connection (elicitation/create and the like, as
   * handshake revisions make them) and resolves with its result; rejects when `signal` aborts.
   */
  readonly askClient?: (
    method: string,
    params: Readonly<Record<string, unknown>>,
    signal: AbortSignal,
  ) => Promise<unknown>;
  /**
   * The HTTP request's headers, each with its values apart (2026-07-28 checks a tool's
   * Mcp-Param-* headers against the body). A function: most tools declare none, and the view is
   * built only for one that does.
   */
  readonly headers?: () => RequestHeaders;
  /** The connection's resources/subscribe set (handshake revisions; absent: none to keep it in). */
  readonly resourceSubscriptions?: SubscriptionSet;
  /**
   * A -32042 of a request sent the client these URL elicitations: kept with the session, for a
   * later completion to reach it (POST /v1/elicitations/{id}/complete). Absent: nowhere to keep them.
   */
  readonly onUrlElicitations?: (elicitationIds: readonly string[]) => Promise<void>;
  /** logging/setLevel: keeps the level for the connection's later requests (handshake revisions). */
  readonly setLogLevel?: (level: LogLevel) => Promise<void> | void;
  /** Sees each status change of the task a 2025-11-25 tasks/result waits for, as its notification. */
  readonly onTaskStatus?: (notification: Record<string, unknown>) => void;
  /**
   * A task the request created at the client's asking (2025-11-25's `task` param), for a
   * connection that follows the status of the tasks it created on a stream of its own.
   */
  readonly onTaskCreated?: (taskId: string) => void;
}
