import { describe, expect, it } from 'vitest';
import { canonicalJson } from './retry-policy.ts';
import { sha256Hex } from './sha256.ts';
import { toolCatalogEntry, toolFingerprint } from './tool-fingerprint.ts';

const definition = {
  name: 'reserve_inventory',
  description: 'Reserves stock',
  inputSchema: { type: 'object', properties: { sku: { type: 'string' }, quantity: { type: 'integer' } } },
  retry: 'conditional',
  timeouts: { idleMs: 5_000, maxMs: 60_000 },
  handler: async () => ({ content: [] }),
};

describe('toolFingerprint', () => {
  it('is the SHA-256 of the canonical JSON of everything but the handler', () => {
    const { handler: _handler, ...rest } = definition;
    expect(toolFingerprint(definition)).toBe(sha256Hex(canonicalJson(rest)));
    expect(toolFingerprint(definition)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not depend on key order at any depth, nor on the handler', () => {
    const reordered = {
      handler: async () => ({ content: [{ type: 'text', text: 'other code' }] }),
      timeouts: { maxMs: 60_000, idleMs: 5_000 },
      retry: 'conditional',
      inputSchema: { properties: { quantity: { type: 'integer' }, sku: { type: 'string' } }, type: 'object' },
      description: 'Reserves stock',
      name: 'reserve_inventory',
    };
    expect(toolFingerprint(reordered)).toBe(toolFingerprint(definition));
  });

  it('changes with any field a caller sees, including ones it does not know of', () => {
    const base = toolFingerprint(definition);
    expect(toolFingerprint({ ...definition, description: 'Reserves stock.' })).not.toBe(base);
    expect(toolFingerprint({ ...definition, timeouts: { idleMs: 5_000 } })).not.toBe(base);
    expect(toolFingerprint({ ...definition, askFirst: {} })).not.toBe(base);
    expect(toolFingerprint({ ...definition, someFutureField: 1 })).not.toBe(base);
  });

  it('treats an undefined member as absent, as JSON does', () => {
    expect(toolFingerprint({ ...definition, title: undefined })).toBe(toolFingerprint(definition));
  });
});

describe('toolCatalogEntry', () => {
  it('gives the name, the fingerprint and the definition as the plain JSON it covers', () => {
    const entry = toolCatalogEntry(definition);
    expect(entry.name).toBe('reserve_inventory');
    expect(entry.fingerprint).toBe(toolFingerprint(definition));
    expect(entry.definition).not.toHaveProperty('handler');
    expect(entry.definition).toEqual(JSON.parse(JSON.stringify(definition)));
    // What the catalog stores fingerprints the same when read back.
    expect(toolFingerprint(JSON.parse(JSON.stringify(entry.definition)))).toBe(entry.fingerprint);
  });

  it('refuses a definition without a name', () => {
    expect(() => toolCatalogEntry({ description: 'x' })).toThrow(/name/);
  });
});
