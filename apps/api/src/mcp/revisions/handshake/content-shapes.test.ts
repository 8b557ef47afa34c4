import { describe, expect, it } from 'vitest';
import { PROFILE as R2024_11_05 } from '../2024-11-05/revision.ts';
import { PROFILE as R2025_03_26 } from '../2025-03-26/revision.ts';
import { PROFILE as R2025_06_18 } from '../2025-06-18/revision.ts';

// Content as each handshake revision defines it: a client's schema refuses a content type its
// revision lacks, and the whole result with it, so those items become text.
const LINK = { type: 'resource_link', uri: 'file:///a.csv', name: 'a.csv', title: 'Data', description: 'rows' };
const AUDIO = { type: 'audio', data: 'UklGRiQAAABXQVZF', mimeType: 'audio/wav' };
const TEXT = { type: 'text', text: 'ok' };

describe('handshake revisions’ content', () => {
  it('2024-11-05: links and audio become text; structured content goes into empty content as JSON', () => {
    expect(R2024_11_05.callResult({ content: [TEXT, LINK, AUDIO] })).toEqual({
      content: [
        TEXT,
        { type: 'text', text: 'Data: file:///a.csv — rows' },
        {
          type: 'text',
          text: '[audio/wav audio of about 12 bytes, left out: protocol revision 2024-11-05 has no audio content]',
        },
      ],
    });
    expect(R2024_11_05.callResult({ content: [], structuredContent: { rows: 3 } })).toEqual({
      content: [{ type: 'text', text: '{"rows":3}' }],
    });
    // Content that says it already: the structured copy just goes.
    expect(R2024_11_05.callResult({ content: [TEXT], structuredContent: { rows: 3 } })).toEqual({ content: [TEXT] });
    const prompt = {
      messages: [
        { role: 'user', content: LINK },
        { role: 'assistant', content: TEXT },
      ],
    };
    expect(R2024_11_05.contentResult(prompt)).toEqual({
      messages: [
        { role: 'user', content: { type: 'text', text: 'Data: file:///a.csv — rows' } },
        { role: 'assistant', content: TEXT },
      ],
    });
  });

  it('2025-03-26 keeps audio; 2025-06-18 keeps everything, as the same object', () => {
    expect(R2025_03_26.callResult({ content: [LINK, AUDIO] })).toEqual({
      content: [{ type: 'text', text: 'Data: file:///a.csv — rows' }, AUDIO],
    });
    const result = { content: [TEXT, LINK, AUDIO], structuredContent: {} };
    expect(R2025_06_18.callResult(result)).toBe(result);
    const plain = { content: [TEXT] };
    // Nothing to change: not even a copy (a shared result stays shared).
    expect(R2025_03_26.callResult(plain)).toBe(plain);
    expect(R2024_11_05.contentResult(plain)).toBe(plain);
  });
});
