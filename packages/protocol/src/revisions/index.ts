import { META, PER_REQUEST_ERA_FROM } from './2026-07-28/version.ts';
import { LEGACY_PROTOCOL_VERSIONS } from './registry.ts';
import type { ProtocolEra } from './revision-info.ts';

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
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  MODERN_PROTOCOL_VERSIONS,
  REVISIONS,
  revisionInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './registry.ts';
export type { ProtocolEra, RevisionInfo } from './revision-info.ts';

/**
 * Which era a request belongs to. A request that carries the per-request version in `_meta` is
 * modern; an `initialize` without it, or a request whose MCP-Protocol-Version header names an
 * older, handshake-era date, belongs to the handshake era. Everything else is judged as modern,
 * so its missing fields are reported by the modern rules.
 */
export function eraOf(
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  versionHeader: string | undefined,
): ProtocolEra {
  const meta = params?._meta as Record<string, unknown> | undefined;
  if (meta && typeof meta[META.protocolVersion] === 'string') return 'modern';
  if (method === 'initialize') return 'legacy';
  if (versionHeader !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(versionHeader) && versionHeader < PER_REQUEST_ERA_FROM)
    return 'legacy';
  return 'modern';
}

/** What a request's connection already says of its era, as each transport knows it. */
export interface ConnectionEra {
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
 * The era of one request on a connection: the connection's handshake revision when it has one
 * (unless the request carries its own per-request version and the connection lets it), else
 * what the request itself says (eraOf). The one place every transport decides it.
 */
export function requestEra(
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  connection: ConnectionEra,
): ProtocolEra {
  if (connection.handshake) {
    const meta = params?._meta as Record<string, unknown> | undefined;
    if (connection.sticky || typeof meta?.[META.protocolVersion] !== 'string') return 'legacy';
  }
  return eraOf(method, params, connection.versionHeader);
}

/**
 * The revision an `initialize` is answered with (basic/lifecycle "Version Negotiation", the same
 * text in every handshake revision): the one the client asked for when it is served, else the
 * latest handshake revision — 2026-07-28 has no initialize to answer with.
 */
export function negotiateHandshake(requested: unknown): string {
  return typeof requested === 'string' && LEGACY_PROTOCOL_VERSIONS.includes(requested)
    ? requested
    : (LEGACY_PROTOCOL_VERSIONS[0] as string);
}
