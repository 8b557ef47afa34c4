import { describe, expect, it } from 'vitest';
import { toJsonRpcError } from './json-rpc-error.ts';
import { TaskgateError } from './taskgate-error.ts';

describe('toJsonRpcError', () => {
  it('reports a key reused with other arguments as -32602 with data.reason idempotency_key_mismatch', () => {
    const error = new TaskgateError('TG_IDEMPOTENCY_KEY_MISMATCH', 'key k was used for other arguments', {
      details: { operation: 'charge_account' },
    });
    expect(toJsonRpcError(error)).toEqual({
      code: -32602,
      message: 'key k was used for other arguments',
      data: { operation: 'charge_account', reason: 'idempotency_key_mismatch', code: 'TG_IDEMPOTENCY_KEY_MISMATCH' },
    });
  });

  it('reports unknown tools and invalid arguments as -32602, as the MCP spec says', () => {
    expect(toJsonRpcError(new TaskgateError('TG_TOOL_UNKNOWN', 'no tool x'))).toMatchObject({
      code: -32602,
      data: { reason: 'unknown_tool' },
    });
    expect(toJsonRpcError(new TaskgateError('TG_TOOL_ARGUMENTS_INVALID', 'bad'))).toMatchObject({
      code: -32602,
      data: { reason: 'invalid_arguments' },
    });
  });

  it('hides anything unexpected behind -32603', () => {
    expect(toJsonRpcError(new Error('secret connection string in here'))).toEqual({
      code: -32603,
      message: 'internal error',
      data: { code: 'TG_INTERNAL' },
    });
  });

  it("reports a database outage as Taskgate's -31503, outside the range JSON-RPC reserves, with data.code", () => {
    expect(
      toJsonRpcError(new TaskgateError('TG_SERVICE_UNAVAILABLE', 'db down', { details: { retryAfterSeconds: 5 } })),
    ).toEqual({ code: -31503, message: 'db down', data: { retryAfterSeconds: 5, code: 'TG_SERVICE_UNAVAILABLE' } });
  });
});
