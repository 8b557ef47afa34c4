import type { RevisionInfo } from '../revision-info.ts';

/** 2026-07-28: per-request protocol fields in `_meta`, no initialize, no sessions. */
export const REVISION: RevisionInfo = {
  version: '2026-07-28',
  kind: 'per-request',
  advertised: true,
  implementationFields: ['title', 'description', 'icons', 'websiteUrl'],
};

/**
 * A date-shaped MCP-Protocol-Version before this belongs to a handshake revision (a client of an
 * older revision, answered by those rules); from it on, by the per-request rules. Drafts of
 * this revision were dated from 2026.
 */
export const PER_REQUEST_FROM = '2026-01-01';

/** `_meta` keys of the per-request protocol fields (basic/index "Per-request protocol fields"). */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  /** server/utilities/logging: the least severe level the request wants notifications/message for. */
  logLevel: 'io.modelcontextprotocol/logLevel',
} as const;
