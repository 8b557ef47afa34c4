import { REVISION as HANDSHAKE } from './2025-11-25/version.ts';
import { META, REVISION as PER_REQUEST, PER_REQUEST_ERA_FROM } from './2026-07-28/version.ts';
import type { ProtocolEra, RevisionInfo } from './revision-info.ts';

export { META } from './2026-07-28/version.ts';
export type { ProtocolEra, RevisionInfo } from './revision-info.ts';

/**
 * The registry: every revision Taskgate speaks, newest first. A revision is added by giving it a
 * folder here and an entry in this list; nothing outside the folders names a version.
 */
export const REVISIONS: readonly RevisionInfo[] = [PER_REQUEST, HANDSHAKE];

export const LATEST_PROTOCOL_VERSION = PER_REQUEST.version;
/** Versions served by per-request metadata (no initialize handshake, no sessions). */
export const MODERN_PROTOCOL_VERSIONS: readonly string[] = versionsWhere((revision) => revision.era === 'modern');
/** Versions of the initialize-handshake era that eraOf recognises and the handshake serves. */
export const LEGACY_PROTOCOL_VERSIONS: readonly string[] = versionsWhere((revision) => revision.era === 'legacy');
/** What `supportedVersions` and -32022's `data.supported` list: only what a client can actually use. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = versionsWhere((revision) => revision.advertised);

function versionsWhere(predicate: (revision: RevisionInfo) => boolean): readonly string[] {
  return Object.freeze(REVISIONS.filter(predicate).map((revision) => revision.version));
}

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
