import { type McpCore, TaskEventsHub } from '@taskgate/api';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { testCore } from '../support/stdio-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform } from '../support/task-platform.ts';

// ctx.log() of a durable tool (server/utilities/logging, issue 15 item 4): the worker keeps the
// messages that pass the calling request's level with the task (task_log_messages), and the API
// instance whose request waits sends them as notifications/message, in order, while the task runs
// and before the response. No level asked for: nothing is kept.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;
let apiA: Awaited<ReturnType<typeof serveApi>>;
let apiB: Awaited<ReturnType<typeof serveApi>>;

const leveled = defineTool({
  name: 'durable_leveled_logs',
  description: 'One message at each of debug, warning and emergency, then it returns at once.',
  inputSchema: { type: 'object', properties: { tag: { type: 'string' } } },
  retry: 'safe',
  async handler(_input, ctx) {
    ctx.log('debug', { step: 1 });
    ctx.log('warning', 'careful', 'checks');
    ctx.log('emergency', ['x']);
    return { content: [{ type: 'text', text: 'done' }] };
  },
});
const burst = defineTool({
  name: 'durable_burst_logs',
  description: 'Logs more than a run may send.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    for (let i = 0; i < 250; i += 1) ctx.log('info', i);
    return { content: [] };
  },
});
const huge = defineTool({
  name: 'durable_huge_log',
  description: 'Logs one message bigger than a log message may be.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    ctx.log('info', 'x'.repeat(64 * 1024));
    return { content: [] };
  },
});
/** Released by the test once the first message has reached it: proves delivery while the task runs. */
let release: () => void = () => {};
const gated = defineTool({
  name: 'durable_gated_logs',
  description: 'Logs, then waits for the test to have heard it, then logs again.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    ctx.log('info', 'before the gate');
    await new Promise<void>((resolve) => {
      release = resolve;
    });
    ctx.log('info', 'after the gate');
    return { content: [{ type: 'text', text: 'through' }] };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [leveled, burst, gated, huge] });
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = testCore(platform, hub);
  apiA = await serveApi(platform, database.url);
  apiB = await serveApi(platform, database.url);
});
afterAll(async () => {
  await hub.stop();
  await apiA.close();
  await apiB.close();
  await platform.stop();
});

async function call(tool: string, logLevel: unknown, onMessage?: (message: Record<string, unknown>) => void) {
  const messages: Record<string, unknown>[] = [];
  const outcome = await core.request(
    'tools/call',
    { name: tool, arguments: {} },
    {
      tenantId: 'default',
      signal: new AbortController().signal,
      revision: '2026-07-28',
      clientCapabilities: {},
      ...(logLevel === undefined ? {} : { logLevel: logLevel as never }),
      onLog: (message) => {
        messages.push(message);
        onMessage?.(message);
      },
    },
  );
  return { outcome, messages };
}

async function lastTask(tool: string) {
  const { rows } = await sql<{ log_level: string | null; log_count: number; kept: number }>`
    SELECT t.log_level, t.log_count, (SELECT count(*)::int FROM task_log_messages m WHERE m.task_id = t.id) AS kept
    FROM tasks t WHERE t.tool = ${tool} ORDER BY t.created_at DESC LIMIT 1`.execute(platform.db);
  return rows[0];
}

describe('a durable tool’s ctx.log()', () => {
  it('reaches the request at or above its level, in order, before the response', async () => {
    const levels = async (level: unknown) => (await call('durable_leveled_logs', level)).messages.map((m) => m.params);
    expect(await levels('debug')).toEqual([
      { level: 'debug', data: { step: 1 } },
      { level: 'warning', data: 'careful', logger: 'checks' },
      { level: 'emergency', data: ['x'] },
    ]);
    const warning = await call('durable_leveled_logs', 'warning');
    expect(warning.outcome).toMatchObject({ kind: 'result', result: { content: [{ text: 'done' }] } });
    expect(warning.messages.map((m) => m.params)).toEqual([
      { level: 'warning', data: 'careful', logger: 'checks' },
      { level: 'emergency', data: ['x'] },
    ]);
    // The worker kept only what passes the level.
    expect(await lastTask('durable_leveled_logs')).toEqual({ log_level: 'warning', log_count: 2, kept: 2 });
  });

  it('keeps nothing when the request asked for no level', async () => {
    for (const level of [undefined, null]) {
      const quiet = await call('durable_leveled_logs', level);
      expect(quiet.outcome?.kind).toBe('result');
      expect(quiet.messages).toEqual([]);
      expect(await lastTask('durable_leveled_logs')).toEqual({ log_level: null, log_count: 0, kept: 0 });
    }
  });

  it('sends at most 200 messages of one run, each once and in order', async () => {
    const { messages } = await call('durable_burst_logs', 'info');
    expect(messages.map((m) => (m.params as { data: unknown }).data)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it('fails a run that logs more than 64 KiB of JSON in one message, and keeps none of it', async () => {
    const { outcome, messages } = await call('durable_huge_log', 'debug');
    expect(outcome).toMatchObject({ kind: 'error', error: { code: -32603 } });
    expect(JSON.stringify(outcome)).toContain('at most 64 KiB');
    expect(messages).toEqual([]);
    expect(await lastTask('durable_huge_log')).toMatchObject({ log_count: 0, kept: 0 });
  });

  it('sends a message while the task still runs, not only at its end', async () => {
    const heard: string[] = [];
    const { outcome } = await call('durable_gated_logs', 'info', (message) => {
      const data = (message.params as { data: string }).data;
      heard.push(data);
      // The handler waits for this: had the message waited for the task's end, nothing would release it.
      if (data === 'before the gate') release();
    });
    expect(heard).toEqual(['before the gate', 'after the gate']);
    expect(outcome).toMatchObject({ kind: 'result', result: { content: [{ text: 'through' }] } });
  });
});

describe('over Streamable HTTP', () => {
  it('2025-11-25: the session’s level set through one instance; the call’s messages through another', async () => {
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
    await post(apiA.mcpUrl, { id: 1, method: 'logging/setLevel', params: { level: 'warning' } }, session);
    const response = await post(
      apiB.mcpUrl,
      { id: 2, method: 'tools/call', params: { name: 'durable_leveled_logs', arguments: {} } },
      session,
    );
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const messages = (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    expect(messages.map((m) => m.method ?? m.id)).toEqual(['notifications/message', 'notifications/message', 2]);
    expect(messages[0]?.params).toEqual({ level: 'warning', data: 'careful', logger: 'checks' });
  });
});
