/** Which way a revision is spoken: per-request `_meta` (modern) or an initialize handshake (legacy). */
export type ProtocolEra = 'modern' | 'legacy';

/** What the registry knows of one revision; everything a revision does differently lives in its folder. */
export interface RevisionInfo {
  readonly version: string;
  readonly era: ProtocolEra;
  /** Listed in server/discover's `supportedVersions` and in -32022's `data.supported`. */
  readonly advertised: boolean;
}
