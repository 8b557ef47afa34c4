import type { RevisionInfo } from '../revision-info.ts';

/** 2025-11-25: the last revision opened by `initialize` (Streamable HTTP with sessions, tasks). */
export const REVISION: RevisionInfo = {
  version: '2025-11-25',
  kind: 'handshake',
  advertised: true,
  versionHeader: true,
  tasks: true,
  ssePriming: true,
  elicitationCompleteNotification: true,
  implementationFields: ['title', 'description', 'icons', 'websiteUrl'],
};
