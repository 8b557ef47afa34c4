import { type HandshakeProfile, without } from '../revision.ts';

/** 2024-11-05, the first revision: a tool is a name, a description and an input schema. */
export const PROFILE: HandshakeProfile = {
  version: '2024-11-05',
  tasks: false,
  toolEntry: (entry) => without(entry, ['title', 'outputSchema', 'annotations']),
  callResult: (result) => without(result, ['structuredContent']),
};
