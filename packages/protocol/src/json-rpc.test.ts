import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyMessage, ErrorCode, type JsonRpcId } from './json-rpc.ts';

const validId = fc.oneof(fc.string(), fc.maxSafeInteger());
const invalidId = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double().filter((n) => !Number.isSafeInteger(n)),
  fc.array(fc.nat()),
  fc.object(),
);
const params = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }));

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

  describe('properties', () => {
    it('never throws, and every refusal is -32600 with an id that is either null or a valid id', () => {
      fc.assert(
        fc.property(fc.oneof(fc.anything(), fc.jsonValue(), fc.object({ withNullPrototype: true })), (value) => {
          const message = classifyMessage(value);
          if (message.kind !== 'invalid') return;
          expect(message.error.code).toBe(ErrorCode.InvalidRequest);
          expect(message.error.message).toMatch(/^Invalid Request: /);
          expect(message.id === null || typeof message.id === 'string' || Number.isSafeInteger(message.id)).toBe(true);
        }),
      );
    });

    it('reads a well-formed request back as it was sent', () => {
      fc.assert(
        fc.property(validId, fc.string({ minLength: 1 }), fc.option(params, { nil: undefined }), (id, method, p) => {
          const value = { jsonrpc: '2.0', id, method, ...(p === undefined ? {} : { params: p }) };
          expect(classifyMessage(value)).toEqual({ kind: 'request', id, method, params: p });
        }),
      );
    });

    it('reads a message without an id as a notification, and one with a bad id as invalid', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1 }), invalidId, (method, id) => {
          expect(classifyMessage({ jsonrpc: '2.0', method }).kind).toBe('notification');
          expect(classifyMessage({ jsonrpc: '2.0', id, method })).toMatchObject({ kind: 'invalid', id: null });
        }),
      );
    });

    it('refuses any jsonrpc but "2.0", echoing the id exactly when it is a valid id', () => {
      fc.assert(
        fc.property(
          fc.anything().filter((v) => v !== '2.0'),
          fc.oneof(validId, invalidId),
          (jsonrpc, id) => {
            const message = classifyMessage({ jsonrpc, id, method: 'tools/list' });
            const valid = typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));
            expect(message).toMatchObject({ kind: 'invalid', id: valid ? (id as JsonRpcId) : null });
          },
        ),
      );
    });

    it('takes non-object params for a refusal whatever else the message holds', () => {
      fc.assert(
        fc.property(
          validId,
          fc.oneof(fc.constant(null), fc.array(fc.jsonValue()), fc.string(), fc.double(), fc.boolean()),
          (id, bad) => {
            expect(classifyMessage({ jsonrpc: '2.0', id, method: 'm', params: bad })).toMatchObject({
              kind: 'invalid',
              id,
            });
          },
        ),
      );
    });
  });
});

describe('classifyMessage: responses', () => {
  it('takes a response with exactly one of result and error, and an id (null only for an error)', () => {
    expect(classifyMessage({ jsonrpc: '2.0', id: 'a', result: {} })).toEqual({ kind: 'response', id: 'a' });
    expect(classifyMessage({ jsonrpc: '2.0', id: 3, error: { code: -1, message: 'x' } })).toEqual({
      kind: 'response',
      id: 3,
    });
    expect(classifyMessage({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'x' } })).toEqual({
      kind: 'response',
      id: null,
    });
    const refused: [Record<string, unknown>, string][] = [
      [{ jsonrpc: '2.0', id: 'a', result: {}, error: { code: 1, message: 'x' } }, 'not both'],
      [{ jsonrpc: '2.0', id: { a: 1 }, result: {} }, 'needs the id'],
      [{ jsonrpc: '2.0', id: null, result: {} }, 'needs the id'],
      [{ jsonrpc: '2.0', id: 'a', error: 'bad' }, 'integer code'],
      // The message is read as text: anything else (even an object that cannot be made a string) is refused.
      [{ jsonrpc: '2.0', id: 'a', error: { code: -1, message: { toString: 1 } } }, 'string message'],
      [{ jsonrpc: '2.0', id: 'a', error: { code: -1 } }, 'string message'],
      [{ jsonrpc: '2.0', id: 'a', error: { code: 1.5, message: 'x' } }, 'integer code'],
      [{ jsonrpc: '2.0', id: 'a' }, 'a response has a result or an error'],
    ];
    for (const [value, message] of refused) {
      const classified = classifyMessage(value);
      expect(classified.kind, JSON.stringify(value)).toBe('invalid');
      expect((classified as { error: { message: string } }).error.message).toContain(message);
    }
  });
});
