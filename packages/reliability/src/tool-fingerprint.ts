import { canonicalJson } from './retry-policy.ts';
import { sha256Hex } from './sha256.ts';

/**
 * The identity of a tool's published definition: which version of a tool a worker serves. API
 * processes list and validate from the catalog, so two workers serving one name with different
 * fingerprints is version skew the API must be able to see.
 */

/** What a worker publishes for one tool (packages/db's publishTools takes these). */
export interface ToolCatalogEntry {
  readonly name: string;
  /** toolFingerprint of `definition`. */
  readonly fingerprint: string;
  /** The definition as plain JSON: what the catalog stores and API processes serve. */
  readonly definition: Readonly<Record<string, unknown>>;
}

/**
 * The definition without what no caller can see: the handler, and any other function at any depth
 * (canonicalJson leaves functions and undefined members out). Every other field counts, including
 * ones added later: a field wrongly counted only costs a spurious "changed", a field wrongly left
 * out would let two different definitions pass for the same version.
 */
function callerFacing(definition: Readonly<Record<string, unknown>>): string {
  const { handler: _handler, ...rest } = definition;
  return canonicalJson(rest);
}

/**
 * SHA-256 (hex) of the canonical JSON of a tool definition minus its handler: the same whatever
 * order its keys were written in, and the same after a round trip through jsonb (which reorders
 * keys and keeps only JSON values).
 */
export function toolFingerprint(definition: Readonly<Record<string, unknown>>): string {
  return sha256Hex(callerFacing(definition));
}

/**
 * The catalog entry of a tool definition (a ToolDefinition, or any object with a string `name`):
 * its fingerprint and the definition reduced to the JSON that fingerprint covers.
 */
export function toolCatalogEntry(definition: Readonly<Record<string, unknown>>): ToolCatalogEntry {
  const { name } = definition;
  if (typeof name !== 'string' || name === '') throw new TypeError('a tool definition needs a non-empty string name');
  const canonical = callerFacing(definition);
  return { name, fingerprint: sha256Hex(canonical), definition: JSON.parse(canonical) };
}
