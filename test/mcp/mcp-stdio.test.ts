import { type McpCore, TaskEventsHub } from '@taskgate/api';
import type { TaskRecord } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { connectStdio, stdioCore } from '../support/stdio-client.ts';
import { type Platform, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// MCP over stdio (revision 2026-07-28): a StreamConnection on in-memory pipes, against real tasks.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = stdioCore(platform, hub);
});
afterAll(async () => {
  await hub.stop();
  await platform.stop();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** A stdio client that also sends requests with the per-request _meta. */
function connect() {
  const client = connectStdio(core);
  const request = (id: string | number, method: string, params: Record<string, unknown> = {}) =>
    client.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...META, ...(params._meta as object) } } });
  return { ...client, request };
}

async function workingTask(tool: string): Promise<string> {
  const id = await waitForTask(
    async () => {
      const { rows } = await sql<{ id: string }>`
        SELECT id FROM tasks WHERE tool = ${tool} AND status = 'working' AND attempt >= 1 AND cancel_requested_at IS NULL
        ORDER BY created_at DESC LIMIT 1`.execute(platform.db);
      return rows[0]?.id;
    },
    (found) => found !== undefined,
  );
  return id as string;
}

const terminal = (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status);

describe('MCP over stdio', () => {
  it('answers server/discover and tools/call, one JSON-RPC message per line', async () => {
    const client = connect();
    client.request('d', 'server/discover');
    expect(await client.answerTo('d')).toMatchObject({
      result: { supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] },
    });
    client.request(1, 'tools/call', { name: 'greet', arguments: { name: 'Grace' } });
    const answer = (await client.answerTo(1)) as { result: { content: unknown[] } };
    expect(JSON.stringify(answer.result.content)).toContain('Grace');
    client.input.end();
    await client.server.closed;
  });

  it('speaks the negotiated revision from the line after initialize, even in the same write', async () => {
    const client = connectStdio(core);
    // One chunk, two lines: the second is read before the first's answer is written.
    const initialize = {
      jsonrpc: '2.0',
      id: 'i',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const list = { jsonrpc: '2.0', id: 'l', method: 'tools/list', params: {} };
    client.input.write(`${JSON.stringify(initialize)}\n${JSON.stringify(list)}\n`);
    expect(await client.answerTo('i')).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
    const listed = (await client.answerTo('l')) as { result?: { tools?: { name: string }[] } };
    expect(listed.result?.tools?.map((tool) => tool.name)).toContain('greet');
    client.input.end();
    await client.server.closed;
  });

  it('(A) cancel, then the work would complete: the task ends cancelled and the request gets no response', async () => {
    const client = connect();
    client.request('slow-a', 'tools/call', { name: 'slow_compute', arguments: { seconds: 5 } });
    const taskId = await workingTask('slow_compute');
    client.send({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'slow-a', reason: 'user gave up' },
    });
    const ended = await waitForTask(() => platform.service.get('default', taskId), terminal);
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'user gave up' });
    // A later request's answer arrives; nothing ever arrived for the cancelled one.
    client.request('after-a', 'server/discover');
    await client.answerTo('after-a');
    expect(client.received.filter((message) => message.id === 'slow-a')).toEqual([]);
    client.input.end();
    await client.server.closed;
  });

  it('(B) complete, then cancel: the response stands and the late cancel is ignored without a reply', async () => {
    const client = connect();
    client.request('fast-b', 'tools/call', { name: 'greet', arguments: { name: 'B' } });
    await client.answerTo('fast-b');
    const before = client.received.length;
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'fast-b' } });
    client.request('after-b', 'server/discover');
    await client.answerTo('after-b');
    expect(client.received.length).toBe(before + 1);
    client.input.end();
    await client.server.closed;
  });

  it('ignores malformed, unknown and duplicate cancels silently', async () => {
    const client = connect();
    client.request('slow-x', 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.4 } });
    for (const params of [
      {},
      { requestId: null },
      { requestId: 'nobody' },
      { requestId: 1.5 },
      { requestId: 'slow-x', reason: 7 },
    ]) {
      client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params });
    }
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow-x' } });
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow-x' } });
    client.request('after-x', 'server/discover');
    await client.answerTo('after-x');
    // Only the discover answer: no error replies to any cancel, and nothing for the cancelled call.
    expect(client.received.map((message) => message.id)).toEqual(['after-x']);
    client.input.end();
    await client.server.closed;
  });

  it('cancels every request in flight when stdin ends', async () => {
    const client = connect();
    client.request('slow-eof', 'tools/call', { name: 'slow_compute', arguments: { seconds: 5 } });
    const taskId = await workingTask('slow_compute');
    client.input.end();
    await client.server.closed;
    const ended = await waitForTask(() => platform.service.get('default', taskId), terminal);
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'stdin closed' });
    expect(client.received.filter((message) => message.id === 'slow-eof')).toEqual([]);
  });

  it('sends strictly increasing notifications/progress for a call with a progress token, then the response', async () => {
    const client = connect();
    client.request('p', 'tools/call', {
      name: 'slow_compute',
      arguments: { seconds: 0.5 },
      _meta: { progressToken: 42 },
    });
    await client.answerTo('p');
    const progress = client.received.filter((message) => message.method === 'notifications/progress') as {
      params: { progressToken: number; progress: number };
    }[];
    expect(progress.length).toBeGreaterThan(0);
    const values = progress.map((message) => message.params.progress);
    expect(values).toEqual([...new Set(values)].sort((a, b) => a - b));
    expect(progress.every((message) => message.params.progressToken === 42)).toBe(true);
    expect(client.received.at(-1)).toMatchObject({ id: 'p', result: { resultType: 'complete' } });
    client.input.end();
    await client.server.closed;
  });

  it('answers parse errors, invalid messages, missing _meta and unknown methods with JSON-RPC errors, and initialize with its result', async () => {
    const client = connect();
    client.send('{"jsonrpc": "2.0", "id": 1, "method": ');
    client.send({ jsonrpc: '2.0', id: 'v', method: 7 });
    client.send({ jsonrpc: '2.0', id: 'm', method: 'tools/list', params: {} });
    client.request('u', 'widgets/list');
    client.send({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-11-25' } });
    await client.answerTo('i');
    await client.answerTo('u');
    const byId = new Map(client.received.map((message) => [message.id, message]));
    expect(byId.get(null)).toMatchObject({ error: { code: -32700 } });
    expect(byId.get('v')).toMatchObject({ error: { code: -32600 } });
    expect(byId.get('m')).toMatchObject({ error: { code: -32602 } });
    expect(byId.get('u')).toMatchObject({ error: { code: -32601 } });
    // initialize opens the 2025-11-25 era on this pipe.
    expect(byId.get('i')).toMatchObject({
      result: { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: true } } },
    });
    client.input.end();
    await client.server.closed;
  });
});
