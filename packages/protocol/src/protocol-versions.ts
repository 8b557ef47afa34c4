// The revision registry lives in revisions/; these names stay importable from here.
export {
  HANDSHAKE_VERSIONS,
  LATEST_PROTOCOL_VERSION,
  META,
  negotiateHandshake,
  PER_REQUEST_VERSIONS,
  type RevisionHints,
  type RevisionInfo,
  type RevisionKind,
  requestRevisionKind,
  revisionInfo,
  revisionKindOf,
  SUPPORTED_PROTOCOL_VERSIONS,
  WITHOUT_VERSION_HEADER,
} from './revisions/index.ts';
