import { describe, expect, it } from 'vitest';
import { META, requestEra } from './index.ts';

const versioned = { _meta: { [META.protocolVersion]: '2026-07-28' } };

// One decision for every transport: what the connection says (an initialized pipe or SSE
// connection, a session or a handshake header) and what the request says (its _meta version).
describe('requestEra', () => {
  it('is the request’s own word on a connection that says nothing', () => {
    const fresh = { handshake: false, sticky: false };
    expect(requestEra('initialize', { protocolVersion: '2025-06-18' }, fresh)).toBe('legacy');
    expect(requestEra('tools/list', versioned, fresh)).toBe('modern');
    expect(requestEra('tools/list', {}, fresh)).toBe('modern');
    expect(requestEra('tools/list', {}, { ...fresh, versionHeader: '2025-11-25' })).toBe('legacy');
  });

  it('is the connection’s on an initialized pipe, but for a request with its own version', () => {
    const pipe = { handshake: true, sticky: false };
    expect(requestEra('tools/list', {}, pipe)).toBe('legacy');
    expect(requestEra('ping', undefined, pipe)).toBe('legacy');
    expect(requestEra('tools/list', versioned, pipe)).toBe('modern');
  });

  it('is the connection’s whatever the request says where the connection is sticky (HTTP, SSE)', () => {
    const session = { handshake: true, sticky: true, versionHeader: '2025-11-25' };
    expect(requestEra('tools/list', versioned, session)).toBe('legacy');
    expect(requestEra('initialize', {}, session)).toBe('legacy');
  });
});
