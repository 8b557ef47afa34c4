import { describe, expect, it } from 'vitest';
import { META, requestRevisionKind } from './index.ts';

const versioned = { _meta: { [META.protocolVersion]: '2026-07-28' } };

// One decision for every transport: what the connection says (an initialized pipe or SSE
// connection, a session or a handshake header) and what the request says (its _meta version).
describe('requestRevisionKind', () => {
  it('is the request’s own word on a connection that says nothing', () => {
    const fresh = { handshake: false, sticky: false };
    expect(requestRevisionKind('initialize', { protocolVersion: '2025-06-18' }, fresh)).toBe('handshake');
    expect(requestRevisionKind('tools/list', versioned, fresh)).toBe('per-request');
    expect(requestRevisionKind('tools/list', {}, fresh)).toBe('per-request');
    expect(requestRevisionKind('tools/list', {}, { ...fresh, versionHeader: '2025-11-25' })).toBe('handshake');
  });

  it('is the connection’s on an initialized pipe, but for a request with its own version', () => {
    const pipe = { handshake: true, sticky: false };
    expect(requestRevisionKind('tools/list', {}, pipe)).toBe('handshake');
    expect(requestRevisionKind('ping', undefined, pipe)).toBe('handshake');
    expect(requestRevisionKind('tools/list', versioned, pipe)).toBe('per-request');
  });

  it('is the connection’s whatever the request says where the connection is sticky (HTTP, SSE)', () => {
    const session = { handshake: true, sticky: true, versionHeader: '2025-11-25' };
    expect(requestRevisionKind('tools/list', versioned, session)).toBe('handshake');
    expect(requestRevisionKind('initialize', {}, session)).toBe('handshake');
  });
});
