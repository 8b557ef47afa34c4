import { randomBytes } from 'node:crypto';
import { type McpCore, TaskEventsHub, TaskService } from '@taskgate/api';
import { TaskSweeper } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { askingTools, roundTripPrompts } from '../../examples/conformance/round-trip-fixtures.ts';
import { setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { openSse } from '../support/sse-client.ts';
import { initializedStdio, type StdioClient, testCore } from '../support/stdio-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// Handshake revisions: an inline tool's ctx.input() sends its requests to the client on the call's
// own stream (the pipe, the POST's SSE answer) and waits for the responses, which the client sends
// back as JSON-RPC responses (on stdin, or POSTed with its session). And resources/subscribe: a task
// resource's status changes send notifications/resources/updated to the connection.
const database = useTestDatabase();

/** A durable tool (a task, run by the worker) whose handler asks the client for a name. */
const durableAsk = defineTool({
  name: 'durable_ask',
  description: 'asks for a name, then greets it',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  retry: 'safe',
  async handler(_input, ctx) {
    const { who } = await ctx.input({
      who: {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: 'Your name?',
          requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        },
      },
    });
    const name = (who as { content?: { name?: string } }).content?.name;
    return { content: [{ type: 'text', text: `Hello, ${name}` }] };
  },
});
/** A durable tool that says what the client declared, as its handler sees it. */
const durableCaps = defineTool({
  name: 'durable_caps',
  description: 'returns ctx.clientCapabilities',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  retry: 'safe',
  async handler(_input, ctx) {
    return { content: [{ type: 'text', text: JSON.stringify(ctx.clientCapabilities ?? null) }] };
  },
});
/** An inline tool that sends its user to a page (URL-mode elicitation, 2025-11-25 client/elicitation). */
const connectAccount = defineTool({
  name: 'connect_account',
  description: 'asks the user to connect an account on a page of its own',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    const { link } = await ctx.input({
      link: {
        method: 'elicitation/create',
        params: { mode: 'url', message: 'Connect your account', url: 'https://accounts.example.com/connect' },
      },
    });
    return { content: [{ type: 'text', text: `link: ${(link as { action: string }).action}` }] };
  },
});
let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;
let api: Awaited<ReturnType<typeof serveApi>>;

beforeAll(async () => {
  platform = await startPlatform(database.url, {
    tools: [...askingTools, durableAsk, durableCaps, connectAccount] as never,
  });
  // Runs the tasks the subscriptions watch, so that a cancel ends them.
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = testCore(platform, hub, { content: [{ prompts: roundTripPrompts }] });
  api = await serveApi(platform, database.url, { content: [{ prompts: roundTripPrompts }] });
});
afterAll(async () => {
  await hub.stop();
  await api.close();
  await platform.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC body, read field by field.
const json = async (response: Response): Promise<any> => response.json();

const initialized = (capabilities: Record<string, unknown>) => initializedStdio(core, capabilities);

/** The request the server sent the client, once it has. */
async function serverRequest(client: StdioClient, method: string) {
  const found = await client.until((received) => received.some((m) => m.method === method && 'id' in m));
  return found.find((m) => m.method === method && 'id' in m) as { id: string; params: Record<string, unknown> };
}

const headers = (session?: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
  ...(session ? { 'mcp-session-id': session } : {}),
});
const post = (body: Record<string, unknown>, session?: string) =>
  fetch(api.mcpUrl, { method: 'POST', headers: headers(session), body: JSON.stringify({ jsonrpc: '2.0', ...body }) });

describe('URL-mode elicitation', () => {
  it('over stdio: sent with an elicitationId to a client that declared elicitation.url, refused to one that did not', async () => {
    const form = await initialized({ elicitation: {} });
    form.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'connect_account', arguments: {} } });
    expect(await form.answerTo(1)).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
    });
    expect(form.received.some((m) => m.method === 'elicitation/create')).toBe(false);
    form.input.end();
    await form.server.closed;

    const url = await initialized({ elicitation: { url: {} } });
    url.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'connect_account', arguments: {} } });
    const asked = await serverRequest(url, 'elicitation/create');
    expect(asked.params).toEqual({
      mode: 'url',
      message: 'Connect your account',
      url: 'https://accounts.example.com/connect',
      elicitationId: expect.any(String),
    });
    url.send({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept' } });
    expect(await url.answerTo(2)).toMatchObject({ result: { content: [{ text: 'link: accept' }] } });
    url.input.end();
    await url.server.closed;
  });

  it('in 2026-07-28: asked as input_required only of a client that declared elicitation.url', async () => {
    const call = (capabilities: Record<string, unknown>) =>
      core.request(
        'tools/call',
        { name: 'connect_account', arguments: {} },
        {
          tenantId: 'default',
          signal: new AbortController().signal,
          revision: '2026-07-28',
          clientCapabilities: capabilities,
        },
      );
    expect(await call({ elicitation: {} })).toMatchObject({
      kind: 'error',
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
    });
    expect(await call({ elicitation: { url: {} } })).toMatchObject({
      kind: 'result',
      result: {
        resultType: 'input_required',
        inputRequests: { link: { method: 'elicitation/create', params: { mode: 'url' } } },
      },
    });
  });

  it('a form request is refused to a client that declared URL mode only', async () => {
    const client = await initialized({ elicitation: { url: {} } });
    client.send({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'test_elicitation', arguments: { message: 'Who?' } },
    });
    expect(await client.answerTo(3)).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } },
    });
    client.input.end();
    await client.server.closed;
  });
});

describe('requests to the client, over stdio', () => {
  it('sends elicitation/create on the pipe and goes on with the client’s response', async () => {
    const client = await initialized({ elicitation: {} });
    client.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'test_elicitation', arguments: { message: 'Who?' } },
    });
    const asked = await serverRequest(client, 'elicitation/create');
    expect(asked.id).toMatch(/^taskgate-/);
    expect(asked.params).toMatchObject({ message: 'Who?', requestedSchema: { required: ['username', 'email'] } });
    // A response to an id this server never used changes nothing.
    client.send({ jsonrpc: '2.0', id: 'taskgate-nope', result: { action: 'decline' } });
    client.send({
      jsonrpc: '2.0',
      id: asked.id,
      result: { action: 'accept', content: { username: 'ada', email: 'a@b' } },
    });
    expect(await client.answerTo(1)).toMatchObject({
      result: {
        content: [{ text: 'User response: <action: accept, content: {"username":"ada","email":"a@b"}>' }],
      },
    });
    // Content its requestedSchema refuses (email is required) fails the call with -32602 instead
    // of reaching the handler.
    client.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'test_elicitation', arguments: { message: 'Who else?' } },
    });
    const again = (await client.until((all) => all.filter((m) => m.method === 'elicitation/create').length === 2))
      .filter((m) => m.method === 'elicitation/create')
      .at(-1) as { id: string };
    client.send({ jsonrpc: '2.0', id: again.id, result: { action: 'accept', content: { username: 'bob' } } });
    expect(await client.answerTo(2)).toMatchObject({
      error: { code: -32602, message: expect.stringContaining('content.email'), data: { key: expect.any(String) } },
    });
    client.input.end();
    await client.server.closed;
  });

  it('fails the call when the client did not declare the capability, or answers with an error', async () => {
    const plain = await initialized({});
    plain.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'test_sampling', arguments: { prompt: 'p' } },
    });
    // -32021 naming what is missing, as a durable tool's ask gets (below), not a handler failure.
    expect(await plain.answerTo(1)).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { sampling: {} } } },
    });
    expect(plain.received.some((m) => m.method === 'sampling/createMessage')).toBe(false);
    plain.input.end();

    const client = await initialized({ sampling: {} });
    client.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'test_sampling', arguments: { prompt: 'p' } },
    });
    const asked = await serverRequest(client, 'sampling/createMessage');
    client.send({ jsonrpc: '2.0', id: asked.id, error: { code: -1, message: 'user declined' } });
    expect(await client.answerTo(2)).toMatchObject({ error: { code: -32603 } });
    // A result that is not a sampling result fails the call too, rather than reaching the handler.
    client.send({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'test_sampling', arguments: { prompt: 'q' } },
    });
    const again = (await client.until((all) => all.filter((m) => m.method === 'sampling/createMessage').length === 2))
      .filter((m) => m.method === 'sampling/createMessage')
      .at(-1) as { id: string };
    client.send({ jsonrpc: '2.0', id: again.id, result: 42 });
    expect(await client.answerTo(3)).toMatchObject({ error: { code: -32603 } });
    client.input.end();
    await client.server.closed;
  });

  it('tells the client its request is no longer needed when the call is cancelled', async () => {
    const client = await initialized({ elicitation: {} });
    client.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'test_elicitation_sep1034_defaults' } });
    const asked = await serverRequest(client, 'elicitation/create');
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } });
    const received = await client.until((all) =>
      all.some(
        (m) => m.method === 'notifications/cancelled' && (m.params as { requestId?: unknown }).requestId === asked.id,
      ),
    );
    // The cancelled call gets no response.
    expect(received.some((m) => m.id === 7)).toBe(false);
    client.input.end();
    await client.server.closed;
  });
});

describe('requests to the client, over Streamable HTTP', () => {
  it('sends the request on the call’s SSE answer and takes the POSTed response of the session', async () => {
    const init = await post({
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { sampling: {} },
        clientInfo: { name: 't', version: '1' },
      },
    });
    const session = init.headers.get('mcp-session-id') as string;
    const call = openSse(api.mcpUrl, {
      method: 'POST',
      headers: headers(session),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'test_sampling', arguments: { prompt: 'Capital?' } },
      }),
    });
    const [asked] = (await call.until((messages) => messages.some((m) => m.method === 'sampling/createMessage'))) as {
      id: string;
      params: { messages: unknown[] };
    }[];
    expect(asked?.params.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Capital?' } }]);
    // A response needs its session: without one 400, with an unknown one 404.
    expect((await post({ id: asked?.id, result: {} })).status).toBe(400);
    expect((await post({ id: asked?.id, result: {} }, crypto.randomUUID())).status).toBe(404);
    const answered = await post(
      { id: asked?.id, result: { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'm' } },
      session,
    );
    expect(answered.status).toBe(202);
    const messages = await call.until((all) => all.some((m) => m.id === 5));
    expect(messages.at(-1)).toMatchObject({ id: 5, result: { content: [{ text: 'LLM response: Paris' }] } });
  });
});

describe('a prompt’s ctx.input() in a handshake revision', () => {
  const PROMPT = 'test_input_required_result_prompt';

  it('is -32021 naming the capability when the client did not declare it, and asks nothing', async () => {
    const client = await initialized({});
    client.send({ jsonrpc: '2.0', id: 'undeclared', method: 'prompts/get', params: { name: PROMPT } });
    expect(await client.answerTo('undeclared')).toMatchObject({
      error: {
        code: -32021,
        message: expect.stringContaining('did not declare elicitation'),
        data: { requiredCapabilities: { elicitation: {} } },
      },
    });
    expect(client.received.some((m) => m.method === 'elicitation/create')).toBe(false);
    client.input.end();
    await client.server.closed;
  });

  it('over stdio: asks the client on the pipe, and makes its messages from the answer', async () => {
    const client = await initialized({ elicitation: {} });
    client.send({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: PROMPT } });
    const asked = await serverRequest(client, 'elicitation/create');
    client.send({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { context: 'billing' } } });
    expect(await client.answerTo(1)).toMatchObject({
      result: { messages: [{ role: 'user', content: { type: 'text', text: 'Context: billing' } }] },
    });
    // An answer its requestedSchema refuses (context is a string): -32602, naming the key.
    client.send({ jsonrpc: '2.0', id: 2, method: 'prompts/get', params: { name: PROMPT } });
    const again = (await client.until((all) => all.filter((m) => m.method === 'elicitation/create').length === 2))
      .filter((m) => m.method === 'elicitation/create')
      .at(-1) as { id: string };
    client.send({ jsonrpc: '2.0', id: again.id, result: { action: 'accept', content: { context: 7 } } });
    expect(await client.answerTo(2)).toMatchObject({
      error: {
        code: -32602,
        message: expect.stringContaining('user_context'),
        data: { code: 'TG_INPUT_RESPONSES_INVALID' },
      },
    });
    client.input.end();
    await client.server.closed;
  });

  it('over Streamable HTTP: asks on the POST’s SSE answer and takes the session’s POSTed response', async () => {
    const init = await post({
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: { elicitation: {} },
        clientInfo: { name: 't', version: '1' },
      },
    });
    const session = init.headers.get('mcp-session-id') as string;
    const get = openSse(api.mcpUrl, {
      method: 'POST',
      headers: headers(session),
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'prompts/get', params: { name: PROMPT } }),
    });
    const [asked] = (await get.until((messages) => messages.some((m) => m.method === 'elicitation/create'))) as {
      id: string;
    }[];
    const answered = await post(
      { id: asked?.id, result: { action: 'accept', content: { context: 'support' } } },
      session,
    );
    expect(answered.status).toBe(202);
    const messages = await get.until((all) => all.some((m) => m.id === 3));
    expect(messages.at(-1)).toMatchObject({
      id: 3,
      result: { messages: [{ role: 'user', content: { type: 'text', text: 'Context: support' } }] },
    });
  });
});

describe('resources/subscribe', () => {
  it('over stdio: a task resource’s status change sends notifications/resources/updated, until unsubscribed', async () => {
    const client = await initialized({});
    const watched = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 30 } });
    const dropped = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 30 } });
    const uri = (id: string) => `taskgate://tasks/${id}`;
    client.send({ jsonrpc: '2.0', id: 's1', method: 'resources/subscribe', params: { uri: uri(watched.id) } });
    client.send({ jsonrpc: '2.0', id: 's2', method: 'resources/subscribe', params: { uri: uri(dropped.id) } });
    client.send({ jsonrpc: '2.0', id: 'u2', method: 'resources/unsubscribe', params: { uri: uri(dropped.id) } });
    // Another spelling of the watched task's URI; the first is dropped, and the other still holds.
    const alias = `taskgate://tasks/%${watched.id.charCodeAt(0).toString(16)}${watched.id.slice(1)}`;
    client.send({ jsonrpc: '2.0', id: 'a1', method: 'resources/subscribe', params: { uri: alias } });
    client.send({ jsonrpc: '2.0', id: 'a2', method: 'resources/unsubscribe', params: { uri: uri(watched.id) } });
    expect(await client.answerTo('a2')).toMatchObject({ result: {} });
    client.send({ jsonrpc: '2.0', id: 'bad', method: 'resources/subscribe', params: { uri: 'test://nothing' } });
    // Another tenant's task, and an id that names none, are not found as resources/read has them.
    const others = await platform.service.create('globex', { tool: 'slow_compute', arguments: { seconds: 30 } });
    for (const [id, foreign] of [
      ['other', uri(others.id)],
      ['none', uri('not-a-task')],
    ]) {
      client.send({ jsonrpc: '2.0', id, method: 'resources/subscribe', params: { uri: foreign } });
      expect(await client.answerTo(id as string)).toMatchObject({ error: { code: -32002, data: { uri: foreign } } });
    }
    await platform.service.cancel('globex', others.id, 'test over');
    expect(await client.answerTo('s1')).toMatchObject({ result: {} });
    expect(await client.answerTo('u2')).toMatchObject({ result: {} });
    expect(await client.answerTo('bad')).toMatchObject({ error: { code: -32002, data: { uri: 'test://nothing' } } });
    // The unsubscribed task ends first, then the watched one.
    await platform.service.cancel('default', dropped.id, 'test');
    await waitForTask(
      () => platform.service.get('default', dropped.id),
      (task) => task.status === 'cancelled',
    );
    await platform.service.cancel('default', watched.id, 'test');
    const received = await client.until((all) => all.some((m) => m.method === 'notifications/resources/updated'));
    const updates = received.filter((m) => m.method === 'notifications/resources/updated');
    expect(updates).toEqual([{ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: alias } }]);
    client.input.end();
    await client.server.closed;
  });

  it('over Streamable HTTP: the update goes to the session’s GET stream', async () => {
    const headers = (session?: string) => ({
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      ...(session ? { 'mcp-session-id': session } : {}),
    });
    const post = (body: Record<string, unknown>, session?: string) =>
      fetch(api.mcpUrl, {
        method: 'POST',
        headers: headers(session),
        body: JSON.stringify({ jsonrpc: '2.0', ...body }),
      });
    const init = await post({
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    expect((await json(init)).result.capabilities.resources).toEqual({ subscribe: true, listChanged: true });
    const session = init.headers.get('mcp-session-id') as string;
    const stream = openSse(api.mcpUrl, { method: 'GET', headers: headers(session) });
    expect(await stream.status).toBe(200);
    const task = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 30 } });
    const uri = `taskgate://tasks/${task.id}`;
    const subscribed = await post({ id: 1, method: 'resources/subscribe', params: { uri } }, session);
    expect((await json(subscribed)).result).toEqual({});
    await platform.service.cancel('default', task.id, 'test');
    const messages = await stream.until((all) => all.some((m) => m.method === 'notifications/resources/updated'));
    expect(messages.find((m) => m.method === 'notifications/resources/updated')).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri },
    });
    stream.close();
  });
});

describe('a durable tool’s ctx.input() in a handshake revision', () => {
  const endedTask = async () => {
    const { tasks } = await platform.service.list('default', { limit: 100 });
    const task = tasks.find((listed) => listed.tool === 'durable_ask');
    return task
      ? waitForTask(
          () => platform.service.get('default', task.id),
          (t) => t.status !== 'working' && t.status !== 'input_required',
        )
      : undefined;
  };

  it('sends the parked task’s requests to the client on the pipe, answers the task, and returns its result', async () => {
    const client = await initialized({ elicitation: {} });
    client.send({ jsonrpc: '2.0', id: 'd1', method: 'tools/call', params: { name: 'durable_ask', arguments: {} } });
    const asked = await serverRequest(client, 'elicitation/create');
    expect(asked.params).toMatchObject({ message: 'Your name?' });
    client.send({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'Ada' } } });
    expect(await client.answerTo('d1')).toMatchObject({
      result: { content: [{ type: 'text', text: 'Hello, Ada' }] },
    });
    client.input.end();
    await client.server.closed;
  });

  it('ends the call and its task when the client did not declare the capability, or answers what does not answer', async () => {
    const undeclared = await initialized({});
    undeclared.send({ jsonrpc: '2.0', id: 'd2', method: 'tools/call', params: { name: 'durable_ask', arguments: {} } });
    expect(await undeclared.answerTo('d2')).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { elicitation: {} } } },
    });
    expect(undeclared.received.some((m) => m.method === 'elicitation/create')).toBe(false);
    expect((await endedTask())?.status).toBe('cancelled');
    undeclared.input.end();
    await undeclared.server.closed;

    const wrong = await initialized({ elicitation: {} });
    wrong.send({ jsonrpc: '2.0', id: 'd3', method: 'tools/call', params: { name: 'durable_ask', arguments: {} } });
    const asked = await serverRequest(wrong, 'elicitation/create');
    wrong.send({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 42 } } });
    expect(await wrong.answerTo('d3')).toMatchObject({
      error: { code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID' } },
    });
    wrong.input.end();
    await wrong.server.closed;
  });
});

describe('a durable tool’s ctx.input() in 2026-07-28, without the Tasks extension', () => {
  const ELICIT = { elicitation: {} };
  const call = (extra: Record<string, unknown> = {}, capabilities: Record<string, unknown> = ELICIT) =>
    core.request(
      'tools/call',
      { name: 'durable_ask', arguments: {}, ...extra },
      {
        tenantId: 'default',
        signal: new AbortController().signal,
        revision: '2026-07-28',
        clientCapabilities: capabilities,
      },
    );
  const tasksOfTool = async () =>
    (await platform.service.list('default', { limit: 100 })).tasks.filter((task) => task.tool === 'durable_ask');

  it('answers input_required naming the parked task, and the retry answers that task and returns its result', async () => {
    const before = (await tasksOfTool()).length;
    const first = await call();
    expect(first).toMatchObject({
      kind: 'result',
      result: { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create' } } },
    });
    const { requestState } = (first as unknown as { result: { requestState: string } }).result;
    const tasks = await tasksOfTool();
    expect(tasks).toHaveLength(before + 1);
    const parked = tasks.find((task) => task.status === 'input_required');
    expect(parked).toBeDefined();
    const statusOf = async () => (await platform.service.get('default', parked?.id as string)).status;

    // A state altered by the client is refused, and the task goes on waiting.
    const tampered = `${requestState.slice(0, -2)}${requestState.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(await call({ requestState: tampered, inputResponses: { who: { action: 'decline' } } })).toMatchObject({
      kind: 'error',
      error: { code: -32602, data: { code: 'TG_REQUEST_STATE_INVALID' } },
    });
    // The state for another call (other arguments) is refused too.
    expect(
      await core.request(
        'tools/call',
        { name: 'durable_ask', arguments: { x: 1 }, requestState },
        {
          tenantId: 'default',
          signal: new AbortController().signal,
          revision: '2026-07-28',
          clientCapabilities: ELICIT,
        },
      ),
    ).toMatchObject({ kind: 'error', error: { code: -32602 } });
    // An answer that does not answer the request is refused; the task still waits for a good one.
    expect(
      await call({ requestState, inputResponses: { who: { action: 'accept', content: { name: 42 } } } }),
    ).toMatchObject({ kind: 'error', error: { code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID' } } });
    expect(await statusOf()).toBe('input_required');
    // A retry with no answer is asked again.
    expect(await call({ requestState })).toMatchObject({
      kind: 'result',
      result: { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create' } } },
    });

    const done = await call({ requestState, inputResponses: { who: { action: 'accept', content: { name: 'Ada' } } } });
    expect(done).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'Hello, Ada' }] } });
    expect(await statusOf()).toBe('completed');
    // One task for the whole exchange: the retries answered it, none started the call again.
    expect(await tasksOfTool()).toHaveLength(before + 1);
  });

  it('gives the durable handler the capabilities the call declared (which input kinds, past 16 KiB)', async () => {
    const seen = async (capabilities: Record<string, unknown>) => {
      const outcome = await core.request(
        'tools/call',
        { name: 'durable_caps', arguments: {} },
        {
          tenantId: 'default',
          signal: new AbortController().signal,
          revision: '2026-07-28',
          clientCapabilities: capabilities,
        },
      );
      const text = (outcome as unknown as { result: { content: { text: string }[] } }).result.content[0]?.text;
      return JSON.parse(text as string);
    };
    expect(await seen({ sampling: {}, experimental: { x: 1 } })).toEqual({ sampling: {}, experimental: { x: 1 } });
    expect(await seen({})).toBeNull();
    const huge = { elicitation: { form: {} }, experimental: { blob: 'x'.repeat(20_000) } };
    expect(await seen(huge)).toEqual({ elicitation: {} });
    // Under 1 KiB of JSON that Postgres writes out as 18 KiB of jsonb text (1e300 in 301 digits):
    // kept whole, and no bound on that text refuses the insert.
    const dense = { sampling: {}, experimental: { x: Array.from({ length: 60 }, () => 1e300) } };
    expect(await seen(dense)).toEqual(dense);
  });

  it('ends the call and its task when the client did not declare the capability the task asks with', async () => {
    const outcome = await call({}, {});
    expect(outcome).toMatchObject({
      kind: 'error',
      error: { code: -32021, data: { requiredCapabilities: { elicitation: {} } } },
    });
    const latest = (await tasksOfTool()).sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1))[0];
    expect(
      (
        await waitForTask(
          () => platform.service.get('default', latest?.id as string),
          (t) => t.status !== 'input_required',
        )
      ).status,
    ).toBe('cancelled');
  });
});

describe('a 2026-07-28 call parked for input between its request and the retry', () => {
  const stateKey = randomBytes(32);
  /** An API instance of its own (its tasks name it), sharing the request-state key. */
  const instance = (instanceId: string) =>
    testCore(platform, hub, {
      requestStateKey: stateKey,
      service: new TaskService({
        db: platform.db,
        boss: platform.boss,
        announcer: platform.announcer,
        tools: platform.tools,
        defaultTtlMs: 3_600_000,
        pollIntervalMs: 500,
        instanceId,
      }),
    });
  const call = (through: McpCore, extra: Record<string, unknown> = {}) =>
    through.request(
      'tools/call',
      { name: 'durable_ask', arguments: {}, ...extra },
      {
        tenantId: 'default',
        signal: new AbortController().signal,
        revision: '2026-07-28',
        clientCapabilities: { elicitation: {} },
      },
    );
  const parkedRow = async (id: string) =>
    (
      await sql<{ api_instance_id: string | null; left_ms: number | null; status: string }>`
        SELECT api_instance_id, status,
               (extract(epoch FROM input_deadline_at - now()) * 1000)::float8 AS left_ms
        FROM tasks WHERE id = ${id}::uuid`.execute(platform.db)
    ).rows[0];
  const sweep = () =>
    new TaskSweeper({
      db: platform.db,
      announcer: platform.announcer,
      maxQueueMs: 600_000,
      lostAfterMs: 1_000,
      reachableForMs: () => 60_000,
      logger: silentLogger,
    }).sweep();
  /** The request state and parked task of a first call through `through`. */
  async function parkedCall(through: McpCore) {
    const first = (await call(through)) as unknown as { result: { resultType: string; requestState: string } };
    expect(first.result.resultType).toBe('input_required');
    const tasks = await platform.service.list('default', { limit: 100 });
    const parked = tasks.tasks.find((task) => task.tool === 'durable_ask' && task.status === 'input_required');
    if (!parked) throw new Error('no parked task');
    return { requestState: first.result.requestState, id: parked.id };
  }

  it('survives the loss of its first instance, and the retry through another instance waits on it', async () => {
    await setInstance(platform.db, 'api-a', { heartbeatAgoMs: 0 });
    await setInstance(platform.db, 'api-b', { heartbeatAgoMs: 0 });
    const a = instance('api-a');
    const b = instance('api-b');
    const { requestState, id } = await parkedCall(a);
    // No request waits on it: tied to no instance, bounded by the state's life and a grace period.
    const row = await parkedRow(id);
    expect(row?.api_instance_id).toBeNull();
    expect(row?.left_ms).toBeGreaterThan(10 * 60_000);
    expect(row?.left_ms).toBeLessThanOrEqual(11 * 60_000 + 1_000);
    // The first instance stops: the sweep of its requests' tasks leaves this one alone.
    await setInstance(platform.db, 'api-a', { heartbeatAgoMs: 0, stoppedAgoMs: 0 });
    expect((await sweep()).orphanedRequests).toBe(0);
    expect((await parkedRow(id))?.status).toBe('input_required');
    // A retry whose answer is refused leaves the task parked as before: no instance's, a deadline.
    expect(
      await call(b, { requestState, inputResponses: { who: { action: 'accept', content: { name: 42 } } } }),
    ).toMatchObject({ kind: 'error', error: { code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID' } } });
    const refused = await parkedRow(id);
    expect(refused?.api_instance_id).toBeNull();
    expect(refused?.left_ms).toBeGreaterThan(10 * 60_000);
    const done = await call(b, {
      requestState,
      inputResponses: { who: { action: 'accept', content: { name: 'Bo' } } },
    });
    expect(done).toMatchObject({ kind: 'result', result: { content: [{ type: 'text', text: 'Hello, Bo' }] } });
    // The retry's instance took it (lost with that one from then on), and its deadline went.
    expect(await parkedRow(id)).toMatchObject({ api_instance_id: 'api-b', left_ms: null, status: 'completed' });
  });

  it('ends cancelled once its input deadline passed with no retry, saying why', async () => {
    await setInstance(platform.db, 'api-c', { heartbeatAgoMs: 0 });
    const c = instance('api-c');
    const { id, requestState } = await parkedCall(c);
    expect((await sweep()).abandonedInput).toBe(0);
    // The client never retried, and its state has expired: the deadline is passed (forced here).
    await sql`UPDATE tasks SET input_deadline_at = now() - interval '1 second' WHERE id = ${id}::uuid`.execute(
      platform.db,
    );
    expect((await sweep()).abandonedInput).toBe(1);
    const task = await platform.service.get('default', id);
    expect(task.status).toBe('cancelled');
    expect(task.statusMessage).toMatch(/did not retry the request/);
    // Swept once: a second sweep finds nothing.
    expect((await sweep()).abandonedInput).toBe(0);
    // Its history reads as every cancel's: the request, then the status.
    const { rows: events } = await sql<{ type: string; to_status: string | null }>`
      SELECT type, to_status FROM task_events WHERE task_id = ${id}::uuid AND id > (
        SELECT max(id) FROM task_events WHERE task_id = ${id}::uuid AND to_status = 'input_required')
      ORDER BY id`.execute(platform.db);
    expect(events).toEqual([
      { type: 'cancel_requested', to_status: null },
      { type: 'status_changed', to_status: 'cancelled' },
    ]);
    // A late retry is told that the call is over, and to call again: not an internal error.
    expect(
      await call(c, { requestState, inputResponses: { who: { action: 'accept', content: { name: 'Cy' } } } }),
    ).toMatchObject({
      kind: 'error',
      error: { code: -32602, data: { code: 'TG_REQUEST_STATE_INVALID', problem: 'ended' } },
    });
  });
});
