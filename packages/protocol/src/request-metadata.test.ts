import { describe, expect, it } from 'vitest';
import { encodeHeaderValue } from './header-values.ts';
import { ErrorCode } from './json-rpc.ts';
import { META, revisionKindOf } from './protocol-versions.ts';
import { checkMetaFields, checkRequestMetadata } from './request-metadata.ts';

const meta = (version = '2026-07-28') => ({
  [META.protocolVersion]: version,
  [META.clientCapabilities]: {},
  [META.clientInfo]: { name: 'test', version: '1' },
});
const call = (name = 'greet', version = '2026-07-28') => ({ name, arguments: {}, _meta: meta(version) });
const headers = (overrides: Record<string, string | string[] | undefined> = {}) => ({
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'greet',
  ...overrides,
});

describe('checkRequestMetadata (2026-07-28)', () => {
  it('accepts a request whose headers mirror its body', () => {
    expect(checkRequestMetadata(headers(), 'tools/call', call())).toEqual({
      ok: true,
      metadata: { protocolVersion: '2026-07-28', clientCapabilities: {}, clientInfo: { name: 'test', version: '1' } },
    });
    expect(
      checkRequestMetadata(headers({ 'mcp-method': 'tools/list', 'mcp-name': undefined }), 'tools/list', {
        _meta: meta(),
      }).ok,
    ).toBe(true);
  });

  it('answers -32602 when a required _meta field is missing', () => {
    for (const params of [{ name: 'greet' }, { name: 'greet', _meta: { [META.protocolVersion]: '2026-07-28' } }]) {
      const check = checkRequestMetadata(headers(), 'tools/call', params);
      expect(check).toMatchObject({ ok: false, httpStatus: 400, error: { code: ErrorCode.InvalidParams } });
    }
  });

  it('answers -32020 when a mirrored header is missing, malformed or different from the body', () => {
    const cases: Record<string, string | string[] | undefined>[] = [
      { 'mcp-protocol-version': undefined },
      { 'mcp-method': undefined },
      { 'mcp-name': undefined },
      { 'mcp-method': 'tools/list' },
      { 'mcp-name': 'slow_compute' },
      { 'mcp-name': 'gr\u00e9et' },
      { 'mcp-name': ['greet', 'greet'] },
    ];
    for (const overrides of cases) {
      const check = checkRequestMetadata(headers(overrides), 'tools/call', call());
      expect(check, JSON.stringify(overrides)).toMatchObject({
        ok: false,
        httpStatus: 400,
        error: { code: ErrorCode.HeaderMismatch },
      });
    }
    const versions = checkRequestMetadata(
      headers({ 'mcp-protocol-version': '2026-07-28' }),
      'tools/call',
      call('greet', '2099-01-01'),
    );
    expect(versions).toMatchObject({ ok: false, error: { code: ErrorCode.HeaderMismatch } });
  });

  it('names a body value that is not a string by its JSON, whatever keys it has', () => {
    for (const [name, shown] of [
      [{ toString: 1 }, '{"toString":1}'],
      [{ valueOf: null, toString: null }, '{"valueOf":null,"toString":null}'],
      [7, '7'],
      [undefined, 'nothing'],
    ] as const) {
      const check = checkRequestMetadata(headers(), 'tools/call', { ...call(), name });
      expect(check).toMatchObject({
        ok: false,
        httpStatus: 400,
        error: {
          code: ErrorCode.HeaderMismatch,
          message: `Header mismatch: Mcp-Name header value 'greet' does not match body value '${shown}'`,
        },
      });
    }
  });

  it('compares Mcp-Name after Base64 decoding', () => {
    const name = 'wetter-für-köln';
    expect(checkRequestMetadata(headers({ 'mcp-name': encodeHeaderValue(name) }), 'tools/call', call(name)).ok).toBe(
      true,
    );
  });

  it('answers -32022 with data.supported and data.requested for a version it does not implement', () => {
    const check = checkRequestMetadata(
      headers({ 'mcp-protocol-version': '2099-01-01' }),
      'tools/call',
      call('greet', '2099-01-01'),
    );
    expect(check).toEqual({
      ok: false,
      httpStatus: 400,
      error: {
        code: ErrorCode.UnsupportedProtocolVersion,
        message: 'Unsupported protocol version: 2099-01-01',
        data: {
          supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
          requested: '2099-01-01',
        },
      },
    });
  });
});

describe('revisionKindOf', () => {
  it('judges an initialize and an older version header as handshake, the rest as per-request', () => {
    expect(revisionKindOf('initialize', { protocolVersion: '2025-11-25' }, undefined)).toBe('handshake');
    expect(revisionKindOf('tools/call', { name: 'greet' }, '2025-11-25')).toBe('handshake');
    expect(revisionKindOf('tools/call', call(), '2026-07-28')).toBe('per-request');
    expect(revisionKindOf('tools/call', { name: 'greet' }, undefined)).toBe('per-request');
    expect(revisionKindOf('server/discover', { _meta: meta() }, '2025-11-25')).toBe('per-request');
  });
});

describe('the order of the metadata checks', () => {
  it('names the supported versions to a client of an unsupported one, whatever else its _meta lacks', () => {
    const check = checkMetaFields({ _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } });
    expect(check).toMatchObject({
      ok: false,
      httpStatus: 400,
      error: { code: -32022, data: { requested: '2099-01-01' } },
    });
  });
});
