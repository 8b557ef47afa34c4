import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listTaskEvents, type TaskRecord } from '@taskgate/db';
import { encodeHeaderValue } from '@taskgate/protocol';
import { defineTool, ToolProtocolError } from '@taskgate/sdk';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// POST /mcp, revision 2026-07-28, over Fastify's inject and over real sockets.
const database = useTestDatabase();
const toolError = defineTool({
  name: 'tool_error',
  description: 'returns a tool error',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    return { content: [{ type: 'text', text: 'no' }], isError: true };
  },
});
const protocolError = defineTool({
  name: 'protocol_error',
  description: 'fails with a JSON-RPC error',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler() {
    throw new ToolProtocolError(-32603, 'failed on purpose');
  },
});
let stepsGate = Promise.withResolvers<void>();
/** A durable tool that reports five steps back to back, as fast as its writes go. */
const quickSteps = defineTool({
  name: 'quick_steps',
  description: 'reports progress 1 to 5 at once',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(input, ctx) {
    // Held until the call's watch is subscribed: what is written before it is only the row's latest.
    await stepsGate.promise;
    const { long, lastMessage } = input as { long?: boolean; lastMessage?: string };
    for (let step = 1; step <= 5; step += 1) {
      const message = step === 5 && lastMessage ? lastMessage : `step ${step}`;
      ctx.progress(step, 5, long ? `${step}`.repeat(5_000) : message);
    }
    return { content: [{ type: 'text', text: 'done' }] };
  },
});
let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [toolError, protocolError, quickSteps] as never });
  await platform.startWorker();
  // Responses here are asserted as JSON or, with a progress token, SSE; the switch to SSE for a call
  // outliving a threshold has its own test (mcp-sse-threshold.test.ts), so it is out of reach here.
  api = await startApi(platform, database.url, {
    mcp: { allowedOrigins: ['https://app.example.com'], sseAfterMs: 600_000 },
  });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'mcp-http-test', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
let nextId = 1;

function rpc(method: string, params: Record<string, unknown> = {}, id: number | string = nextId++) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: META } };
}

/**
 * One call of quick_steps with a progress token, its handler released only once the call's watch
 * is subscribed (`beforeRelease` runs first); resolves with the task, the SSE messages and the
 * progress values the client heard.
 */
async function stepsCall(
  server: string,
  id: string,
  args: Record<string, unknown>,
  beforeRelease: (taskId: string) => void = () => {},
) {
  const body = {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'quick_steps', arguments: args, _meta: { ...META, progressToken: `token-${id}` } },
  };
  stepsGate = Promise.withResolvers<void>();
  const answered = fetch(`${server}/mcp`, { method: 'POST', headers: headersFor(body), body: JSON.stringify(body) });
  const { rows } = await waitForTask(
    () =>
      sql<{ id: string }>`
        SELECT id FROM tasks WHERE tool = 'quick_steps' AND status = 'working'`.execute(platform.db),
    (found) => found.rows.length === 1,
  );
  const taskId = rows[0]?.id as string;
  await waitForTask(
    async () => api.hub.subscribers(taskId),
    (count) => count > 0,
  );
  beforeRelease(taskId);
  stepsGate.resolve();
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages, read field by field.
  const messages: any[] = (await (await answered).text())
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => JSON.parse(frame.slice('data: '.length)));
  const values = messages
    .filter((message) => message.method === 'notifications/progress')
    .map((message) => message.params.progress as number);
  return { taskId, messages, values };
}

function headersFor(
  body: { method?: string; params?: Record<string, unknown> },
  overrides: Record<string, string | undefined> = {},
) {
  const name = body.params?.name;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    ...(body.method ? { 'mcp-method': body.method } : {}),
    ...(typeof name === 'string' ? { 'mcp-name': encodeHeaderValue(name) } : {}),
  };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete headers[key];
    else headers[key] = value;
  }
  return headers;
}

function post(body: unknown, overrides: Record<string, string | undefined> = {}) {
  return api.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: headersFor(body as never, overrides),
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function expectRpcError(response: LightMyRequestResponse, status: number, code: number) {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.json().error.code, response.body).toBe(code);
  return response.json();
}

describe('POST /mcp (2026-07-28)', () => {
  it('answers server/discover with its versions, capabilities, identity and cache hints', async () => {
    const response = await post(rpc('server/discover', {}, 'discover-1'));
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('application/json');
    expect(response.json()).toEqual({
      jsonrpc: '2.0',
      id: 'discover-1',
      result: expect.objectContaining({
        resultType: 'complete',
        supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
        capabilities: {
          tools: { listChanged: true },
          resources: { subscribe: true, listChanged: true },
          prompts: { listChanged: true },
          completions: {},
          logging: {},
          extensions: { 'io.modelcontextprotocol/tasks': {} },
        },
        ttlMs: expect.any(Number),
        cacheScope: 'public',
        _meta: {
          'io.modelcontextprotocol/serverInfo': {
            name: 'taskgate',
            version: expect.any(String),
            title: 'Taskgate',
            description: expect.any(String),
            icons: [expect.objectContaining({ mimeType: 'image/svg+xml' })],
          },
        },
      }),
    });
  });

  it('lists the tools with their input schemas', async () => {
    const { result } = (await post(rpc('tools/list'))).json();
    expect(result.resultType).toBe('complete');
    const names = result.tools.map((tool: { name: string }) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['greet', 'slow_compute', 'charge_account', 'reserve_inventory']));
    expect(result.tools.find((tool: { name: string }) => tool.name === 'greet').inputSchema.type).toBe('object');
  });

  it('runs tools/call as a request-mode task and answers with its CallToolResult', async () => {
    const response = await post(rpc('tools/call', { name: 'greet', arguments: { name: 'Ada' } }, 'call-1'));
    expect(response.statusCode, response.body).toBe(200);
    const { result } = response.json();
    expect(result).toMatchObject({ resultType: 'complete', content: [{ type: 'text' }] });
    expect(JSON.stringify(result.content)).toContain('Ada');
    const { rows } = await sql<{ mode: string; status: string }>`
      SELECT mode, status FROM tasks WHERE tool = 'greet' ORDER BY created_at DESC LIMIT 1`.execute(platform.db);
    expect(rows[0]).toEqual({ mode: 'request', status: 'completed' });
  });

  it('reports a tool error as a result with isError, and a protocol error as a JSON-RPC error', async () => {
    const failing = (await post(rpc('tools/call', { name: 'tool_error', arguments: {} }))).json();
    expect(failing.result).toMatchObject({ resultType: 'complete', isError: true });
    // failing_job runs only as a task: a client without the Tasks extension is told what it lacks.
    const taskOnly = expectRpcError(await post(rpc('tools/call', { name: 'failing_job', arguments: {} })), 400, -32021);
    expect(taskOnly.error.data).toEqual({
      requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    });
    const protocol = await post(rpc('tools/call', { name: 'protocol_error', arguments: {} }));
    expectRpcError(protocol, 200, -32603);
  });

  it('refuses an unknown tool and bad arguments with -32602, and creates nothing', async () => {
    const before = await countTasks();
    const unknown = expectRpcError(await post(rpc('tools/call', { name: 'no_such_tool', arguments: {} })), 200, -32602);
    expect(unknown.error.data.reason).toBe('unknown_tool');
    const bad = expectRpcError(await post(rpc('tools/call', { name: 'greet', arguments: { name: 5 } })), 200, -32602);
    expect(bad.error.data.reason).toBe('invalid_arguments');
    expectRpcError(await post(rpc('tools/call', { name: 'greet', arguments: [1] })), 200, -32602);
    expect(await countTasks()).toBe(before);
  });

  it('takes the idempotency key from the arguments: a replay returns the first result, a mismatch is -32602 idempotency_key_mismatch', async () => {
    const args = { account: 'acct-mcp', cents: 700, idempotencyKey: 'mcp-key-1' };
    const first = (await post(rpc('tools/call', { name: 'charge_account', arguments: args }))).json();
    const again = (await post(rpc('tools/call', { name: 'charge_account', arguments: args }))).json();
    expect(again.result.structuredContent).toEqual(first.result.structuredContent);
    const mismatch = expectRpcError(
      await post(rpc('tools/call', { name: 'charge_account', arguments: { ...args, cents: 701 } })),
      200,
      -32602,
    );
    expect(mismatch.error.data.reason).toBe('idempotency_key_mismatch');
    const { rows } = await sql<{ n: string }>`
      SELECT count(*) AS n FROM account_charges WHERE account = 'acct-mcp'`.execute(platform.db);
    expect(Number(rows[0]?.n)).toBe(1);
  });

  it('answers an unknown method with HTTP 404 and -32601', async () => {
    expectRpcError(await post(rpc('widgets/list')), 404, -32601);
  });

  it('answers -32020 (400) when the mirrored headers are missing or disagree with the body', async () => {
    const call = rpc('tools/call', { name: 'greet', arguments: { name: 'x' } });
    for (const overrides of [
      { 'mcp-protocol-version': undefined },
      { 'mcp-method': undefined },
      { 'mcp-method': 'tools/list' },
      { 'mcp-name': undefined },
      { 'mcp-name': 'slow_compute' },
    ]) {
      expectRpcError(await post(call, overrides), 400, -32020);
    }
  });

  it('answers -32022 (400) with data.supported for a version it does not speak, and -32602 (400) without the _meta fields', async () => {
    const future = {
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/list',
      params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
    };
    const unsupported = expectRpcError(await post(future, { 'mcp-protocol-version': '2099-01-01' }), 400, -32022);
    expect(unsupported.error.data).toEqual({
      supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'],
      requested: '2099-01-01',
    });
    const bare = { jsonrpc: '2.0', id: 10, method: 'tools/list', params: {} };
    expectRpcError(await post(bare), 400, -32602);
  });

  it('accepts a notification with 202 and no body', async () => {
    const response = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    expect(response.statusCode).toBe(202);
    expect(response.body).toBe('');
  });

  it('answers GET and DELETE with 405', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await api.app.inject({ method, url: '/mcp' });
      expect(response.statusCode).toBe(405);
      expect(response.headers.allow).toBe('POST');
    }
  });

  it('applies the HTTP rules: Origin 403, Accept 406, Content-Type 415, size 413, malformed JSON -32700, invalid JSON-RPC -32600', async () => {
    const list = rpc('tools/list');
    expect((await post(list, { origin: 'https://evil.example.net' })).statusCode).toBe(403);
    expect((await post(list, { origin: 'https://app.example.com' })).statusCode).toBe(200);
    expect((await post(list, { origin: 'http://localhost:5173' })).statusCode).toBe(200);
    expect((await post(list, { accept: 'application/json' })).statusCode).toBe(406);
    expect((await post(list, { 'content-type': 'text/plain' })).statusCode).toBe(415);
    const huge = rpc('tools/call', { name: 'greet', arguments: { name: 'x'.repeat(1_100_000) } });
    expect((await post(huge)).statusCode).toBe(413);
    expectRpcError(await post('{"jsonrpc": "2.0", "id": 1, "method":', { 'mcp-method': 'tools/list' }), 400, -32700);
    const notRpc = expectRpcError(await post({ jsonrpc: '1.0', id: 4, method: 'tools/list' }), 400, -32600);
    expect(notRpc.id).toBe(4);
  });

  it('answers a call with a progress token as SSE: increasing notifications/progress, then the response', async () => {
    const server = await listen();
    const body = {
      jsonrpc: '2.0',
      id: 'progress-1',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 0.6 }, _meta: { ...META, progressToken: 'p-1' } },
    };
    const response = await fetch(`${server}/mcp`, {
      method: 'POST',
      headers: headersFor(body),
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    const messages = (await response.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice('data: '.length)));
    const progress = messages.filter((message) => message.method === 'notifications/progress');
    expect(progress.length).toBeGreaterThan(0);
    const values = progress.map((message) => message.params.progress);
    expect(values).toEqual([...values].sort((a, b) => a - b));
    expect(new Set(values).size).toBe(values.length);
    expect(progress.every((message) => message.params.progressToken === 'p-1')).toBe(true);
    const last = messages.at(-1);
    expect(last).toMatchObject({ id: 'progress-1', result: { resultType: 'complete' } });
    expect(messages.indexOf(last)).toBe(messages.length - 1);
  });

  it('tells every progress value a durable task wrote, however close together (none folded by a row read)', async () => {
    const server = await listen();
    for (let round = 0; round < 5; round += 1) {
      const written: number[] = [];
      let unsubscribe = () => {};
      const { messages } = await stepsCall(server, `steps-${round}`, {}, (taskId) => {
        unsubscribe = api.hub.subscribe(taskId, (notification) => {
          if (notification?.event === 'progress') written.push(notification.progress?.value ?? -1);
        });
      });
      const progress = messages.filter((message) => message.method === 'notifications/progress');
      expect(progress.map((message) => [message.params.progress, message.params.message])).toEqual(
        [1, 2, 3, 4, 5].map((step) => [step, `step ${step}`]),
      );
      expect(messages.at(-1)).toMatchObject({ id: `steps-${round}`, result: { resultType: 'complete' } });
      // One write per value: the last is not written again at the commit (it was not held back).
      unsubscribe();
      expect(written).toEqual([1, 2, 3, 4, 5]);
    }
  });

  it('writes the last progress once more when its write failed, so the client and the row end with it', async () => {
    // The write of step 5 fails once (a sequence counts outside the failing transaction).
    await sql`CREATE SEQUENCE progress_failures`.execute(platform.db);
    await sql`
      CREATE FUNCTION fail_progress_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('progress_failures') = 1 THEN RAISE EXCEPTION 'injected progress write failure'; END IF;
        RETURN NEW;
      END $$`.execute(platform.db);
    await sql`
      CREATE TRIGGER fail_progress_once BEFORE UPDATE ON tasks FOR EACH ROW
      WHEN (NEW.progress_message = 'fails once') EXECUTE FUNCTION fail_progress_once()`.execute(platform.db);
    try {
      const server = await listen();
      const { taskId, values } = await stepsCall(server, 'fails-once', { lastMessage: 'fails once' });
      expect(values).toEqual([1, 2, 3, 4, 5]);
      const { rows: stored } = await sql<{ progress_value: number; status: string }>`
        SELECT progress_value, status FROM tasks WHERE id = ${taskId}::uuid`.execute(platform.db);
      expect(stored).toEqual([{ progress_value: 5, status: 'completed' }]);
      // It did fail once.
      const { rows: counted } = await sql<{ last_value: string }>`SELECT last_value FROM progress_failures`.execute(
        platform.db,
      );
      expect(Number(counted[0]?.last_value)).toBeGreaterThanOrEqual(2);
    } finally {
      await sql`DROP TRIGGER fail_progress_once ON tasks`.execute(platform.db);
      await sql`DROP FUNCTION fail_progress_once()`.execute(platform.db);
      await sql`DROP SEQUENCE progress_failures`.execute(platform.db);
    }
  });

  it('tells the last value of progress too long for a notification, read from the row', async () => {
    const server = await listen();
    for (let round = 0; round < 3; round += 1) {
      // The values' notifications go without them (over 4,000 bytes): told from reads of the row,
      // which may fold some, but always in order and always the last.
      const { messages, values } = await stepsCall(server, `long-${round}`, { long: true });
      expect(values).toEqual([...new Set(values)].sort((a, b) => a - b));
      expect(values.at(-1)).toBe(5);
      expect(messages.at(-1)).toMatchObject({ id: `long-${round}`, result: { resultType: 'complete' } });
    }
  });

  it('keeps a stalled reader to the latest progress and still delivers the final response when it reads again', async () => {
    const server = await listen();
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'stalled',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 1 }, _meta: { ...META, progressToken: 's' } },
    });
    const text = await new Promise<string>((resolve, reject) => {
      const request = http.request(`${server}/mcp`, {
        method: 'POST',
        headers: {
          ...headersFor({ method: 'tools/call', params: { name: 'slow_compute' } }),
          'content-length': Buffer.byteLength(body),
        },
      });
      request.on('error', reject);
      request.on('response', (response) => {
        // The reader stops reading until the task is over, then reads everything.
        response.pause();
        void waitForTask(
          async () => {
            const { rows } = await sql<{ status: string }>`
              SELECT status FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '1'`.execute(
              platform.db,
            );
            return rows[0]?.status;
          },
          (status) => status === 'completed',
        ).then(() => {
          let received = '';
          response.on('data', (chunk: Buffer) => {
            received += chunk.toString();
          });
          response.on('end', () => resolve(received));
          response.resume();
        }, reject);
      });
      request.end(body);
    });
    const messages = text
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => JSON.parse(frame.slice('data: '.length)));
    expect(messages.at(-1)).toMatchObject({ id: 'stalled', result: { resultType: 'complete' } });
    const values = messages
      .filter((message) => message.method === 'notifications/progress')
      .map((message) => message.params.progress);
    expect(values).toEqual([...new Set(values)].sort((a, b) => a - b));
  });

  it('treats closing the response stream as cancellation: the task ends cancelled and the request gets nothing', async () => {
    const server = await listen();
    const body = JSON.stringify(rpc('tools/call', { name: 'slow_compute', arguments: { seconds: 5 } }, 'slow-1'));
    const received: Buffer[] = [];
    const request = http.request(`${server}/mcp`, {
      method: 'POST',
      headers: {
        ...headersFor({ method: 'tools/call', params: { name: 'slow_compute' } }),
        'content-length': Buffer.byteLength(body),
      },
    });
    request.on('response', (response) => response.on('data', (chunk: Buffer) => received.push(chunk)));
    request.on('error', () => {});
    request.end(body);
    const task = await waitForTask(
      async () => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM tasks WHERE tool = 'slow_compute' AND status = 'working' AND attempt >= 1 AND cancel_requested_at IS NULL`.execute(
          platform.db,
        );
        return rows[0]?.id;
      },
      (id) => id !== undefined,
    );
    request.destroy();
    const ended = await waitForTask(
      () => platform.service.get('default', task as string),
      (current: TaskRecord) => current.status !== 'working',
    );
    expect(ended.status).toBe('cancelled');
    expect(ended.cancelReason).toBe('the client closed the response stream');
    const history = await listTaskEvents(platform.db, 'default', task as string);
    expect(history.map((event) => event.type)).toContain('cancel_requested');
    expect(Buffer.concat(received).length).toBe(0);
  });
});

async function countTasks(): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM tasks`.execute(platform.db);
  return Number(rows[0]?.n);
}

async function listen(): Promise<string> {
  if (!api.app.server.listening) await api.app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
}

describe('POST /mcp: both kinds of revision, tenancy and loopback', () => {
  it('speaks 2025-11-25 after an initialize: a session, results without resultType, 404 for an unknown session', async () => {
    const legacy = (body: unknown, headers: Record<string, string | undefined>) =>
      api.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: Object.fromEntries(
          Object.entries({
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...headers,
          }).filter(([, value]) => value !== undefined),
        ) as Record<string, string>,
        payload: JSON.stringify(body),
      });
    const initialize = await legacy(
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
      },
      {},
    );
    expect(initialize.statusCode).toBe(200);
    expect(initialize.json().result).toMatchObject({
      protocolVersion: '2025-11-25',
      capabilities: { tools: { listChanged: true } },
    });
    const session = initialize.headers['mcp-session-id'] as string;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    expect((await legacy({ jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).statusCode).toBe(202);
    const list = await legacy({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers);
    expect(list.json().result.tools.length).toBeGreaterThan(0);
    expect(list.json().result.resultType).toBeUndefined();
    const unknownMethod = await legacy({ jsonrpc: '2.0', id: 2, method: 'widgets/list' }, headers);
    expect(unknownMethod.statusCode).toBe(200);
    expect(unknownMethod.json().error.code).toBe(-32601);
    const stranger = await legacy(
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      { ...headers, 'mcp-session-id': crypto.randomUUID() },
    );
    expect(stranger.statusCode).toBe(404);
    const noVersion = await legacy({ jsonrpc: '2.0', id: 4, method: 'tools/list' }, { 'mcp-session-id': session });
    expect(noVersion.statusCode).toBe(400);

    // A POSTed notifications/cancelled (what deployed clients send) cancels the call in its session.
    const running = legacy(
      { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 7 } } },
      headers,
    );
    const taskId = await waitForTask(
      async () => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '7' AND attempt >= 1`.execute(
          platform.db,
        );
        return rows[0]?.id;
      },
      (found) => found !== undefined,
    );
    const cancel = await legacy(
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'old client gave up' } },
      headers,
    );
    expect(cancel.statusCode).toBe(202);
    const answered = await running;
    expect(answered.statusCode).toBe(204);
    expect(answered.body).toBe('');
    const ended = await waitForTask(
      () => platform.service.get('default', taskId as string),
      (task: TaskRecord) => task.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'old client gave up' });

    // DELETE ends the session.
    const closed = await api.app.inject({ method: 'DELETE', url: '/mcp', headers: { 'mcp-session-id': session } });
    expect(closed.statusCode).toBe(204);
    expect((await legacy({ jsonrpc: '2.0', id: 6, method: 'tools/list' }, headers)).statusCode).toBe(404);
  });

  it('requires a bearer token when tokens are configured, and the loopback Host when bound to loopback', async () => {
    const guarded = await startApi(platform, database.url, {
      tokens: new Map([['mcp-test-token-0123456', 'acme']]),
      mcp: { loopbackOnly: true },
    });
    try {
      const list = rpc('tools/list');
      const call = (overrides: Record<string, string | undefined>) =>
        guarded.app.inject({
          method: 'POST',
          url: '/mcp',
          headers: headersFor(list, overrides),
          payload: JSON.stringify(list),
        });
      const anonymous = await call({ host: 'localhost:8080' });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.headers['www-authenticate']).toContain('Bearer');
      const authorized = { authorization: 'Bearer mcp-test-token-0123456' };
      expect((await call({ ...authorized, host: 'localhost:8080' })).statusCode).toBe(200);
      expect((await call({ ...authorized, host: '127.0.0.1:8080' })).statusCode).toBe(200);
      // A DNS-rebinding page reaches the loopback server under its own name.
      expect((await call({ ...authorized, host: 'attacker.example:8080' })).statusCode).toBe(403);
    } finally {
      await guarded.close();
    }
  });
});
