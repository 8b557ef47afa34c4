import {
  ErrorCode,
  HANDSHAKE_VERSIONS,
  type JsonRpcError,
  revisionInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
  WITHOUT_VERSION_HEADER,
} from '@taskgate/protocol';

/** Where a handshake revision's HTTP requests find their session's scope (the transport's sessions). */
export interface SessionScopes<Scope> {
  /** The scope of a request that names no session (a revision without sessions, or before one). */
  requestScope(): Scope;
  scopeOf(sessionId: string, tenantId: string): Promise<Scope | null>;
}

/**
 * The scope and revision of a handshake-revision request after initialize, or why it is refused: every
 * later request carries the negotiated version (2025-06-18 onwards); without the header, and
 * without a session that says otherwise, it is the revision from before the header. An unknown
 * session is 404, so the client initializes again.
 */
export async function sessionOf<Scope extends { readonly revision?: string | undefined }>(
  context: { tenantId: string; sessionId: string | undefined; versionHeader: string | undefined },
  sessions: SessionScopes<Scope>,
): Promise<{ scope: Scope; revision: string } | { status: number; refused: JsonRpcError }> {
  if (context.versionHeader !== undefined && !HANDSHAKE_VERSIONS.includes(context.versionHeader)) {
    return {
      status: 400,
      refused: {
        code: ErrorCode.InvalidRequest,
        message: `MCP-Protocol-Version ${context.versionHeader} is not supported; use one of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`,
      },
    };
  }
  const scope =
    context.sessionId === undefined
      ? sessions.requestScope()
      : await sessions.scopeOf(context.sessionId, context.tenantId);
  if (!scope) {
    return {
      status: 404,
      refused: { code: ErrorCode.InvalidRequest, message: 'unknown session; send initialize again' },
    };
  }
  const revision = scope.revision ?? context.versionHeader ?? WITHOUT_VERSION_HEADER;
  if (context.versionHeader === undefined && revisionInfo(revision)?.versionHeader) {
    return {
      status: 400,
      refused: {
        code: ErrorCode.InvalidRequest,
        message: `MCP-Protocol-Version is required: this session speaks ${revision}`,
      },
    };
  }
  return { scope, revision };
}

/** Whether a session's GET stream of `revision` is primed with an event id (SSE resumption). */
export function primesStreams(revision: string): boolean {
  return revisionInfo(revision)?.ssePriming === true;
}
