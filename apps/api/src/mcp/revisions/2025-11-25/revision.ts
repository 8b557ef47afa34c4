import { type HandshakeProfile, unchanged } from '../handshake/profile.ts';

/** 2025-11-25: everything the handshake methods offer, with this revision's own tasks. */
export const PROFILE: HandshakeProfile = {
  version: '2025-11-25',
  tasks: true,
  progressMessages: true,
  toolEntry: unchanged,
  callResult: unchanged,
  contentResult: unchanged,
};
