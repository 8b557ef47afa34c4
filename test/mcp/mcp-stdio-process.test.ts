import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listTaskEvents, startEmbeddedPostgres, type TaskRecord } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, REPO_ROOT } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// `taskgate mcp-stdio` as a client launches it: a real child process, protocol on its pipes.
const database = useTestDatabase();
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url);
});
afterAll(async () => {
  await platform.stop();
});

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

describe('taskgate mcp-stdio', () => {
  it('speaks MCP on stdout only, cancels on notifications/cancelled, and exits when stdin closes', async () => {
    const child = spawn(process.execPath, [CLI, 'mcp-stdio'], {
      cwd: REPO_ROOT,
      env: cleanEnv({ DATABASE_URL: database.url }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stdoutLines: string[] = [];
    let stderr = '';
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      stdoutLines.push(...lines);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
    const answerTo = (id: string) =>
      waitForTask(
        async () => stdoutLines.map((line) => JSON.parse(line)).find((message) => message.id === id),
        (message) => message !== undefined,
        30_000,
      );

    send({
      jsonrpc: '2.0',
      id: 'greet',
      method: 'tools/call',
      params: { name: 'greet', arguments: { name: 'Lin' }, _meta: META },
    });
    expect(JSON.stringify(await answerTo('greet'))).toContain('Lin');

    // Lab D on stdio: there is no stream to close, so the cancel is a notification.
    send({
      jsonrpc: '2.0',
      id: 'slow',
      method: 'tools/call',
      params: { name: 'slow_compute', arguments: { seconds: 10 }, _meta: META },
    });
    const taskId = (await waitForTask(
      async () => {
        const { rows } = await sql<{ id: string }>`
          SELECT id FROM tasks WHERE tool = 'slow_compute' AND status = 'working' AND attempt >= 1`.execute(
          platform.db,
        );
        return rows[0]?.id;
      },
      (id) => id !== undefined,
      30_000,
    )) as string;
    send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'stop' } });
    const ended = await waitForTask(
      () => platform.service.get('default', taskId),
      (task: TaskRecord) => task.status !== 'working',
    );
    expect(ended).toMatchObject({ status: 'cancelled', cancelReason: 'stop' });
    const history = await listTaskEvents(platform.db, 'default', taskId);
    expect(history.map((event) => event.type)).toEqual(expect.arrayContaining(['cancel_requested', 'cancel_observed']));

    send({ jsonrpc: '2.0', id: 'last', method: 'server/discover', params: { _meta: META } });
    await answerTo('last');
    child.stdin.end();
    expect(await exited).toBe(0);

    // stdout carried protocol messages and nothing else; the logs went to stderr.
    const messages = stdoutLines.map((line) => JSON.parse(line));
    expect(messages.every((message) => message.jsonrpc === '2.0')).toBe(true);
    expect(messages.map((message) => message.id)).toEqual(['greet', 'last']);
    expect(stderr).toContain('mcp-stdio ready');
  }, 60_000);
});

describe('taskgate mcp-stdio on the embedded database', () => {
  it('cancels a call still running when stdin ends, rather than handing its task back', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'taskgate-stdio-'));
    const child = spawn(process.execPath, [CLI, 'mcp-stdio'], {
      cwd: REPO_ROOT,
      env: cleanEnv({ TASKGATE_DATA_DIR: dataDir }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.resume();
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: '2.0',
        id: 'long',
        method: 'tools/call',
        params: { name: 'slow_compute', arguments: { seconds: 30 }, _meta: { ...META, progressToken: 'p' } },
      })}\n`,
    );
    // Progress on stdout: the handler is running.
    await waitForTask(
      async () => stdout,
      (text) => text.includes('notifications/progress'),
      30_000,
    );
    child.stdin.end();
    expect(await exited).toBe(0);

    const embedded = await startEmbeddedPostgres({ dataDir });
    const client = testClient({ connectionString: embedded.connectionString });
    await client.connect();
    try {
      const { rows } = await client.query<{ status: string; cancel_reason: string | null; events: string[] }>(
        `SELECT t.status, t.cancel_reason,
                array_agg(e.type ORDER BY e.id) AS events
         FROM tasks t JOIN task_events e ON e.task_id = t.id
         WHERE t.tool = 'slow_compute' GROUP BY t.id`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'cancelled', cancel_reason: 'stdin closed' });
      expect(rows[0]?.events).toContain('cancel_observed');
      expect(rows[0]?.events).not.toContain('attempt_released');
    } finally {
      await client.end();
      await embedded.stop();
    }
  }, 90_000);
});
