import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { injectMcp, modernMeta } from '../support/mcp-http.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startApi, startPlatform } from '../support/task-platform.ts';

// A tool that needs a client capability is refused with -32021 (data.requiredCapabilities naming
// what is missing) when the client did not declare it: per request in 2026-07-28, at initialize in
// 2025-11-25; over HTTP and stdio. Nothing runs and no task is created.
const database = useTestDatabase();
const asksUser = defineTool({
  name: 'asks_user',
  description: 'needs the client to accept form elicitation',
  inputSchema: { type: 'object' },
  retry: 'safe',
  requiredClientCapabilities: { elicitation: { form: {} } },
  async handler() {
    return { content: [{ type: 'text', text: 'asked' }] };
  },
});
const MISSING = { elicitation: { form: {} } };

let platform: Platform;
let api: { app: FastifyInstance; close(): Promise<void> };
let hub: TaskEventsHub;
let core: McpCore;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [asksUser] as never });
  await platform.startWorker();
  api = await startApi(platform, database.url);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = stdioCore(platform, hub);
});
afterAll(async () => {
  await hub.stop();
  await api.close();
  await platform.stop();
});

async function tasksOfTool(): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM tasks WHERE tool = 'asks_user'`.execute(
    platform.db,
  );
  return Number(rows[0]?.n);
}

function modernCall(id: number, capabilities: Record<string, unknown>) {
  return injectMcp(api.app, 'tools/call', { name: 'asks_user', arguments: {} }, { capabilities, id });
}

function legacy(body: unknown, headers: Record<string, string> = {}) {
  return api.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    payload: JSON.stringify(body),
  });
}

async function handshakeSession(capabilities: Record<string, unknown>): Promise<Record<string, string>> {
  const initialize = await legacy({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'old', version: '1' } },
  });
  return {
    'mcp-session-id': initialize.headers['mcp-session-id'] as string,
    'mcp-protocol-version': '2025-11-25',
  };
}

function stdioClient() {
  return connectStdio(core);
}

describe('-32021 for a tool that needs an undeclared client capability', () => {
  it('HTTP 2026-07-28: refused with 400 and the missing capability, per request; runs when declared', async () => {
    for (const declared of [{}, { elicitation: {} }, { sampling: {} }]) {
      const refused = await modernCall(1, declared);
      expect(refused.statusCode, refused.body).toBe(400);
      expect(refused.json()).toMatchObject({
        id: 1,
        error: { code: -32021, data: { requiredCapabilities: MISSING } },
      });
    }
    expect(await tasksOfTool()).toBe(0);
    const allowed = await modernCall(2, { elicitation: { form: {}, url: {} } });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.json()).toMatchObject({ id: 2, result: { content: [{ text: 'asked' }] } });
    expect(await tasksOfTool()).toBe(1);
  });

  it('HTTP 2025-11-25: judged by what the session declared at initialize', async () => {
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'asks_user', arguments: {} } };
    const before = await tasksOfTool();
    const bare = await legacy(call, await handshakeSession({}));
    expect(bare.json()).toMatchObject({ id: 7, error: { code: -32021, data: { requiredCapabilities: MISSING } } });
    // Without a session nothing was declared.
    const sessionless = await legacy(call, { 'mcp-protocol-version': '2025-11-25' });
    expect(sessionless.json().error.code).toBe(-32021);
    expect(await tasksOfTool()).toBe(before);
    const declared = await legacy(call, await handshakeSession({ elicitation: { form: {} } }));
    expect(declared.json()).toMatchObject({ id: 7, result: { content: [{ text: 'asked' }] } });
    expect(declared.json().result.resultType).toBeUndefined();
  });

  it('stdio: per request in 2026-07-28, from initialize in 2025-11-25', async () => {
    const modern = stdioClient();
    modern.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'asks_user', arguments: {}, _meta: modernMeta({}) },
    });
    expect(await modern.answerTo(1)).toMatchObject({
      error: { code: -32021, data: { requiredCapabilities: MISSING } },
    });
    modern.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'asks_user', arguments: {}, _meta: modernMeta({ elicitation: { form: {} } }) },
    });
    expect(await modern.answerTo(2)).toMatchObject({ result: { content: [{ text: 'asked' }] } });

    for (const [capabilities, expected] of [
      [{}, { error: { code: -32021 } }],
      [{ elicitation: { form: {} } }, { result: { content: [{ text: 'asked' }] } }],
    ] as const) {
      const old = stdioClient();
      old.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'old', version: '1' } },
      });
      await old.answerTo(1);
      old.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'asks_user', arguments: {} } });
      expect(await old.answerTo(2)).toMatchObject(expected);
    }
  });
});
