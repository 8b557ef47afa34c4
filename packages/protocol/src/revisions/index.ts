import { META, PER_REQUEST_FROM } from './2026-07-28/version.ts';
import { HANDSHAKE_VERSIONS } from './registry.ts';
import type { RevisionKind } from './revision-info.ts';

export { WITHOUT_VERSION_HEADER } from './2025-03-26/version.ts';
export {
  type HeaderParameter,
  headerParameterProblem,
  headerParametersOf,
} from './2026-07-28/header-parameters.ts';
export {
  checkMetaFields,
  checkRequestMetadata,
  type MetadataCheck,
  type RequestHeaders,
  type RequestMetadata,
} from './2026-07-28/request-metadata.ts';
export { META } from './2026-07-28/version.ts';
export {
  HANDSHAKE_VERSIONS,
  LATEST_PROTOCOL_VERSION,
  PER_REQUEST_VERSIONS,
  REVISIONS,
  revisionInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './registry.ts';
export type { RevisionInfo, RevisionKind } from './revision-info.ts';

/**
 * Which kind of revision a request speaks. A request that carries the per-request version in
 * `_meta` is per-request; an `initialize` without it, or a request whose MCP-Protocol-Version
 * header names an older, handshake-revision date, is handshake. Everything else is judged as
 * per-request, so its missing fields are reported by the per-request rules.
 */
export function revisionKindOf(
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  versionHeader: string | undefined,
): RevisionKind {
  const meta = params?._meta as Record<string, unknown> | undefined;
  if (meta && typeof meta[META.protocolVersion] === 'string') return 'per-request';
  if (method === 'initialize') return 'handshake';
  if (versionHeader !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(versionHeader) && versionHeader < PER_REQUEST_FROM)
    return 'handshake';
  return 'per-request';
}

/** What a request's connection already says of its revision's kind, as each transport knows it. */
export interface RevisionHints {
  /**
   * The connection speaks a handshake revision: it initialized (a stdio pipe, an HTTP+SSE
   * connection), or the request names a session or a handshake revision's version header.
   */
  readonly handshake: boolean;
  /**
   * Whether that holds even for a request carrying its own per-request version in `_meta`: on
   * HTTP a session or a header is the request's own word; a stdio pipe serves a 2026-07-28
   * request among its handshake ones.
   */
  readonly sticky: boolean;
  /** HTTP's MCP-Protocol-Version header; none on stdio. */
  readonly versionHeader?: string | undefined;
}

/**
 * The kind of revision of one request on a connection: the connection's handshake revision when it has one
 * (unless the request carries its own per-request version and the connection lets it), else
 * what the request itself says (revisionKindOf). The one place every transport decides it.
 */
export function requestRevisionKind(
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  connection: RevisionHints,
): RevisionKind {
  if (connection.handshake) {
    const meta = params?._meta as Record<string, unknown> | undefined;
    if (connection.sticky || typeof meta?.[META.protocolVersion] !== 'string') return 'handshake';
  }
  return revisionKindOf(method, params, connection.versionHeader);
}

/**
 * The revision an `initialize` is answered with (basic/lifecycle "Version Negotiation", the same
 * text in every handshake revision): the one the client asked for when it is served, else the
 * latest handshake revision — 2026-07-28 has no initialize to answer with.
 */
export function negotiateHandshake(requested: unknown): string {
  return typeof requested === 'string' && HANDSHAKE_VERSIONS.includes(requested)
    ? requested
    : (HANDSHAKE_VERSIONS[0] as string);
}
