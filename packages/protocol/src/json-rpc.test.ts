import { describe, expect, it } from 'vitest';
import { classifyMessage, ErrorCode } from './json-rpc.ts';

describe('classifyMessage', () => {
  it('tells requests, notifications and responses apart', () => {
    expect(classifyMessage({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).toEqual({
      kind: 'request',
      id: 1,
      method: 'tools/list',
      params: undefined,
    });
    expect(
      classifyMessage({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
    ).toMatchObject({
      kind: 'notification',
      method: 'notifications/cancelled',
    });
    expect(classifyMessage({ jsonrpc: '2.0', id: 'x', result: {} })).toEqual({ kind: 'response', id: 'x' });
  });

  it('answers -32600 for what is not a JSON-RPC 2.0 message, echoing the id when it could be read', () => {
    const cases: [unknown, string | number | null][] = [
      [null, null],
      ['text', null],
      [[{ jsonrpc: '2.0', id: 1, method: 'a' }], null],
      [{ id: 3, method: 'a' }, 3],
      [{ jsonrpc: '1.0', id: 4, method: 'a' }, 4],
      [{ jsonrpc: '2.0', id: 5 }, 5],
      [{ jsonrpc: '2.0', id: 6, method: '' }, 6],
      [{ jsonrpc: '2.0', id: 7, method: 'a', params: [1] }, 7],
      [{ jsonrpc: '2.0', id: 1.5, method: 'a' }, null],
      [{ jsonrpc: '2.0', id: null, method: 'a' }, null],
      [{ jsonrpc: '2.0', id: 8, method: 'a', result: 1 }, 8],
    ];
    for (const [value, id] of cases) {
      const message = classifyMessage(value);
      expect(message.kind, JSON.stringify(value)).toBe('invalid');
      if (message.kind === 'invalid') {
        expect(message.id).toBe(id);
        expect(message.error.code).toBe(ErrorCode.InvalidRequest);
      }
    }
  });
});
