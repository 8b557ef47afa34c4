import { defineResource } from '@taskgate/sdk';
import { describe, expect, it } from 'vitest';
import { ContentRunError, MAX_CONTENT_BYTES, readResource } from './content-run.ts';

// A read's size bound is the size of what is sent: the contents array as JSON, brackets and
// commas included, not the sum of its items (which many small items would slip past).
const context = { tenant: 'acme', signal: new AbortController().signal };
const URI = 'many://items';

function resourceOf(items: number, textBytes: number) {
  return {
    kind: 'resource' as const,
    definition: defineResource({
      uri: URI,
      name: 'many',
      read: () => Array.from({ length: items }, () => ({ text: 'x'.repeat(textBytes) })),
    }),
  };
}

describe('readResource’s size bound', () => {
  it('counts the array’s brackets and commas: items that fit one by one can still be too many together', async () => {
    const items = 2_000;
    const itemOverhead = Buffer.byteLength(JSON.stringify({ uri: URI, text: '' }));
    // The items alone add up to just under the bound; with the 2,001 separators they are over it.
    const textBytes = Math.floor(MAX_CONTENT_BYTES / items) - itemOverhead;
    const sent = items * (itemOverhead + textBytes) + items + 1;
    expect(items * (itemOverhead + textBytes)).toBeLessThanOrEqual(MAX_CONTENT_BYTES);
    expect(sent).toBeGreaterThan(MAX_CONTENT_BYTES);
    const refused = await readResource(resourceOf(items, textBytes), URI, context).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ContentRunError);
    expect((refused as Error).message).toBe(
      `resource ${URI} returned ${sent} bytes as JSON, more than the ${MAX_CONTENT_BYTES} one answer may be (a large output belongs in storage the answer links to)`,
    );
  });
});
