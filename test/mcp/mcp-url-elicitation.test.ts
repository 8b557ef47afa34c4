import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitationCompleteNotificationSchema,
  UrlElicitationRequiredError as SdkUrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { TASKS_EXTENSION } from '@taskgate/protocol';
import { defineTool, ToolProtocolError, UrlElicitationRequiredError } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { openSse } from '../support/sse-client.ts';
import { initializedStdio, type StdioClient, testCore } from '../support/stdio-client.ts';
import {
  barrier,
  type Platform,
  serveApi,
  silentLogger,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// URL-mode elicitation past ctx.input() (MCP 2025-11-25 client/elicitation): a handler's
// ctx.elicitationComplete() as notifications/elicitation/complete on the call's own stream, and a
// handler's UrlElicitationRequiredError as -32042 where the revision has it (input_required in
// 2026-07-28, which has not).
const database = useTestDatabase();

const CONNECT_URL = 'https://connect.example.com/start?elicitation=e-connect';
const ELICITATION = {
  mode: 'url',
  url: CONNECT_URL,
  message: 'Connect the example service',
  elicitationId: 'e-connect',
};
const REQUIRED = {
  code: -32042,
  message: 'the example service is not connected',
  data: { elicitations: [ELICITATION] },
};

/** What the user has finished on the connect page, by tenant: the handlers' own state. */
const connected = new Set<string>();
const needsConnection = (ctx: { tenant: string }) => {
  if (!connected.has(ctx.tenant)) {
    throw new UrlElicitationRequiredError(
      [{ url: CONNECT_URL, message: 'Connect the example service', elicitationId: 'e-connect' }],
      'the example service is not connected',
    );
  }
  return { content: [{ type: 'text' as const, text: 'connected' }] };
};

/** Held until the test says the user has finished on the page (the out-of-band part). */
const outOfBand = barrier();
const durableOutOfBand = barrier();

const tools = [
  defineTool({
    name: 'link_then_complete',
    description: 'sends the user to a page, waits until they are done there, and says so',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    retry: 'safe',
    inline: true,
    async handler(_input, ctx) {
      const { link } = await ctx.input({
        link: { method: 'elicitation/create', params: { ...ELICITATION, elicitationId: 'e-link' } },
      });
      await outOfBand.promise;
      ctx.elicitationComplete('e-link');
      return { content: [{ type: 'text', text: `link: ${(link as { action: string }).action}` }] };
    },
  }),
  defineTool<{ id: string }>({
    name: 'complete_elicitation',
    description: 'tells the client an elicitation is complete',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    retry: 'safe',
    inline: true,
    async handler({ id }, ctx) {
      ctx.elicitationComplete(id);
      return { content: [{ type: 'text', text: 'told' }] };
    },
  }),
  defineTool<{ id: string }>({
    name: 'durable_complete_elicitation',
    description: 'tells the client an elicitation is complete, from a task',
    inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    retry: 'safe',
    async handler({ id }, ctx) {
      ctx.elicitationComplete(id);
      return { content: [{ type: 'text', text: 'told' }] };
    },
  }),
  defineTool({
    name: 'durable_link_then_complete',
    description: 'a task that sends the user to a page, waits until they are done there, and says so',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    retry: 'safe',
    async handler(_input, ctx) {
      const { link } = await ctx.input({
        link: { method: 'elicitation/create', params: { ...ELICITATION, elicitationId: 'e-durable' } },
      });
      await durableOutOfBand.promise;
      ctx.elicitationComplete('e-durable');
      return { content: [{ type: 'text', text: `link: ${(link as { action: string }).action}` }] };
    },
  }),
  defineTool({
    name: 'needs_connection',
    description: 'needs the user to connect the example service first',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    retry: 'safe',
    inline: true,
    handler: async (_input, ctx) => needsConnection(ctx),
  }),
  defineTool({
    name: 'durable_needs_connection',
    description: 'needs the user to connect the example service first (a task)',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    retry: 'safe',
    handler: async (_input, ctx) => needsConnection(ctx),
  }),
  defineTool({
    name: 'malformed_required',
    description: 'answers -32042 without the elicitations it must list',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    retry: 'safe',
    inline: true,
    async handler() {
      throw new ToolProtocolError(-32042, 'needs something', { elicitations: [] });
    },
  }),
];

let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;
let api: Awaited<ReturnType<typeof serveApi>>;

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: tools as never });
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  // A call of a task-optional tool is answered in its request however long its task runs.
  core = testCore(platform, hub, { taskAfterMs: 600_000 });
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await hub.stop();
  await api.close();
  await platform.stop();
});

const initialized = (capabilities: Record<string, unknown>) => initializedStdio(core, capabilities);

async function closed(client: StdioClient) {
  client.input.end();
  await client.server.closed;
}

const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

const headers = (session?: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
  ...(session ? { 'mcp-session-id': session } : {}),
});

async function httpSession(capabilities: Record<string, unknown>): Promise<string> {
  const init = await fetch(api.mcpUrl, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 't', version: '1' } },
    }),
  });
  return init.headers.get('mcp-session-id') as string;
}

const modern = (capabilities: Record<string, unknown>, onLog?: (message: Record<string, unknown>) => void) => ({
  tenantId: 'default',
  signal: new AbortController().signal,
  revision: '2026-07-28',
  clientCapabilities: capabilities,
  ...(onLog ? { onLog } : {}),
});

const isCompletion = (message: Record<string, unknown>) => message.method === 'notifications/elicitation/complete';

describe('notifications/elicitation/complete', () => {
  it('over stdio: follows the URL elicitation on the call’s stream once the handler says the user is done', async () => {
    const client = await initialized({ elicitation: { url: {} } });
    client.send(call(1, 'link_then_complete'));
    const [asked] = (await client.until((all) => all.some((m) => m.method === 'elicitation/create'))).filter(
      (m) => m.method === 'elicitation/create',
    ) as { id: string; params: Record<string, unknown> }[];
    expect(asked?.params.elicitationId).toBe('e-link');
    client.send({ jsonrpc: '2.0', id: asked?.id, result: { action: 'accept' } });
    // The user finishes on the page only now: nothing said it before.
    expect(client.received.some(isCompletion)).toBe(false);
    outOfBand.resolve();
    const answer = await client.answerTo(1);
    expect(answer).toMatchObject({ result: { content: [{ text: 'link: accept' }] } });
    const completion = client.received.findIndex(isCompletion);
    expect(client.received[completion]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/elicitation/complete',
      params: { elicitationId: 'e-link' },
    });
    expect(completion).toBeLessThan(client.received.indexOf(answer));
    await closed(client);
  });

  it('over Streamable HTTP: goes on the call’s SSE answer, before its result', async () => {
    const session = await httpSession({ elicitation: { url: {} } });
    const answer = openSse(api.mcpUrl, {
      method: 'POST',
      headers: headers(session),
      body: JSON.stringify(call(2, 'complete_elicitation', { id: 'e-7' })),
    });
    const messages = await answer.until((all) => all.some((m) => m.id === 2));
    expect(messages).toEqual([
      { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: 'e-7' } },
      expect.objectContaining({
        id: 2,
        result: expect.objectContaining({ content: [{ type: 'text', text: 'told' }] }),
      }),
    ]);
  });

  it('is not sent to a client that did not declare elicitation.url, nor in 2026-07-28, which dropped it', async () => {
    const form = await initialized({ elicitation: { form: {} } });
    form.send(call(3, 'complete_elicitation', { id: 'e-8' }));
    expect(await form.answerTo(3)).toMatchObject({ result: { content: [{ text: 'told' }] } });
    expect(form.received.some(isCompletion)).toBe(false);
    await closed(form);

    const sent: Record<string, unknown>[] = [];
    const outcome = await core.request(
      'tools/call',
      { name: 'complete_elicitation', arguments: { id: 'e-9' } },
      modern({ elicitation: { url: {} } }, (message) => sent.push(message)),
    );
    expect(outcome).toMatchObject({ kind: 'result', result: { content: [{ text: 'told' }] } });
    const durable = await core.request(
      'tools/call',
      { name: 'durable_complete_elicitation', arguments: { id: 'e-9b' } },
      modern({ elicitation: { url: {} } }, (message) => sent.push(message)),
    );
    expect(durable).toMatchObject({ kind: 'result', result: { content: [{ text: 'told' }] } });
    expect(sent).toEqual([]);
  });

  it('from a task answered in its request: kept with the task, sent on the call’s stream before its result', async () => {
    const client = await initialized({ elicitation: { url: {} } });
    client.send(call(5, 'durable_complete_elicitation', { id: 'e-10' }));
    const answer = await client.answerTo(5);
    expect(answer).toMatchObject({ result: { content: [{ text: 'told' }] } });
    const completion = client.received.findIndex(isCompletion);
    expect(client.received[completion]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/elicitation/complete',
      params: { elicitationId: 'e-10' },
    });
    expect(completion).toBeLessThan(client.received.indexOf(answer));
    await closed(client);

    // A client that cannot hear it is not sent it (the task keeps it, and completes).
    const form = await initialized({ elicitation: { form: {} } });
    form.send(call(6, 'durable_complete_elicitation', { id: 'e-11' }));
    expect(await form.answerTo(6)).toMatchObject({ result: { content: [{ text: 'told' }] } });
    expect(form.received.some(isCompletion)).toBe(false);
    await closed(form);
  });

  it('from a task over Streamable HTTP: on the call’s SSE answer, after the URL elicitation it completes', async () => {
    const session = await httpSession({ elicitation: { url: {} } });
    const answer = openSse(api.mcpUrl, {
      method: 'POST',
      headers: headers(session),
      body: JSON.stringify(call(7, 'durable_link_then_complete')),
    });
    const [asked] = (await answer.until((all) => all.some((m) => m.method === 'elicitation/create'))).filter(
      (m) => m.method === 'elicitation/create',
    ) as { id: string; params: Record<string, unknown> }[];
    expect(asked?.params).toMatchObject({ mode: 'url', elicitationId: 'e-durable' });
    const answered = await fetch(api.mcpUrl, {
      method: 'POST',
      headers: headers(session),
      body: JSON.stringify({ jsonrpc: '2.0', id: asked?.id, result: { action: 'accept' } }),
    });
    expect(answered.status).toBe(202);
    // The user finishes on the page only now: nothing said it before.
    expect(answer.messages.some(isCompletion)).toBe(false);
    durableOutOfBand.resolve();
    const messages = await answer.until((all) => all.some((m) => m.id === 7));
    const completion = messages.findIndex(isCompletion);
    expect(messages[completion]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/elicitation/complete',
      params: { elicitationId: 'e-durable' },
    });
    expect(completion).toBeLessThan(messages.findIndex((m) => m.id === 7));
    expect(messages.find((m) => m.id === 7)).toMatchObject({ result: { content: [{ text: 'link: accept' }] } });
  });

  it('refuses an elicitationId that is not a non-empty string, failing the call', async () => {
    const client = await initialized({ elicitation: { url: {} } });
    client.send(call(4, 'complete_elicitation', { id: '' }));
    expect(await client.answerTo(4)).toMatchObject({
      error: { code: -32603, message: expect.stringContaining('ctx.elicitationComplete needs the elicitationId') },
    });
    await closed(client);
  });
});

describe('URLElicitationRequiredError (-32042)', () => {
  it('over stdio: reaches a client that declared elicitation.url as the handler threw it; another gets -32021', async () => {
    const url = await initialized({ elicitation: { url: {} } });
    url.send(call(1, 'needs_connection'));
    expect(await url.answerTo(1)).toEqual({ jsonrpc: '2.0', id: 1, error: REQUIRED });
    await closed(url);

    const form = await initialized({ elicitation: {} });
    form.send(call(2, 'needs_connection'));
    expect(await form.answerTo(2)).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { url: {} } } } },
    });
    await closed(form);
  });

  it('over Streamable HTTP: the same error on a 200, from an inline handler and from a task’s', async () => {
    const session = await httpSession({ elicitation: { url: {} } });
    for (const [id, name] of [
      [5, 'needs_connection'],
      [6, 'durable_needs_connection'],
    ] as const) {
      const response = await fetch(api.mcpUrl, {
        method: 'POST',
        headers: headers(session),
        body: JSON.stringify(call(id, name)),
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ jsonrpc: '2.0', id, error: REQUIRED });
    }
  });

  it('without the elicitations the error must list is -32603, the code kept in data', async () => {
    const client = await initialized({ elicitation: { url: {} } });
    client.send(call(7, 'malformed_required'));
    expect(await client.answerTo(7)).toMatchObject({
      error: { code: -32603, message: 'needs something', data: { originalCode: -32042 } },
    });
    await closed(client);
  });
});

describe('URLElicitationRequiredError in 2026-07-28, which has no -32042', () => {
  const URL_MODE = { elicitation: { url: {} } };
  const ASKED = {
    'e-connect': {
      method: 'elicitation/create',
      params: { mode: 'url', url: CONNECT_URL, message: 'Connect the example service' },
    },
  };

  it('is asked as input_required, and the retry runs the handler again, which finds the user done', async () => {
    const first = await core.request('tools/call', { name: 'needs_connection', arguments: {} }, modern(URL_MODE));
    expect(first).toMatchObject({ kind: 'result', result: { resultType: 'input_required' } });
    const { inputRequests, requestState } = (
      first as unknown as { result: { inputRequests: unknown; requestState: string } }
    ).result;
    expect(inputRequests).toEqual(ASKED);
    // The user finishes on the page; the client retries with its answer.
    connected.add('default');
    try {
      const retry = await core.request(
        'tools/call',
        {
          name: 'needs_connection',
          arguments: {},
          requestState,
          inputResponses: { 'e-connect': { action: 'accept' } },
        },
        modern(URL_MODE),
      );
      expect(retry).toMatchObject({ kind: 'result', result: { content: [{ text: 'connected' }] } });
    } finally {
      connected.delete('default');
    }
    expect(
      await core.request('tools/call', { name: 'needs_connection', arguments: {} }, modern({ elicitation: {} })),
    ).toMatchObject({ kind: 'error', error: { code: -32021, data: { requiredCapabilities: URL_MODE } } });
  });

  it('from a task: input_required for a call answered in its request, -32603 for a task handed over', async () => {
    expect(
      await core.request('tools/call', { name: 'durable_needs_connection', arguments: {} }, modern(URL_MODE)),
    ).toMatchObject({ kind: 'result', result: { resultType: 'input_required', inputRequests: ASKED } });

    const withTasks = { ...URL_MODE, extensions: { [TASKS_EXTENSION]: {} } };
    const inRequest = await core.request(
      'tools/call',
      { name: 'durable_needs_connection', arguments: {} },
      modern(withTasks),
    );
    const internal = { code: -32603, data: { originalCode: -32042, elicitations: [ELICITATION] } };
    expect(inRequest).toMatchObject({ kind: 'error', error: internal });
    const failed = (await platform.service.list('default', { limit: 100 })).tasks.find(
      (task) => task.tool === 'durable_needs_connection' && task.mode === 'task',
    );
    const detail = await core.request('tasks/get', { taskId: failed?.id }, modern(withTasks));
    expect(detail).toMatchObject({ kind: 'result', result: { status: 'failed', error: internal } });
  });
});

describe('POST /v1/elicitations/{elicitationId}/complete, after -32042 ended the call', () => {
  const complete = (on: { mcpUrl: URL }, elicitationId: string) =>
    fetch(new URL(`/v1/elicitations/${encodeURIComponent(elicitationId)}/complete`, on.mcpUrl), { method: 'POST' });
  const getStream = (on: { mcpUrl: URL }, session: string) =>
    openSse(on.mcpUrl, { method: 'GET', headers: { ...headers(session), accept: 'text/event-stream' } });
  const callOn = async (
    on: { mcpUrl: URL },
    session: string,
    id: number,
    name: string,
    extra: Record<string, unknown> = {},
  ) => {
    const body = call(id, name);
    return (await fetch(on.mcpUrl, {
      method: 'POST',
      headers: headers(session),
      body: JSON.stringify({ ...body, params: { ...body.params, ...extra } }),
    }).then((response) => response.json())) as Record<string, unknown>;
  };
  /** How many sessions a completion told (0 for a 404). */
  const sessionsTold = async (on: { mcpUrl: URL }, elicitationId: string) => {
    const response = await complete(on, elicitationId);
    return response.status === 202 ? ((await response.json()) as { sessions: number }).sessions : 0;
  };

  it('tells the session’s GET stream once, on the instance holding it, and 404s what no session was sent', async () => {
    const other = await serveApi(platform, database.url);
    try {
      const session = await httpSession({ elicitation: { url: {} } });
      // The stream is on the other instance; the call and the completion land here.
      // Earlier tests' sessions were sent this elicitation too: told first, so the counts below are this test's.
      await complete(api, 'e-connect');
      const stream = getStream(other, session);
      await stream.firstId;
      expect(await callOn(api, session, 1, 'needs_connection')).toEqual({ jsonrpc: '2.0', id: 1, error: REQUIRED });
      const told = await complete(api, 'e-connect');
      expect(told.status).toBe(202);
      expect(await told.json()).toEqual({ sessions: 1 });
      const messages = await stream.until((all) => all.some(isCompletion));
      expect(messages.filter(isCompletion)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: 'e-connect' } },
      ]);
      // Once per session: told already.
      const again = await complete(api, 'e-connect');
      expect(again.status).toBe(404);
      expect(await again.json()).toMatchObject({ code: 'TG_ELICITATION_NOT_FOUND' });
      // A client that did not declare elicitation.url was answered -32021 and sent nothing.
      const form = await httpSession({ elicitation: { form: {} } });
      expect(await callOn(api, form, 2, 'needs_connection')).toMatchObject({ error: { code: -32021 } });
      expect((await complete(api, 'e-connect')).status).toBe(404);
      expect((await complete(api, 'never-sent')).status).toBe(404);
      // Input is refused, not looked up: a NUL byte (400), an id past 100 characters (414).
      for (const [bad, status] of [
        ['e\u0000x', 400],
        ['e'.repeat(101), 414],
      ] as const) {
        const refused = await complete(api, bad);
        expect(refused.status).toBe(status);
        expect(refused.headers.get('content-type')).toContain('application/problem+json');
      }
      stream.close();

      // A session with no GET stream open yet: the completion waits for the one it opens here.
      const late = await httpSession({ elicitation: { url: {} } });
      expect(await callOn(api, late, 3, 'needs_connection')).toMatchObject({ error: { code: -32042 } });
      expect((await complete(api, 'e-connect')).status).toBe(202);
      const opened = getStream(api, late);
      expect((await opened.until((all) => all.some(isCompletion))).filter(isCompletion)).toEqual([
        { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId: 'e-connect' } },
      ]);
      opened.close();

      // A task's -32042, through tasks/result: kept for the completion as a call's is.
      const tasksClient = await httpSession({ elicitation: { url: {} }, tasks: {} });
      const created = (await callOn(api, tasksClient, 4, 'durable_needs_connection', { task: {} })) as {
        result: { task: { taskId: string } };
      };
      const taskId = created.result.task.taskId;
      await waitForTask(
        () => platform.service.get('default', taskId),
        (task) => task.status === 'failed',
      );
      const rpcOn = (session: string, id: number, method: string, params: Record<string, unknown>) =>
        fetch(api.mcpUrl, {
          method: 'POST',
          headers: headers(session),
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        }).then((response) => response.json());
      expect(await rpcOn(tasksClient, 5, 'tasks/result', { taskId })).toMatchObject({
        error: { code: -32042, data: { elicitations: [ELICITATION] } },
      });
      expect(await sessionsTold(api, 'e-connect')).toBe(1);
      // A client that did not declare elicitation.url gets -32021 for it, as for the call.
      const formTasks = await httpSession({ elicitation: { form: {} }, tasks: {} });
      const formCreated = (await callOn(api, formTasks, 6, 'durable_needs_connection', { task: {} })) as {
        result: { task: { taskId: string } };
      };
      await waitForTask(
        () => platform.service.get('default', formCreated.result.task.taskId),
        (task) => task.status === 'failed',
      );
      expect(await rpcOn(formTasks, 7, 'tasks/result', { taskId: formCreated.result.task.taskId })).toMatchObject({
        error: { code: -32021 },
      });
    } finally {
      await other.close();
    }
  });
});

describe('the SDK v1 client (2025-11-25) declaring elicitation.url', () => {
  it('gets its UrlElicitationRequiredError with the elicitations, and hears a completion', async () => {
    const client = new Client(
      { name: 'url-interop', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const completed: string[] = [];
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
      completed.push(notification.params.elicitationId);
    });
    await client.connect(new StreamableHTTPClientTransport(api.mcpUrl));
    try {
      const refused = await client.callTool({ name: 'needs_connection', arguments: {} }).catch((error) => error);
      expect(refused).toBeInstanceOf(SdkUrlElicitationRequiredError);
      expect((refused as SdkUrlElicitationRequiredError).elicitations).toEqual([ELICITATION]);
      await client.callTool({ name: 'complete_elicitation', arguments: { id: 'e-sdk' } });
      expect(completed).toEqual(['e-sdk']);
      // The operator's page says the user is done: the client hears it on its GET stream, which
      // the SDK opens after initialize (if it has not yet, the completion waits for it).
      const told = await fetch(new URL('/v1/elicitations/e-connect/complete', api.mcpUrl), { method: 'POST' });
      expect(told.status).toBe(202);
      expect(await told.json()).toEqual({ sessions: 1 });
      await waitForTask(
        async () => completed,
        (heard) => heard.length === 2,
      );
      expect(completed).toEqual(['e-sdk', 'e-connect']);
    } finally {
      await client.close();
    }
  });
});
