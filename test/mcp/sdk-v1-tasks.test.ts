import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { listTaskEvents } from '@taskgate/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// Interoperability: the official SDK v1 client's experimental tasks API (MCP 2025-11-25 tasks:
// callToolStream, getTask, getTaskResult, listTasks, cancelTask) against Taskgate over Streamable
// HTTP and over stdio (`taskgate mcp-stdio` as the client's subprocess).
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await serveApi(platform, database.url);
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

async function drain<T>(stream: AsyncGenerator<T>): Promise<T[]> {
  const messages: T[] = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

/** The whole experimental tasks API, against whichever transport the client is connected over. */
async function exercise(client: Client, label: string): Promise<void> {
  const tasks = client.experimental.tasks;
  expect(client.getServerCapabilities()?.tasks).toMatchObject({
    list: {},
    cancel: {},
    requests: { tools: { call: {} } },
  });
  const { tools } = await client.listTools();
  const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
  expect(support).toMatchObject({ greet: 'forbidden', slow_compute: 'optional', failing_job: 'required' });

  // A task from start to result: created, polled, then its result with the related-task _meta.
  const messages = await drain(
    tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 0.3, label } }, CallToolResultSchema, {
      task: { ttl: 60_000 },
    }),
  );
  expect(messages[0]?.type).toBe('taskCreated');
  expect(messages.some((message) => message.type === 'taskStatus')).toBe(true);
  const last = messages.at(-1);
  if (last?.type !== 'result' || messages[0]?.type !== 'taskCreated') throw new Error(JSON.stringify(messages));
  const taskId = messages[0].task.taskId;
  expect(JSON.stringify(last.result.content)).toContain(label);
  expect(last.result._meta).toMatchObject({ 'io.modelcontextprotocol/related-task': { taskId } });
  expect(await tasks.getTask(taskId)).toMatchObject({ taskId, status: 'completed', ttl: 60_000 });
  expect(JSON.stringify((await tasks.getTaskResult(taskId, CallToolResultSchema)).content)).toContain(label);

  // Listed (newest first, paginated), and an ended task cannot be cancelled: -32602.
  let page = await tasks.listTasks();
  const seen = [...page.tasks];
  while (!seen.some((task) => task.taskId === taskId) && page.nextCursor) {
    page = await tasks.listTasks(page.nextCursor);
    seen.push(...page.tasks);
  }
  expect(seen.find((task) => task.taskId === taskId)).toMatchObject({ status: 'completed' });
  const refused = await tasks.cancelTask(taskId).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(McpError);
  expect((refused as McpError).code).toBe(-32602);

  // A tool error is a failed task in this revision; its result still says isError.
  const failing = await drain(tasks.callToolStream({ name: 'failing_job', arguments: {} }, CallToolResultSchema));
  if (failing[0]?.type !== 'taskCreated') throw new Error(JSON.stringify(failing));
  expect(failing.at(-1)?.type).toBe('error');
  const failingId = failing[0].task.taskId;
  expect(await tasks.getTask(failingId)).toMatchObject({ status: 'failed' });
  expect(await tasks.getTaskResult(failingId, CallToolResultSchema)).toMatchObject({ isError: true });

  // Cancelling a running task: cancelled before the answer, and the worker stops the work.
  const running = tasks.callToolStream(
    { name: 'slow_compute', arguments: { seconds: 30, label: `${label}-cancel` } },
    CallToolResultSchema,
    { task: {} },
  );
  const first = (await running.next()).value;
  if (first?.type !== 'taskCreated') throw new Error(JSON.stringify(first));
  const cancelledId = first.task.taskId;
  // Once a worker runs it, so that stopping the work is observable.
  await waitForTask(
    () => listTaskEvents(platform.db, 'default', cancelledId),
    (events) => events.some((event) => event.type === 'attempt_started'),
  );
  expect(await tasks.cancelTask(cancelledId)).toMatchObject({ taskId: cancelledId, status: 'cancelled' });
  const rest = await drain(running);
  expect(rest.at(-1)?.type).toBe('error');
  const history = await waitForTask(
    () => listTaskEvents(platform.db, 'default', cancelledId),
    (events) => events.some((event) => event.type === 'cancel_observed'),
  );
  expect(history.map((event) => event.type)).toEqual([
    'created',
    'attempt_started',
    'cancel_requested',
    'status_changed',
    'cancel_observed',
  ]);
}

describe('the SDK v1 client’s experimental tasks API', () => {
  it('works end to end over Streamable HTTP', async () => {
    const client = new Client({ name: 'taskgate-tasks-interop', version: '1.0.0' }, { defaultTaskPollInterval: 100 });
    await client.connect(new StreamableHTTPClientTransport(api.mcpUrl));
    try {
      await exercise(client, 'over-http');
    } finally {
      await client.close();
    }
  });

  it('works end to end over stdio, with notifications/tasks/status on the pipe', async () => {
    const client = new Client({ name: 'taskgate-tasks-stdio', version: '1.0.0' }, { defaultTaskPollInterval: 100 });
    const statuses: { taskId: string; status: string }[] = [];
    client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => {
      statuses.push({ taskId: notification.params.taskId, status: notification.params.status });
    });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, 'mcp-stdio'],
        cwd: REPO_ROOT,
        env: cleanEnv({ DATABASE_URL: database.url }),
        stderr: 'ignore',
      }),
    );
    try {
      await exercise(client, 'over-stdio');
      // Every task this connection created reported its end, as that revision's status names it.
      const ended = await waitForTask(
        async () => statuses,
        (seen) => new Set(seen.map((entry) => entry.status)).size >= 3,
      );
      expect(new Set(ended.map((entry) => entry.status))).toEqual(new Set(['completed', 'failed', 'cancelled']));
      expect(ended.every((entry) => entry.status !== 'working')).toBe(true);
    } finally {
      await client.close();
    }
  });
});
