import { PassThrough } from 'node:stream';
import { StreamConnection, TaskEventsHub } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { connectStdio, type StdioClient, stdioCore } from '../support/stdio-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// JSON-RPC batches on stdio (2025-03-26 basic/index "Batching": a server MUST receive them; the
// initialize request MUST NOT be batched; 2025-06-18 removed them): each element is handled as a
// line of its own, and the responses go out together as one array once every request settled.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let api: Awaited<ReturnType<typeof serveApi>>;

const echo = defineTool<{ text: string }>({
  name: 'batch_echo',
  description: 'Echoes its text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  retry: 'safe',
  inline: true,
  async handler({ text }) {
    return { content: [{ type: 'text', text }] };
  },
});
/** Called each time batch_forever's handler starts (a test awaits it before it cancels). */
let foreverStarted: () => void = () => {};
/** Waits until cancelled: its call settles only through the cancel. */
const forever = defineTool({
  name: 'batch_forever',
  description: 'Runs until cancelled.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    foreverStarted();
    await ctx.sleep(600_000);
    return { content: [] };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [echo, forever] });
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await hub.stop();
  await platform.stop();
});

async function pipe(protocolVersion?: string): Promise<StdioClient> {
  const client = connectStdio(stdioCore(platform, hub));
  if (protocolVersion !== undefined) {
    client.send({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion, capabilities: {} } });
    expect(await client.answerTo('init')).toMatchObject({ result: { protocolVersion } });
  }
  return client;
}

const arrays = (client: StdioClient) => client.received.filter((message) => Array.isArray(message)) as unknown[][];
const rpc = (id: string | number, method: string, params?: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params ? { params } : {}),
});

describe('a 2025-03-26 pipe', () => {
  it('answers a batch with one array: a response per request, none for notifications', async () => {
    const client = await pipe('2025-03-26');
    client.send([
      rpc('p', 'ping'),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      rpc('c', 'tools/call', { name: 'batch_echo', arguments: { text: 'hi' } }),
      rpc('l', 'tools/list'),
      { jsonrpc: '2.0', id: 'bad' },
      rpc('i', 'initialize', { protocolVersion: '2025-03-26' }),
      rpc('p', 'ping'),
    ]);
    await client.until(() => arrays(client).length === 1);
    const [answer] = arrays(client);
    const byId = new Map((answer as { id: unknown }[]).map((response) => [response.id, response]));
    expect(answer).toHaveLength(6);
    expect(byId.get('c')).toMatchObject({ result: { content: [{ type: 'text', text: 'hi' }] } });
    expect(byId.get('l')).toMatchObject({
      result: { tools: expect.arrayContaining([expect.objectContaining({ name: 'batch_echo' })]) },
    });
    expect(byId.get('bad')).toMatchObject({ error: { code: -32600 } });
    expect(byId.get('i')).toMatchObject({ error: { code: -32600, message: expect.stringContaining('initialize') } });
    // An id may be used again once its request is answered, in a batch too.
    const pings = (answer as { id: unknown }[]).filter((response) => response.id === 'p');
    expect(pings).toEqual([
      { jsonrpc: '2.0', id: 'p', result: {} },
      { jsonrpc: '2.0', id: 'p', result: {} },
    ]);
    // Nothing was written outside the array but the initialize answer.
    expect(client.received).toHaveLength(2);
    client.input.end();
    await client.server.closed;
  });

  it('waits for every request of a batch; a cancelled one leaves no response in it', async () => {
    const client = await pipe('2025-03-26');
    client.send([
      rpc('slow', 'tools/call', { name: 'batch_forever', arguments: {} }),
      rpc('fast', 'tools/call', { name: 'batch_echo', arguments: { text: 'done' } }),
      // The id of a request still running: refused, in the batch's answer.
      rpc('slow', 'ping'),
    ]);
    // The fast answer is held with the batch while the slow call runs: a ping on its own line
    // (answered as soon as it is read) gets through first.
    client.send(rpc('after', 'ping'));
    await client.answerTo('after');
    expect(arrays(client)).toEqual([]);
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'enough' } });
    await client.until(() => arrays(client).length === 1);
    // The array holds the responses in the order they settled.
    expect(arrays(client)[0]).toHaveLength(2);
    expect(arrays(client)[0]).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: 'fast',
          result: expect.objectContaining({ content: [{ type: 'text', text: 'done' }] }),
        }),
        { jsonrpc: '2.0', id: 'slow', error: { code: -32600, message: 'request id "slow" is already in use' } },
      ]),
    );
    // A batch of notifications only is answered with nothing.
    client.send([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
    client.send(rpc('last', 'ping'));
    await client.answerTo('last');
    expect(arrays(client)).toHaveLength(1);
    client.input.end();
    await client.server.closed;
  });

  it('refuses an empty batch, and one of more than 100 messages, as one -32600', async () => {
    const client = await pipe('2025-03-26');
    client.send([]);
    client.send(Array.from({ length: 101 }, (_, i) => rpc(i, 'ping')));
    const refusals = await client.until((all) => all.length === 3);
    expect(refusals.slice(1)).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'an empty JSON-RPC batch' } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringContaining('at most 100') } },
    ]);
    client.input.end();
    await client.server.closed;
  });
});

describe('a pipe of another revision', () => {
  it('refuses a batch as one -32600: before initialize, and in revisions without batches', async () => {
    for (const protocolVersion of [undefined, '2025-06-18', '2025-11-25']) {
      const client = await pipe(protocolVersion);
      client.send([rpc('p', 'ping')]);
      const refused = await client.until((all) => all.some((m) => (m as { id?: unknown }).id === null));
      expect(refused.at(-1)).toMatchObject({ id: null, error: { code: -32600 } });
      expect(arrays(client)).toEqual([]);
      client.input.end();
      await client.server.closed;
    }
  });
});

/** A POST as a 2025-03-26 client makes it: no MCP-Protocol-Version, the session's id once it has one. */
function post(body: unknown, headers: Record<string, string> = {}) {
  return fetch(api.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

async function httpSession(protocolVersion: string): Promise<Record<string, string>> {
  const init = await post(rpc('init', 'initialize', { protocolVersion, capabilities: {} }));
  expect(((await init.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(protocolVersion);
  const session = { 'mcp-session-id': init.headers.get('mcp-session-id') as string };
  return protocolVersion === '2025-03-26' ? session : { ...session, 'mcp-protocol-version': protocolVersion };
}

/** The JSON-RPC messages of an SSE body, in order. */
const events = (body: string) =>
  body
    .split('\n\n')
    .filter((frame) => frame.startsWith('data: '))
    .map((frame) => JSON.parse(frame.slice(6)) as unknown);

describe('a 2025-03-26 session over Streamable HTTP', () => {
  it('answers a batch with one JSON array of its responses; notifications and responses alone get 202', async () => {
    const session = await httpSession('2025-03-26');
    const response = await post(
      [
        rpc('p', 'ping'),
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        rpc('c', 'tools/call', { name: 'batch_echo', arguments: { text: 'over http' } }),
        rpc('i', 'initialize', { protocolVersion: '2025-03-26' }),
        { jsonrpc: '2.0', id: 'bad' },
      ],
      session,
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('application/json');
    const answer = (await response.json()) as { id: unknown }[];
    const byId = new Map(answer.map((message) => [message.id, message]));
    expect(answer).toHaveLength(4);
    expect(byId.get('p')).toEqual({ jsonrpc: '2.0', id: 'p', result: {} });
    expect(byId.get('c')).toMatchObject({ result: { content: [{ type: 'text', text: 'over http' }] } });
    expect(byId.get('i')).toMatchObject({ error: { code: -32600 } });
    expect(byId.get('bad')).toMatchObject({ error: { code: -32600 } });
    const quiet = await post([{ jsonrpc: '2.0', method: 'notifications/initialized' }], session);
    expect(quiet.status).toBe(202);
  });

  it('streams a batch whose call reports progress: the notifications, then the array as the last event', async () => {
    const session = await httpSession('2025-03-26');
    const response = await post(
      [
        rpc('slow', 'tools/call', {
          name: 'slow_compute',
          arguments: { seconds: 0.4 },
          _meta: { progressToken: 'tok' },
        }),
        rpc('p', 'ping'),
      ],
      session,
    );
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const messages = events(await response.text());
    const last = messages.at(-1) as { id: unknown; result?: unknown }[];
    expect(Array.isArray(last)).toBe(true);
    expect(last.map((message) => message.id).sort()).toEqual(['p', 'slow']);
    const progress = messages.slice(0, -1) as { method: string; params: { progressToken: unknown } }[];
    expect(progress.length).toBeGreaterThan(0);
    for (const message of progress)
      expect(message).toMatchObject({ method: 'notifications/progress', params: { progressToken: 'tok' } });
  });

  it('a POSTed cancel ends one request of a batch: the batch is answered without it', async () => {
    const session = await httpSession('2025-03-26');
    const running = new Promise<void>((resolve) => {
      foreverStarted = resolve;
    });
    const answered = post(
      [
        rpc('forever', 'tools/call', { name: 'batch_forever', arguments: {} }),
        rpc('echo', 'tools/call', { name: 'batch_echo', arguments: { text: 'kept' } }),
      ],
      session,
    );
    // The cancel goes once the call runs (before, it would find nothing to cancel).
    await running;
    const cancel = await post(
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'forever' } },
      session,
    );
    expect(cancel.status).toBe(202);
    const body = (await (await answered).json()) as { id: unknown }[];
    expect(body.map((message) => message.id)).toEqual(['echo']);
  });

  it('refuses a batch in a revision without batches, and without a session, as one 400 -32600', async () => {
    for (const headers of [await httpSession('2025-06-18'), await httpSession('2025-11-25'), {}]) {
      const response = await post([rpc('p', 'ping')], headers);
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ id: null, error: { code: -32600 } });
    }
    const session = await httpSession('2025-03-26');
    for (const batch of [[], Array.from({ length: 101 }, (_, i) => rpc(i, 'ping'))]) {
      const response = await post(batch, session);
      expect(response.status).toBe(400);
    }
    // Without a session, a response answers nothing: refused whole, as a single POST of it is,
    // before its requests run.
    const sessionless = await post([rpc('p', 'ping'), { jsonrpc: '2.0', id: 'asked', result: {} }], {
      'mcp-protocol-version': '2025-03-26',
    });
    expect(sessionless.status).toBe(400);
    expect(await sessionless.json()).toMatchObject({
      id: null,
      error: { code: -32600, message: 'a response answers a request of this server, which only a session receives' },
    });
  });
});

describe('ids used again, and answers a hostile client sends', () => {
  it('stdio: a batch that cancels a call and uses its id again answers the new call and everything else', async () => {
    const client = await pipe('2025-03-26');
    client.send([
      rpc('x', 'tools/call', { name: 'batch_forever', arguments: {} }),
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'x' } },
      rpc('x', 'tools/call', { name: 'batch_echo', arguments: { text: 'second x' } }),
      rpc('p', 'ping'),
    ]);
    await client.until(() => arrays(client).length === 1);
    const [answer] = arrays(client) as { id: unknown; result?: unknown }[][];
    expect(answer).toHaveLength(2);
    expect(answer).toContainEqual({ jsonrpc: '2.0', id: 'p', result: {} });
    expect(answer).toContainEqual(
      expect.objectContaining({
        id: 'x',
        result: expect.objectContaining({ content: [{ type: 'text', text: 'second x' }] }),
      }),
    );
    // Nothing escaped the batch, and nothing more comes for it.
    client.send(rpc('last', 'ping'));
    await client.answerTo('last');
    expect(arrays(client)).toHaveLength(1);
    expect(client.received.filter((message) => !Array.isArray(message)).map((m) => m.id)).toEqual(['init', 'last']);
    client.input.end();
    await client.server.closed;
  });

  it('HTTP: a cancel later in the same batch cancels its call; nothing is answered, not even []', async () => {
    const session = await httpSession('2025-03-26');
    const response = await post(
      [
        rpc('slow', 'tools/call', { name: 'slow_compute', arguments: { seconds: 6.5 }, _meta: { progressToken: 't' } }),
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'in the batch' } },
      ],
      session,
    );
    const body = await response.text();
    expect(body).not.toContain('data: []');
    expect(events(body).filter((message) => Array.isArray(message))).toEqual([]);
    const { rows } = await sql<{ status: string; cancel_reason: string | null }>`
      SELECT status, cancel_reason FROM tasks WHERE tool = 'slow_compute' AND arguments->>'seconds' = '6.5'`.execute(
      platform.db,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]?.cancel_reason).toBe('in the batch');
  });

  it('a client error response whose message is not a string is refused, and the call it answers fails cleanly', async () => {
    const client = await pipe('2025-11-25');
    // Over HTTP such a response is 400 -32600, before anything matches it.
    const session = await httpSession('2025-11-25');
    const refused = await post(
      { jsonrpc: '2.0', id: 'taskgate-x', error: { code: -1, message: { toString: 1 } } },
      session,
    );
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(-32600);
    // On stdio it is the same -32600, and the pipe serves on.
    client.send({ jsonrpc: '2.0', id: 'taskgate-x', error: { code: -1, message: { toString: 1 } } });
    client.send(rpc('after', 'ping'));
    expect(await client.answerTo('after')).toEqual({ jsonrpc: '2.0', id: 'after', result: {} });
    expect(client.received.some((m) => (m as { error?: { code?: number } }).error?.code === -32600)).toBe(true);
    client.input.end();
    await client.server.closed;
  });
});

describe('a request StdioFront answered before the server existed', () => {
  it('a duplicate id it answered (a ping while a call with that id runs) is not answered again; the call still is', async () => {
    // As StdioFront hands over: it answered `ping` "x" once, while tools/call "x" was still held.
    let frontAnswered = 1;
    const input = new PassThrough();
    const output = new PassThrough();
    const server = new StreamConnection({
      core: stdioCore(platform, hub),
      input,
      output,
      tenantId: 'default',
      server: { name: 'taskgate', version: 'test' },
      logger: silentLogger,
      answered: (id) => {
        if (id !== 'x' || frontAnswered === 0) return false;
        frontAnswered -= 1;
        return true;
      },
    });
    const received: { id?: unknown; result?: unknown; error?: unknown }[] = [];
    output.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line) received.push(JSON.parse(line));
    });
    input.write(`${JSON.stringify(rpc('i', 'initialize', { protocolVersion: '2025-11-25' }))}\n`);
    // A durable call: still running when the ping with its id arrives.
    input.write(`${JSON.stringify(rpc('x', 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.5 } }))}\n`);
    input.write(`${JSON.stringify(rpc('x', 'ping'))}\n`);
    const answer = await waitForTask(
      async () => received.find((message) => message.id === 'x'),
      (message) => message !== undefined,
    );
    // The one message for "x" is the call's result: the duplicate ping was the front's to answer.
    expect(answer).toMatchObject({ result: { content: [{ type: 'text' }] } });
    input.end();
    await server.closed;
    expect(received.filter((message) => message.id === 'x')).toHaveLength(1);
    expect(frontAnswered).toBe(0);
  });
});
