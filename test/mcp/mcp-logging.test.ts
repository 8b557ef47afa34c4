import { createMcpCore, type McpCore, TaskEventsHub } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnosticTools } from '../../examples/conformance/diagnostic-fixtures.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { connectStdio } from '../support/stdio-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform } from '../support/task-platform.ts';

// Logging (server/utilities/logging): a tool's ctx.log() reaches the client as notifications/message
// on the request's own stream, before the response, only at or above the level the client asked
// for — per request in 2026-07-28 (`_meta` logLevel), per session before (logging/setLevel, kept in
// Postgres so another API instance serves it too). No level asked: no message.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;
let apiA: Awaited<ReturnType<typeof serveApi>>;
let apiB: Awaited<ReturnType<typeof serveApi>>;

const leveled = defineTool({
  name: 'leveled_logs',
  description: 'One message at each of debug, warning and emergency.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    ctx.log('debug', { step: 1 });
    ctx.log('warning', 'careful', 'checks');
    ctx.log('emergency', ['x']);
    return { content: [{ type: 'text', text: 'done' }] };
  },
});
const chatty = defineTool({
  name: 'chatty_logs',
  description: 'Logs more than a call may send.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    for (let i = 0; i < 250; i += 1) ctx.log('info', i);
    return { content: [] };
  },
});
const badLog = defineTool({
  name: 'bad_log',
  description: 'Logs at a level MCP does not have.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    ctx.log('loud' as never, 'x');
    return { content: [] };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [...diagnosticTools, leveled, chatty, badLog] });
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = createMcpCore({
    service: platform.service,
    hub,
    tools: platform.tools,
    server: { name: 'taskgate', version: 'test' },
    pollMs: 100,
    logger: silentLogger,
  });
  apiA = await serveApi(platform, database.url);
  apiB = await serveApi(platform, database.url);
});
afterAll(async () => {
  await hub.stop();
  await apiA.close();
  await apiB.close();
  await platform.stop();
});

async function logged(tool: string, logLevel: unknown, revision = '2026-07-28') {
  const messages: Record<string, unknown>[] = [];
  const outcome = await core.request(
    'tools/call',
    { name: tool, arguments: {} },
    {
      tenantId: 'default',
      signal: new AbortController().signal,
      revision,
      clientCapabilities: {},
      ...(logLevel === undefined ? {} : { logLevel: logLevel as never }),
      onLog: (message) => messages.push(message),
    },
  );
  return { outcome, messages };
}

describe('ctx.log() through the core', () => {
  it('sends each message at or above the request’s level, in order, as notifications/message', async () => {
    const levels = async (level: unknown) => (await logged('leveled_logs', level)).messages.map((m) => m.params);
    expect(await levels('debug')).toEqual([
      { level: 'debug', data: { step: 1 } },
      { level: 'warning', data: 'careful', logger: 'checks' },
      { level: 'emergency', data: ['x'] },
    ]);
    expect(await levels('warning')).toEqual([
      { level: 'warning', data: 'careful', logger: 'checks' },
      { level: 'emergency', data: ['x'] },
    ]);
    expect(await levels('emergency')).toEqual([{ level: 'emergency', data: ['x'] }]);
    // No level asked for: nothing, whatever the tool logs.
    expect(await levels(undefined)).toEqual([]);
    expect(await levels(null)).toEqual([]);
  });

  it('sends at most 200 messages of one call, and fails a call that logs at a level MCP lacks', async () => {
    const chattyCall = await logged('chatty_logs', 'debug');
    expect(chattyCall.messages).toHaveLength(200);
    expect(chattyCall.outcome?.kind).toBe('result');
    const bad = await logged('bad_log', 'debug');
    expect(bad.outcome).toMatchObject({ kind: 'error', error: { code: -32603 } });
    expect(bad.messages).toEqual([]);
  });
});

async function postModern(url: URL, meta: Record<string, unknown>) {
  const request = perRequestMessage('tools/call', { name: 'test_tool_with_logging', arguments: {} }, { id: 1, meta });
  return fetch(url, { method: 'POST', ...request });
}

// biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC body, read field by field.
const json = async (response: Response): Promise<any> => response.json();

/** The JSON-RPC messages of an SSE body, in order. */
function events(body: string): Record<string, unknown>[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
}

describe('over Streamable HTTP', () => {
  it('2026-07-28: a logLevel in _meta turns the answer into SSE with the messages before the response', async () => {
    const response = await postModern(apiA.mcpUrl, { 'io.modelcontextprotocol/logLevel': 'info' });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const messages = events(await response.text());
    expect(messages.map((m) => m.method ?? 'response')).toEqual([
      'notifications/message',
      'notifications/message',
      'notifications/message',
      'response',
    ]);
    expect(messages[0]?.params).toEqual({
      level: 'info',
      data: 'Tool execution started',
      logger: 'test_tool_with_logging',
    });
    // Without a level: a plain JSON answer, no message.
    const quiet = await postModern(apiA.mcpUrl, {});
    expect(quiet.headers.get('content-type')).toContain('application/json');
    expect((await json(quiet)).result.content[0].text).toBe('Logged three messages.');
  });

  it('2026-07-28: an unknown logLevel is 400 with -32602', async () => {
    for (const logLevel of ['loud', 3, true, null]) {
      const response = await postModern(apiA.mcpUrl, { 'io.modelcontextprotocol/logLevel': logLevel });
      expect(response.status).toBe(400);
      expect((await json(response)).error.code).toBe(-32602);
    }
  });

  it('2025-11-25: logging/setLevel through one instance holds for the session’s calls through another', async () => {
    const post = (url: URL, body: Record<string, unknown>, session?: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          ...(session ? { 'mcp-session-id': session } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', ...body }),
      });
    const init = await post(apiA.mcpUrl, {
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const session = init.headers.get('mcp-session-id') as string;
    expect((await json(init)).result.capabilities.logging).toEqual({});
    const call = { id: 2, method: 'tools/call', params: { name: 'test_tool_with_logging', arguments: {} } };
    // Before any setLevel: no messages.
    const before = await post(apiB.mcpUrl, call, session);
    expect(before.headers.get('content-type')).toContain('application/json');
    const bad = await post(apiA.mcpUrl, { id: 1, method: 'logging/setLevel', params: { level: 'verbose' } }, session);
    expect((await json(bad)).error.code).toBe(-32602);
    const set = await post(apiA.mcpUrl, { id: 1, method: 'logging/setLevel', params: { level: 'info' } }, session);
    expect((await json(set)).result).toEqual({});
    const after = await post(apiB.mcpUrl, call, session);
    const messages = events(await after.text());
    expect(messages.filter((m) => m.method === 'notifications/message')).toHaveLength(3);
    expect(messages.at(-1)).toMatchObject({ id: 2, result: { content: [{ text: 'Logged three messages.' }] } });
    // Raised above info: quiet again.
    await post(apiB.mcpUrl, { id: 3, method: 'logging/setLevel', params: { level: 'error' } }, session);
    const raised = await post(apiA.mcpUrl, call, session);
    expect(raised.headers.get('content-type')).toContain('application/json');
  });
});

describe('over stdio', () => {
  it('2025-11-25: the pipe’s logging/setLevel, then the messages on the pipe before the response', async () => {
    const client = connectStdio(core);
    client.send({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-11-25' } });
    await client.answerTo('i');
    client.send({ jsonrpc: '2.0', id: 'quiet', method: 'tools/call', params: { name: 'test_tool_with_logging' } });
    await client.answerTo('quiet');
    client.send({ jsonrpc: '2.0', id: 's', method: 'logging/setLevel', params: { level: 'debug' } });
    expect(await client.answerTo('s')).toMatchObject({ result: {} });
    client.send({ jsonrpc: '2.0', id: 'loud', method: 'tools/call', params: { name: 'test_tool_with_logging' } });
    await client.answerTo('loud');
    const methods = client.received.map((message) => message.method ?? message.id);
    expect(methods).toEqual([
      'i',
      'quiet',
      's',
      'notifications/message',
      'notifications/message',
      'notifications/message',
      'loud',
    ]);
    client.input.end();
    await client.server.closed;
  });
});
