import { REVISION as R2024_11_05 } from './2024-11-05/version.ts';
import { REVISION as R2025_03_26 } from './2025-03-26/version.ts';
import { REVISION as R2025_06_18 } from './2025-06-18/version.ts';
import { REVISION as HANDSHAKE } from './2025-11-25/version.ts';
import { REVISION as PER_REQUEST } from './2026-07-28/version.ts';
import type { RevisionInfo } from './revision-info.ts';

/**
 * The registry: every revision Taskgate speaks, newest first. A revision is added by giving it a
 * folder here and an entry in this list; nothing outside the folders names a version.
 */
export const REVISIONS: readonly RevisionInfo[] = [PER_REQUEST, HANDSHAKE, R2025_06_18, R2025_03_26, R2024_11_05];

export const LATEST_PROTOCOL_VERSION = PER_REQUEST.version;
/** Versions served by per-request metadata (no initialize handshake, no sessions). */
export const PER_REQUEST_VERSIONS: readonly string[] = versionsWhere((revision) => revision.kind === 'per-request');
/** Versions of the handshake revisions (opened by initialize), newest first. */
export const HANDSHAKE_VERSIONS: readonly string[] = versionsWhere((revision) => revision.kind === 'handshake');
/** What `supportedVersions` and -32022's `data.supported` list: every revision served. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = versionsWhere((revision) => revision.advertised);

function versionsWhere(predicate: (revision: RevisionInfo) => boolean): readonly string[] {
  return Object.freeze(REVISIONS.filter(predicate).map((revision) => revision.version));
}

/** The registry's entry for a version, or undefined for one not served. */
export function revisionInfo(version: string): RevisionInfo | undefined {
  return REVISIONS.find((revision) => revision.version === version);
}
