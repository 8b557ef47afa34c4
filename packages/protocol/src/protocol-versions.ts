// The revision registry lives in revisions/; these names stay importable from here.
export {
  eraOf,
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  META,
  MODERN_PROTOCOL_VERSIONS,
  negotiateHandshake,
  type ProtocolEra,
  type RevisionInfo,
  revisionInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
  WITHOUT_VERSION_HEADER,
} from './revisions/index.ts';
