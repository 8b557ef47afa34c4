import { type HandshakeProfile, unchanged } from '../handshake/profile.ts';

/**
 * 2025-06-18 (its changelog): titles, outputSchema and structuredContent, resource links — but no
 * tasks, so no `execution` on tools, no `task` param, no tasks/* methods, and a tool that only
 * runs as a task is not offered.
 */
export const PROFILE: HandshakeProfile = {
  version: '2025-06-18',
  tasks: false,
  progressMessages: true,
  toolEntry: unchanged,
  callResult: unchanged,
  contentResult: unchanged,
};
