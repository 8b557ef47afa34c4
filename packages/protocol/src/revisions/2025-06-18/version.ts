import type { RevisionInfo } from '../revision-info.ts';

/** 2025-06-18: structured tool output, elicitation, MCP-Protocol-Version required; no tasks, no batches. */
export const REVISION: RevisionInfo = {
  version: '2025-06-18',
  kind: 'handshake',
  advertised: true,
  versionHeader: true,
  implementationFields: ['title'],
};
