import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { CatalogView, publishTools } from '@taskgate/db';
import { CatalogTools } from '@taskgate/tools';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { catalogTool, setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { listenStream, openSse } from '../support/sse-client.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// The tool list an API offers is the catalog's: when it changes, clients that listen hear of it —
// on a subscriptions/listen stream (2026-07-28), on a 2025-11-25 session's GET stream, and on a
// 2025-11-25 stdio pipe. The catalog here is written by hand (publishTools), as a worker would.
const database = useTestDatabase();
const SUBSCRIPTION = 'io.modelcontextprotocol/subscriptionId';
let platform: Platform;
let view: CatalogView;
let tools: CatalogTools;
let api: Awaited<ReturnType<typeof startApi>>;
let mcpUrl: URL;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await sql`DELETE FROM instances`.execute(platform.db);
  await setInstance(platform.db, 'w-list', { heartbeatAgoMs: 0 });
  await publishTools(platform.db, 'w-list', [catalogTool('alpha')]);
  view = new CatalogView({
    db: platform.db,
    pollIntervalMs: 3_600_000,
    listen: { connectionString: database.url, applicationName: 'tools-list-changed-test' },
    logger: silentLogger,
  });
  await view.start();
  tools = new CatalogTools(view, { logger: silentLogger });
  api = await startApi(platform, database.url, { tools, events: { keepaliveMs: 60_000 } });
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  mcpUrl = new URL(`http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}/mcp`);
});
afterAll(async () => {
  await api.close();
  tools.close();
  await view.stop();
  await platform.stop();
});
beforeEach(async () => {
  await publishTools(platform.db, 'w-list', [catalogTool('alpha')]);
  await waitForTask(
    async () => tools.list().map((tool) => tool.name),
    (names) => names.join() === 'alpha',
  );
});

/** The headers of a GET stream for a new 2025-11-25 session. */
async function legacySessionHeaders(): Promise<Record<string, string>> {
  const initialize = await fetch(mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'observer', version: '1' } },
    }),
  });
  await initialize.body?.cancel();
  const session = initialize.headers.get('mcp-session-id') as string;
  return { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
}

async function listed(): Promise<string[]> {
  const { headers, body } = perRequestMessage('tools/list', {});
  const response = await fetch(mcpUrl, { method: 'POST', headers, body });
  const { result } = (await response.json()) as { result: { tools: { name: string }[] } };
  return result.tools.map((tool) => tool.name);
}

describe('notifications/tools/list_changed', () => {
  it('goes to a toolsListChanged listen stream after its acknowledgement, once per change, naming the subscription', async () => {
    const stream = listenStream(mcpUrl, 'tools-1', { toolsListChanged: true });
    await stream.until((all) => all.length >= 1);
    expect(stream.messages[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { toolsListChanged: true } },
    });
    expect(await listed()).toEqual(['alpha']);

    await publishTools(platform.db, 'w-list', [catalogTool('alpha'), catalogTool('beta')]);
    await stream.until((all) => all.length >= 2);
    expect(stream.messages[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { [SUBSCRIPTION]: 'tools-1' } },
    });
    expect(await listed()).toEqual(['alpha', 'beta']);

    // A publish that changes nothing is no change; a new version of a tool is one.
    await publishTools(platform.db, 'w-list', [catalogTool('beta'), catalogTool('alpha')]);
    await publishTools(platform.db, 'w-list', [catalogTool('alpha'), catalogTool('beta', { description: 'v2' })]);
    await stream.until((all) => all.length >= 3);
    expect(stream.messages.slice(2).map((message) => message.method)).toEqual(['notifications/tools/list_changed']);
    stream.close();
  });

  it('does not go to a listen stream that did not ask for it', async () => {
    const quiet = listenStream(mcpUrl, 'quiet', {});
    const loud = listenStream(mcpUrl, 'loud', { toolsListChanged: true });
    await quiet.until((all) => all.length >= 1);
    await loud.until((all) => all.length >= 1);
    expect(quiet.messages[0]).toMatchObject({ params: { notifications: {} } });
    await publishTools(platform.db, 'w-list', [catalogTool('gamma')]);
    // The loud stream's notification shows the change was seen by this API; the quiet one has none.
    await loud.until((all) => all.length >= 2);
    expect(quiet.messages).toHaveLength(1);
    quiet.close();
    loud.close();
  });

  it('goes to a 2025-11-25 session on its GET stream; GET without a session is still 405', async () => {
    const initialize = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
      }),
    });
    const { result } = (await initialize.json()) as { result: { capabilities: { tools: unknown } } };
    expect(result.capabilities.tools).toEqual({ listChanged: true });
    const session = initialize.headers.get('mcp-session-id') as string;
    const headers = { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };

    const unknown = openSse(mcpUrl, { method: 'GET', headers: { ...headers, 'mcp-session-id': 'no-such-session' } });
    expect(await unknown.status).toBe(404);
    const noSession = await fetch(mcpUrl, { method: 'GET', headers: { accept: 'text/event-stream' } });
    expect(noSession.status).toBe(405);

    const stream = openSse(mcpUrl, { method: 'GET', headers });
    expect(await stream.status).toBe(200);
    await publishTools(platform.db, 'w-list', [catalogTool('alpha'), catalogTool('delta')]);
    await stream.until((all) => all.length >= 1);
    expect(stream.messages).toEqual([{ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }]);

    // A second GET for the session replaces the first: a message goes on one stream only.
    const second = openSse(mcpUrl, { method: 'GET', headers });
    expect(await second.status).toBe(200);
    await stream.ended;
    await publishTools(platform.db, 'w-list', [catalogTool('alpha')]);
    await second.until((all) => all.length >= 1);
    expect(stream.messages).toHaveLength(1);
    second.close();
  });

  it('reaches an SDK client whose GET stream dropped, when the change came while it was away', async () => {
    // The client's GET requests, and their responses' first bytes: the stream's priming event.
    const gets: (string | null)[] = [];
    let cut = new AbortController();
    let primed!: () => void;
    const firstBytes = new Promise<void>((resolve) => {
      primed = resolve;
    });
    let mayReconnect!: () => void;
    const reconnect = new Promise<void>((resolve) => {
      mayReconnect = resolve;
    });
    const fetchThrough: typeof fetch = async (input, init) => {
      if (init?.method !== 'GET') return fetch(input, init);
      gets.push(new Headers(init.headers).get('last-event-id'));
      // The reconnect waits until the change was made while no stream was open.
      if (gets.length === 2) await reconnect;
      cut = new AbortController();
      const signal = init.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
      const response = await fetch(input, { ...init, signal });
      if (!response.body) return response;
      const seen = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          primed();
          controller.enqueue(chunk);
        },
      });
      return new Response(response.body.pipeThrough(seen), { status: response.status, headers: response.headers });
    };
    const changes: string[] = [];
    const client = new Client({ name: 'resumer', version: '1' }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes.push('tools');
    });
    await client.connect(
      new StreamableHTTPClientTransport(mcpUrl, {
        fetch: fetchThrough,
        reconnectionOptions: {
          initialReconnectionDelay: 1,
          maxReconnectionDelay: 1,
          reconnectionDelayGrowFactor: 1,
          maxRetries: 3,
        },
      }),
    );
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    await firstBytes;
    // Another session's stream tells when this API has sent the change to every session.
    const observer = openSse(mcpUrl, { method: 'GET', headers: await legacySessionHeaders() });
    expect(await observer.status).toBe(200);

    cut.abort(new Error('the network dropped the stream'));
    await waitForTask(
      async () => gets.length,
      (count) => count === 2,
    );
    await publishTools(platform.db, 'w-list', [catalogTool('alpha'), catalogTool('zeta')]);
    await observer.until((all) => all.length >= 1);
    mayReconnect();

    await waitForTask(
      async () => changes,
      (all) => all.length === 1,
    );
    // The SDK resumed from the priming event's id, and the change was replayed to it.
    expect(gets[0]).toBeNull();
    expect(gets[1]).toMatch(/^[0-9a-f-]{36}\.0$/);
    observer.close();
    await client.close();
  });

  it('goes to a 2025-11-25 stdio client once it has initialized', async () => {
    const client = connectStdio(stdioCore(platform, { subscribe: () => () => {} } as never, 100, tools));
    client.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
    });
    expect(await client.answerTo('init')).toMatchObject({ result: { capabilities: { tools: { listChanged: true } } } });
    await publishTools(platform.db, 'w-list', [catalogTool('alpha'), catalogTool('epsilon')]);
    await client.until((all) => all.some((message) => message.method === 'notifications/tools/list_changed'));
    expect(client.received.filter((message) => message.method === 'notifications/tools/list_changed')).toEqual([
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
    ]);
    client.input.end();
    await client.server.closed;
  });
});
