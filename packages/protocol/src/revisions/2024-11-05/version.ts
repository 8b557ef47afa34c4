import type { RevisionInfo } from '../revision-info.ts';

/**
 * 2024-11-05: the first revision: tools without annotations, titles or structured output. Served
 * over stdio and over Streamable HTTP's initialize; its own HTTP+SSE transport is not served.
 */
export const REVISION: RevisionInfo = { version: '2024-11-05', kind: 'handshake', advertised: true };
