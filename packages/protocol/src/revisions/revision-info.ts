/**
 * The two kinds of revision: `per-request` (2026-07-28 on: `_meta` on every request, no session) and
 * `handshake` (2024-11-05 … 2025-11-25: opened by initialize, which negotiates the version).
 */
export type RevisionKind = 'per-request' | 'handshake';

/** What the registry knows of one revision; everything a revision does differently lives in its folder. */
export interface RevisionInfo {
  readonly version: string;
  readonly kind: RevisionKind;
  /** Listed in server/discover's `supportedVersions` and in -32022's `data.supported`. */
  readonly advertised: boolean;
  /** Over HTTP, every request after initialize must carry MCP-Protocol-Version (since 2025-06-18). */
  readonly versionHeader?: boolean;
  /** The handshake-revision tasks (task-augmented requests, tasks/*), declared at initialize. */
  readonly tasks?: boolean;
  /**
   * JSON-RPC batches must be received (basic/index "Batching"): a message may be an array of
   * requests and notifications, or of responses. Only 2025-03-26 has them; 2025-06-18 removed them.
   */
  readonly batches?: boolean;
  /**
   * A resumable SSE stream starts with a priming event (an id and empty data) so the client has an
   * id to resume from before any message (transports, SEP-1699): 2025-11-25. An earlier client
   * parses the empty data as a message and reports an error, so it gets ids on messages only.
   */
  readonly ssePriming?: boolean;
  /**
   * URL-mode elicitation's notifications/elicitation/complete (client/elicitation "Completion
   * Notifications for URL Mode Elicitation"): 2025-11-25 only; 2026-07-28 removed it (its client
   * learns the outcome by retrying).
   */
  readonly elicitationCompleteNotification?: boolean;
  /**
   * The optional fields of an Implementation (serverInfo) the revision defines besides name and
   * version: 2025-06-18's `title`; from 2025-11-25 also `description`, `icons`, `websiteUrl`.
   */
  readonly implementationFields?: readonly ('title' | 'description' | 'icons' | 'websiteUrl')[];
}
