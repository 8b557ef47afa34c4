// The revision registry lives in revisions/; these names stay importable from here.
export {
  type ConnectionEra,
  eraOf,
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  META,
  MODERN_PROTOCOL_VERSIONS,
  negotiateHandshake,
  type ProtocolEra,
  type RevisionInfo,
  requestEra,
  revisionInfo,
  SUPPORTED_PROTOCOL_VERSIONS,
  WITHOUT_VERSION_HEADER,
} from './revisions/index.ts';
