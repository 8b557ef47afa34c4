import { META } from '@taskgate/protocol';
import { describe, expect, it } from 'vitest';
import { discoverResult, initializeResult } from './server-info.ts';

// basic/lifecycle's Implementation: a server may say how to present itself. 2025-06-18 defines
// `title`; 2025-11-25 and 2026-07-28 also `description`, `icons` and `websiteUrl`; the revisions
// before define name and version only, and their clients get nothing more.
const server = { name: 'taskgate', version: '1.2.3' };

describe('serverInfo, as each revision defines an Implementation', () => {
  it('has a title, a description and an icon from 2025-11-25 on, a title in 2025-06-18, neither before', () => {
    const full = initializeResult(server, '2025-11-25').serverInfo as Record<string, unknown>;
    expect(full).toMatchObject({ name: 'taskgate', version: '1.2.3', title: 'Taskgate' });
    expect(full.description).toEqual(expect.any(String));
    expect(full.icons).toEqual([
      { src: expect.stringMatching(/^data:image\/svg\+xml;base64,/), mimeType: 'image/svg+xml', sizes: ['any'] },
    ]);
    const icon = (full.icons as { src: string }[])[0]?.src as string;
    expect(Buffer.from(icon.slice(icon.indexOf(',') + 1), 'base64').toString()).toMatch(/^<svg [^>]*xmlns=/);
    expect(initializeResult(server, '2025-06-18').serverInfo).toEqual({ ...server, title: 'Taskgate' });
    expect(initializeResult(server, '2025-03-26').serverInfo).toEqual(server);
    expect(initializeResult(server, '2024-11-05').serverInfo).toEqual(server);
    expect((discoverResult(server)._meta as Record<string, unknown>)[META.serverInfo]).toEqual(full);
  });
});
