// 2026-07-28's request checks live in its revision folder; these names stay importable from here.
export {
  checkMetaFields,
  checkRequestMetadata,
  type MetadataCheck,
  type RequestHeaders,
  type RequestMetadata,
} from './revisions/2026-07-28/request-metadata.ts';
