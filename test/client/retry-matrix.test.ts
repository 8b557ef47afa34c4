import { TaskgateClient } from '@taskgate/client';
import { isTaskgateError } from '@taskgate/errors';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type RecordedRequest, startRecorder } from '../support/http-recorder.ts';
import { useServedPlatform } from '../support/task-platform.ts';

// The retry matrix over a real socket to Taskgate's /mcp (2026-07-28), with the first answer of
// each call lost by a proxy after the server finished it — the classic: the work is done, the
// client never hears. Safe: retried with a new id. Conditional: retried with the same key and
// arguments, and the ledger holds one charge. Unsafe: not retried; the caller gets a handle.
let letters = 0;
const sendLetter = defineTool({
  name: 'send_letter',
  description: 'Posts a letter: not idempotent, so never repeated automatically.',
  inputSchema: {
    type: 'object',
    properties: { to: { type: 'string' } },
    required: ['to'],
    additionalProperties: false,
  },
  retry: 'unsafe',
  async handler() {
    letters += 1;
    return { content: [{ type: 'text', text: 'posted' }] };
  },
});

const database = useTestDatabase();
const served = useServedPlatform(database, { tools: [sendLetter] });

const isCallOf = (tool: string) => (request: RecordedRequest) =>
  request.messages.some(
    (message) => message.method === 'tools/call' && (message.params as { name?: string }).name === tool,
  );

/** A client behind a proxy that loses the answer to the first call of `tool`. */
async function losingFirstAnswerOf(tool: string, options: { goAwayOnRetry?: boolean; loseAll?: boolean } = {}) {
  let lost = false;
  const recorder = await startRecorder(served.api.mcpUrl.href, {
    lose: (request) => {
      if ((lost && !options.loseAll) || !isCallOf(tool)(request)) return false;
      lost = true;
      return true;
    },
  });
  const retries: unknown[] = [];
  const client = await TaskgateClient.connectHttp(
    { url: recorder.url },
    {
      clientId: 'retry-test',
      onRetry: (retry) => {
        retries.push(retry);
        // Its listener and connections are gone before the retry's wait begins (close() does
        // both at once): every later attempt is refused.
        if (options.goAwayOnRetry) void recorder.close();
      },
    },
  );
  const calls = () =>
    recorder.requests
      .filter(isCallOf(tool))
      .flatMap((request) => request.messages)
      .map((message) => message as { id: number; params: { arguments: Record<string, unknown> } });
  return {
    client,
    retries,
    calls,
    async close() {
      await client.close();
      await recorder.close();
    },
  };
}

describe('the retry matrix, with the first answer lost', () => {
  it('safe: called again with a new id and the same arguments', async () => {
    const run = await losingFirstAnswerOf('slow_compute');
    try {
      const result = await run.client.callTool('slow_compute', { seconds: 0, label: 'retry-safe' });
      expect(result.isError).not.toBe(true);
      const calls = run.calls();
      expect(calls).toHaveLength(2);
      expect(calls[1]?.id).not.toBe(calls[0]?.id);
      expect(calls[1]?.params.arguments).toEqual(calls[0]?.params.arguments);
      expect(run.retries).toEqual([
        { tool: 'slow_compute', attempt: 1, delayMs: expect.any(Number), failure: 'outcome-unknown' },
      ]);
    } finally {
      await run.close();
    }
  });

  it('conditional: called again with the same key and arguments, and charged once', async () => {
    const run = await losingFirstAnswerOf('charge_account');
    try {
      const result = await run.client.callTool('charge_account', { account: 'acct-retry', cents: 125 });
      expect(result.isError).not.toBe(true);
      const calls = run.calls();
      expect(calls).toHaveLength(2);
      const key = calls[0]?.params.arguments.idempotencyKey;
      expect(typeof key).toBe('string');
      expect(calls[1]?.params.arguments).toEqual(calls[0]?.params.arguments);
      const charges = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM account_charges WHERE account = 'acct-retry'`.execute(served.platform.db);
      expect(charges.rows[0]?.n).toBe(1);
    } finally {
      await run.close();
    }
  });

  it('conditional, and the server unreachable for every retry: the handle, not the refusal', async () => {
    const run = await losingFirstAnswerOf('charge_account', { goAwayOnRetry: true });
    try {
      const error = await run.client
        .callTool('charge_account', { account: 'acct-gone', cents: 80 }, { retry: { attempts: 3, baseMs: 1 } })
        .then(
          () => null,
          (reason: unknown) => reason,
        );
      // The first attempt committed: ECONNREFUSED on the next two says nothing about it.
      expect(isTaskgateError(error) && error.code).toBe('TG_CALL_OUTCOME_UNKNOWN');
      const handle = (error as { details: { handle: { idempotencyKey: string } } }).details.handle;
      expect(handle).toMatchObject({ tool: 'charge_account', attempts: 3, retryClass: 'conditional' });
      expect(handle.idempotencyKey).toBe(run.calls()[0]?.params.arguments.idempotencyKey);
      expect(run.retries).toEqual([
        expect.objectContaining({ attempt: 1, failure: 'outcome-unknown' }),
        expect.objectContaining({ attempt: 2, failure: 'unavailable' }),
      ]);
      const charges = await sql<{ n: number }>`
        SELECT count(*)::int AS n FROM account_charges WHERE account = 'acct-gone'`.execute(served.platform.db);
      expect(charges.rows[0]?.n).toBe(1);
    } finally {
      await run.client.close();
    }
  });

  it('safe, every answer lost: the retries share the one max clock, never reset by an attempt', async () => {
    const run = await losingFirstAnswerOf('slow_compute', { loseAll: true });
    try {
      const started = performance.now();
      const error = await run.client
        .callTool(
          'slow_compute',
          { seconds: 0.3, label: 'retry-max-clock' },
          { maxMs: 1_000, retry: { attempts: 20, baseMs: 1 } },
        )
        .then(
          () => null,
          (reason: unknown) => reason,
        );
      const elapsed = performance.now() - started;
      // Each attempt takes the tool's 300 ms: twenty of them would take six seconds.
      expect(isTaskgateError(error) && error.code).toBe('TG_CALL_OUTCOME_UNKNOWN');
      expect(elapsed).toBeLessThan(2_000);
      const { attempts } = (error as { details: { handle: { attempts: number } } }).details.handle;
      expect(attempts).toBeGreaterThanOrEqual(2);
      expect(attempts).toBeLessThanOrEqual(5);
      // The last attempt may be cut by the max clock before the proxy has its body.
      expect(run.calls().length).toBeGreaterThanOrEqual(attempts - 1);
      expect(run.calls().length).toBeLessThanOrEqual(attempts);
    } finally {
      await run.close();
    }
  });

  it('unsafe: not called again; the caller gets a handle to look it up', async () => {
    const run = await losingFirstAnswerOf('send_letter');
    try {
      const before = letters;
      const error = await run.client.callTool('send_letter', { to: 'x' }).then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(isTaskgateError(error) && error.code).toBe('TG_CALL_OUTCOME_UNKNOWN');
      expect((error as { details?: unknown }).details).toEqual({
        handle: {
          tool: 'send_letter',
          idempotencyKey: null,
          argumentsFingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
          attempts: 1,
          retryClass: 'unsafe',
        },
      });
      expect(run.calls()).toHaveLength(1);
      expect(run.retries).toEqual([]);
      // It ran: exactly the case a retry would have doubled.
      expect(letters).toBe(before + 1);
    } finally {
      await run.close();
    }
  });
});

describe('what Taskgate publishes for each tool', () => {
  it('the retry class, the idempotency key and the clocks, in the tool list’s _meta', async () => {
    const client = await TaskgateClient.connectHttp({ url: served.api.mcpUrl.href });
    try {
      expect(await client.policyOf('charge_account')).toEqual({
        retry: 'conditional',
        // Required: the call above went through only because the client made the key.
        idempotencyKey: 'required',
        timeouts: { maxMs: 60_000 },
        source: 'published',
      });
      expect(await client.policyOf('slow_compute')).toEqual({
        retry: 'safe',
        idempotencyKey: 'none',
        timeouts: { idleMs: 5_000, maxMs: 660_000 },
        source: 'published',
      });
      expect((await client.policyOf('send_letter')).retry).toBe('unsafe');
    } finally {
      await client.close();
    }
  });
});
