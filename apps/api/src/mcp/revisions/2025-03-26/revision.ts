import {
  type HandshakeProfile,
  linkAsText,
  mapContent,
  without,
  withoutStructuredContent,
} from '../handshake/profile.ts';

/**
 * 2025-03-26: tool annotations, audio content and progress messages; before 2025-06-18's titles,
 * outputSchema, structuredContent (the text content of a result says the same) and resource links
 * (sent as text), and no tasks.
 */
export const PROFILE: HandshakeProfile = {
  version: '2025-03-26',
  tasks: false,
  progressMessages: true,
  toolEntry: (entry) => without(entry, ['title', 'outputSchema', '_meta']),
  callResult: (result) => mapContent(withoutStructuredContent(result), linkAsText),
  contentResult: (result) => mapContent(result, linkAsText),
};
