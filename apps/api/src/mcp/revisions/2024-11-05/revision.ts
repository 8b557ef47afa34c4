import {
  audioAsText,
  type HandshakeProfile,
  linkAsText,
  mapContent,
  without,
  withoutStructuredContent,
} from '../handshake/profile.ts';

const VERSION = '2024-11-05';
/** Content types this revision lacks: audio (2025-03-26) and resource links (2025-06-18), as text. */
const toKnownContent = (item: Readonly<Record<string, unknown>>) => audioAsText(VERSION)(linkAsText(item));

/**
 * 2024-11-05, the first revision: a tool is a name, a description and an input schema; content
 * is text, image or an embedded resource.
 */
export const PROFILE: HandshakeProfile = {
  version: VERSION,
  tasks: false,
  progressMessages: false,
  toolEntry: (entry) => without(entry, ['title', 'outputSchema', 'annotations', '_meta']),
  callResult: (result) => mapContent(withoutStructuredContent(result), toKnownContent),
  contentResult: (result) => mapContent(result, toKnownContent),
};
