// The revision registry lives in revisions/; these names stay importable from here.
export {
  eraOf,
  LATEST_PROTOCOL_VERSION,
  LEGACY_PROTOCOL_VERSIONS,
  META,
  MODERN_PROTOCOL_VERSIONS,
  type ProtocolEra,
  SUPPORTED_PROTOCOL_VERSIONS,
} from './revisions/index.ts';
