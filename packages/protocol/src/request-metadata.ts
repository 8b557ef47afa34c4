// The per-request revision's checks live in its folder; these names stay importable from here.
export {
  checkMetaFields,
  checkRequestMetadata,
  type HeaderParameter,
  headerParameterProblem,
  headerParametersOf,
  type MetadataCheck,
  type RequestHeaders,
  type RequestMetadata,
} from './revisions/index.ts';
