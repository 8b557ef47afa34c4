import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform } from '../support/task-platform.ts';

// Every released revision, negotiated as basic/lifecycle says: initialize is answered with the
// client's revision when it is served, else the latest handshake revision; each session then gets
// what its revision defines — tasks only in 2025-11-25, titles and structured output from
// 2025-06-18, annotations from 2025-03-26.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let hub: TaskEventsHub;
let core: McpCore;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await serveApi(platform, database.url);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = stdioCore(platform, hub);
});
afterAll(async () => {
  await hub.stop();
  await api.close();
  await platform.stop();
});

/** What these tests read of an answer. */
interface RpcBody {
  readonly result: {
    readonly protocolVersion: string;
    readonly capabilities: Record<string, unknown>;
    readonly tools: Record<string, unknown>[];
    readonly [field: string]: unknown;
  };
  readonly error: { readonly code: number; readonly message: string };
}

const HANDSHAKE = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;

async function post(body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(api.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as RpcBody };
}

const initialize = (protocolVersion: unknown) => ({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** A session of `asked`, its answer, and a request function carrying the session's headers. */
async function session(asked: unknown, header = true) {
  const opened = await post(initialize(asked));
  const version = opened.body.result.protocolVersion as string;
  const headers: Record<string, string> = { 'mcp-session-id': opened.headers.get('mcp-session-id') as string };
  if (header) headers['mcp-protocol-version'] = version;
  let id = 1;
  const rpc = (method: string, params: Record<string, unknown> = {}) =>
    post({ jsonrpc: '2.0', id: id++, method, params }, headers);
  return { answer: opened.body.result, version, rpc };
}

describe('initialize over HTTP', () => {
  it.each(HANDSHAKE)('asked for %s, answers %s', async (revision) => {
    expect((await session(revision)).version).toBe(revision);
  });

  it.each([
    ['a draft never released', '2024-10-07'],
    ['the per-request revision, which has no initialize', '2026-07-28'],
    ['a number', 20251125],
    ['nothing', undefined],
  ])('asked for %s, answers the latest handshake revision', async (_name, asked) => {
    expect((await session(asked)).version).toBe('2025-11-25');
  });

  it('declares tasks only where the revision has them', async () => {
    expect((await session('2025-11-25')).answer.capabilities).toHaveProperty('tasks');
    for (const revision of ['2025-06-18', '2025-03-26', '2024-11-05']) {
      expect((await session(revision)).answer.capabilities).not.toHaveProperty('tasks');
    }
  });
});

describe('what each revision gets', () => {
  const toolsOf = async (revision: string) => {
    const { rpc } = await session(revision);
    return (await rpc('tools/list')).body.result.tools as Record<string, unknown>[];
  };

  it('tools/list: execution only with tasks; task-only tools hidden without them; fields by revision', async () => {
    const latest = await toolsOf('2025-11-25');
    expect(latest.find((tool) => tool.name === 'failing_job')).toMatchObject({
      execution: { taskSupport: 'required' },
    });
    const june = await toolsOf('2025-06-18');
    expect(june.map((tool) => tool.name)).not.toContain('failing_job');
    expect(june.find((tool) => tool.name === 'greet')).toMatchObject({
      title: 'Greet',
      annotations: expect.anything(),
    });
    for (const tool of june) expect(tool).not.toHaveProperty('execution');
    const march = await toolsOf('2025-03-26');
    const greet = march.find((tool) => tool.name === 'greet');
    expect(greet).toMatchObject({ annotations: expect.anything() });
    expect(greet).not.toHaveProperty('title');
    for (const tool of march) expect(tool).not.toHaveProperty('outputSchema');
    const first = await toolsOf('2024-11-05');
    for (const tool of first) expect(Object.keys(tool).sort()).toEqual(['description', 'inputSchema', 'name']);
  });

  it('tools/call: structuredContent from 2025-06-18 on; a task param means nothing without tasks', async () => {
    const june = await session('2025-06-18');
    expect((await june.rpc('tools/call', { name: 'greet', arguments: { name: 'J' } })).body.result).toHaveProperty(
      'structuredContent',
    );
    // Without tasks the param is ignored: the call is answered with its result, not a task.
    const ignored = await june.rpc('tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: {} });
    expect(ignored.body.result).toMatchObject({ content: [{ type: 'text' }] });
    expect(ignored.body.result).not.toHaveProperty('task');
    expect((await june.rpc('tasks/list')).body.error.code).toBe(-32601);
    const march = await session('2025-03-26');
    const greeting = (await march.rpc('tools/call', { name: 'greet', arguments: { name: 'M' } })).body.result;
    expect(greeting).toMatchObject({ content: [{ type: 'text', text: 'Hello, M!' }] });
    expect(greeting).not.toHaveProperty('structuredContent');
  });

  it('a 2025-03-26 client sends no MCP-Protocol-Version: its session says which revision it is', async () => {
    const march = await session('2025-03-26', false);
    const tools = (await march.rpc('tools/list')).body.result.tools as Record<string, unknown>[];
    expect(tools.find((tool) => tool.name === 'greet')).not.toHaveProperty('title');
  });

  it('a session of 2025-06-18 or later must send MCP-Protocol-Version (400 without it)', async () => {
    for (const revision of ['2025-06-18', '2025-11-25']) {
      const headerless = await session(revision, false);
      const refused = await headerless.rpc('tools/list');
      expect({ revision, status: refused.status, code: refused.body.error?.code }).toEqual({
        revision,
        status: 400,
        code: -32600,
      });
    }
  });

  it('an unsupported MCP-Protocol-Version is 400, naming what is served', async () => {
    const refused = await post(
      { jsonrpc: '2.0', id: 9, method: 'tools/list' },
      { 'mcp-protocol-version': '2024-10-07' },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('2025-03-26');
  });
});

describe('initialize over stdio', () => {
  it.each(HANDSHAKE)('asked for %s, answers %s, and the pipe speaks it', async (revision) => {
    const client = connectStdio(core);
    client.send(initialize(revision));
    expect(await client.answerTo(0)).toMatchObject({ result: { protocolVersion: revision } });
    client.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const tools = ((await client.answerTo(1)) as { result: { tools: Record<string, unknown>[] } }).result.tools;
    expect(tools.some((tool) => 'execution' in tool)).toBe(revision === '2025-11-25');
    client.input.end();
  });

  it.each(['2024-11-05', '2025-03-26'])(
    '%s: progress carries a message only where the revision has one',
    async (revision) => {
      const client = connectStdio(core);
      client.send(initialize(revision));
      await client.answerTo(0);
      client.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 0.3 }, _meta: { progressToken: 'p' } },
      });
      await client.answerTo(1);
      const progress = client.received.filter((message) => message.method === 'notifications/progress');
      expect(progress.length).toBeGreaterThan(0);
      for (const message of progress) {
        const params = message.params as Record<string, unknown>;
        expect(params.progressToken).toBe('p');
        if (revision === '2024-11-05') expect(params).not.toHaveProperty('message');
        else expect(params.message).toMatch(/^step \d+ of \d+$/);
      }
      client.input.end();
    },
  );

  it('asked for an unknown revision, answers the latest handshake revision', async () => {
    const client = connectStdio(core);
    client.send(initialize('2024-10-07'));
    expect(await client.answerTo(0)).toMatchObject({ result: { protocolVersion: '2025-11-25' } });
    client.input.end();
  });
});
