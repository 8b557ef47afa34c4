import { defineTool } from '@taskgate/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// A 2025-11-25 client sees a tool error as a `failed` task; without a statusMessage it can show
// nothing but "Task failed", since the tool's text is in the result it fetches separately.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let session: Record<string, string>;

const longFailure = defineTool<Record<string, never>>({
  name: 'long_failure',
  description: 'a tool error with 3,000 astral characters of text',
  inputSchema: { type: 'object', properties: {} },
  retry: 'safe',
  taskSupport: 'optional',
  async handler() {
    // U+1F600 is two UTF-16 units: a cut at a fixed length would split one.
    return { content: [{ type: 'text', text: `x${'😀'.repeat(3_000)}` }], isError: true };
  },
});

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [longFailure] as never });
  await platform.startWorker();
  api = await serveApi(platform, database.url);
  const initialize = await post({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  session = {
    'mcp-session-id': initialize.headers.get('mcp-session-id') as string,
    'mcp-protocol-version': '2025-11-25',
  };
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function post(body: unknown) {
  const response = await fetch(api.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...session },
    body: JSON.stringify(body),
  });
  return { headers: response.headers, body: (await response.json()) as { result: Record<string, unknown> } };
}

let nextId = 1;
const rpc = async (method: string, params: Record<string, unknown>) =>
  (await post({ jsonrpc: '2.0', id: nextId++, method, params })).body.result;

async function failedTask(name: string): Promise<Record<string, unknown>> {
  const created = (await rpc('tools/call', { name, arguments: {}, task: {} })) as { task: { taskId: string } };
  return waitForTask(
    () => rpc('tasks/get', { taskId: created.task.taskId }),
    (task) => task.status === 'failed',
  );
}

describe('2025-11-25 tool errors', () => {
  it("carry the tool's text as the failed task's statusMessage, in tasks/get and tasks/list", async () => {
    const task = await failedTask('failing_job');
    expect(task.statusMessage).toBe('failing_job failed on purpose');
    const listed = (await rpc('tasks/list', {})) as { tasks: Record<string, unknown>[] };
    expect(listed.tasks.find((entry) => entry.taskId === task.taskId)?.statusMessage).toBe(
      'failing_job failed on purpose',
    );
    // The result is still the tool's own answer, untouched.
    expect(await rpc('tasks/result', { taskId: task.taskId })).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'failing_job failed on purpose' }],
    });
  });

  it('bound a long text at 1,000 characters, cut between code points', async () => {
    const task = await failedTask('long_failure');
    const message = task.statusMessage as string;
    expect(message.length).toBeLessThanOrEqual(1_000);
    expect(message.endsWith('…')).toBe(true);
    expect(message.isWellFormed()).toBe(true);
    expect(message.startsWith('x😀😀')).toBe(true);
  });
});
