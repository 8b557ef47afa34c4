import { isTaskgateError } from '@taskgate/errors';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVER_URL, serverUrls } from './server-target.ts';

describe('serverUrls', () => {
  it('takes the base URL, or the /mcp URL of the same server, with or without a trailing slash', () => {
    for (const given of ['http://h:1', 'http://h:1/', 'http://h:1/mcp', 'http://h:1/mcp/']) {
      expect(serverUrls(given), given).toEqual({ base: 'http://h:1', mcp: 'http://h:1/mcp' });
    }
  });

  it('keeps a path prefix, as behind a proxy', () => {
    expect(serverUrls('https://example.com/taskgate')).toEqual({
      base: 'https://example.com/taskgate',
      mcp: 'https://example.com/taskgate/mcp',
    });
  });

  it('defaults to where taskgate start listens by default', () => {
    expect(serverUrls(DEFAULT_SERVER_URL)).toEqual({ base: 'http://127.0.0.1:8080', mcp: 'http://127.0.0.1:8080/mcp' });
  });

  it('refuses what is not an http(s) URL, naming it', () => {
    try {
      serverUrls('127.0.0.1:8080');
      expect.unreachable();
    } catch (error) {
      expect(isTaskgateError(error, 'TG_USAGE')).toBe(true);
      expect((error as Error).message).toBe('--url takes an http(s) URL of the server (got "127.0.0.1:8080")');
    }
  });
});
