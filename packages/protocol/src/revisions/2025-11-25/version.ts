import type { RevisionInfo } from '../revision-info.ts';

/**
 * 2025-11-25: the last revision opened by `initialize` (Streamable HTTP with sessions). Served for
 * the clients deployed today, but not advertised in `supportedVersions` or -32022's
 * `data.supported`: those name what a per-request client can switch to.
 */
export const REVISION: RevisionInfo = { version: '2025-11-25', era: 'legacy', advertised: false };
