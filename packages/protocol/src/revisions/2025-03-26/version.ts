import type { RevisionInfo } from '../revision-info.ts';

/**
 * 2025-03-26: Streamable HTTP and sessions, tool annotations, JSON-RPC batches (received; the
 * initialize request must not be batched); no MCP-Protocol-Version header yet.
 */
export const REVISION: RevisionInfo = { version: '2025-03-26', kind: 'handshake', advertised: true, batches: true };

/**
 * A handshake-revision request over HTTP without MCP-Protocol-Version, and without a session that says
 * otherwise, is of this revision (2025-06-18 transports "Protocol Version Header": the server
 * SHOULD assume it), which predates the header.
 */
export const WITHOUT_VERSION_HEADER = REVISION.version;
