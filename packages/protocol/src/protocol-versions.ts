/** The revisions Taskgate speaks: 2026-07-28 first, 2025-11-25 for the clients deployed today. */
export const LATEST_PROTOCOL_VERSION = '2026-07-28';
/** Versions served by per-request metadata (no initialize handshake, no sessions). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];
/**
 * Versions of the initialize-handshake era (Streamable HTTP of 2025-03-26 … 2025-11-25) that
 * eraOf recognises. They are not served yet, so they are not in SUPPORTED_PROTOCOL_VERSIONS: an
 * error's `data.supported` lists only what a client can actually use.
 */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = ['2025-11-25'];
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [...MODERN_PROTOCOL_VERSIONS];

export type ProtocolEra = 'modern' | 'legacy';

/** `_meta` keys of 2026-07-28's per-request protocol fields. */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const;

/**
 * Which era a request belongs to. A request that carries the per-request version in `_meta` is
 * modern; an `initialize` without it, or a request whose MCP-Protocol-Version header names a
 * legacy version, belongs to the handshake era. Everything else is judged as modern, so its
 * missing fields are reported by the modern rules.
 */
export function eraOf(
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  versionHeader: string | undefined,
): ProtocolEra {
  const meta = params?._meta as Record<string, unknown> | undefined;
  if (meta && typeof meta[META.protocolVersion] === 'string') return 'modern';
  if (method === 'initialize') return 'legacy';
  if (versionHeader !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(versionHeader) && versionHeader < '2026-01-01')
    return 'legacy';
  return 'modern';
}
