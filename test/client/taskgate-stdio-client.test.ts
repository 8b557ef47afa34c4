import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TaskgateClient, type TaskState } from '@taskgate/client';
import { createKysely, createPool } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';

// The client over a real pipe to Taskgate's own `taskgate mcp-stdio`: by default the newest
// revision both speak (2026-07-28, as over HTTP); as a 2025-11-25 session, tools listed and
// called, a task-backed call followed to its result, and giving up on one sent as tasks/cancel —
// never notifications/cancelled, which a task outlives. What the client wrote
// is teed to a file on its way into the server, so the test reads the wire.
const database = useTestDatabase();
let dir: string;
let db: ReturnType<typeof createKysely>;
const clients: TaskgateClient[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'taskgate-stdio-'));
  db = createKysely(createPool(database.url, { applicationName: 'taskgate-test-stdio-client', max: 1 }));
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
});
afterAll(async () => {
  await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

async function connect(name: string, target: { revision?: 'auto' | 'session'; env?: Record<string, string> } = {}) {
  const wire = path.join(dir, `${name}.jsonl`);
  const client = await TaskgateClient.connectStdio({
    ...(target.revision ? { revision: target.revision } : {}),
    command: '/bin/sh',
    args: ['-c', 'tee -a "$WIRE" | exec "$NODE" "$CLI" mcp-stdio'],
    env: {
      PATH: process.env.PATH ?? '',
      WIRE: wire,
      NODE: process.execPath,
      CLI,
      DATABASE_URL: database.url,
      LOG_LEVEL: 'warn',
      ...target.env,
    },
    stderr: 'ignore',
  });
  clients.push(client);
  const sent = async (method: string) =>
    (await readFile(wire, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { method?: string; params?: Record<string, unknown> })
      .filter((message) => message.method === method);
  return { client, sent };
}

async function taskOf(label: string) {
  const { rows } = await sql<{ status: string }>`
    SELECT status FROM tasks WHERE tool = 'slow_compute' AND arguments->>'label' = ${label}`.execute(db);
  return rows[0]?.status;
}

describe('TaskgateClient over stdio to taskgate mcp-stdio', () => {
  it('negotiates 2026-07-28, as over HTTP, and reads resources and prompts there', async () => {
    const { client, sent } = await connect('modern', { env: { TASKGATE_CONFORMANCE: '1' } });
    expect(client.server.protocolVersion).toBe('2026-07-28');
    expect(await sent('initialize')).toEqual([]);
    const greeting = await client.callTool('greet', { name: 'Ann' });
    expect(greeting.structuredContent).toEqual({ greeting: 'Hello, Ann!' });
    const read = await client.readResource('test://static-text');
    expect(read.contents).toMatchObject([{ uri: 'test://static-text', text: expect.any(String) }]);
    const prompt = await client.getPrompt('test_prompt_with_arguments', { arg1: 'a', arg2: 'b' });
    expect(prompt.messages).toMatchObject([{ role: 'user' }]);
    // Every request carried 2026-07-28's per-request fields.
    const [called] = await sent('tools/call');
    expect(called?.params?._meta).toMatchObject({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28' });
  });

  it('lists and calls tools; an asTask call is followed to its result', async () => {
    const { client, sent } = await connect('call', { revision: 'session' });
    expect(client.server.protocolVersion).toBe('2025-11-25');
    expect((await client.listTools()).map((tool) => tool.name)).toContain('greet');
    const greeting = await client.callTool('greet', { name: 'Ann' });
    expect(greeting.structuredContent).toEqual({ greeting: 'Hello, Ann!' });
    const seen: TaskState[] = [];
    const result = await client.callTool(
      'slow_compute',
      { seconds: 0.3, label: 'stdio-task' },
      { asTask: true, onTask: (task) => seen.push(task) },
    );
    expect(result.structuredContent).toMatchObject({ seconds: 0.3 });
    expect(seen[0]?.taskId).toEqual(expect.any(String));
    expect(await taskOf('stdio-task')).toBe('completed');
    expect((await sent('tasks/result')).length).toBe(1);
  });

  it('giving up on a task-backed call sends tasks/cancel, and the task ends cancelled', async () => {
    const { client, sent } = await connect('give-up', { revision: 'session' });
    const controller = new AbortController();
    let handedOver!: () => void;
    const isTask = new Promise<void>((resolve) => {
      handedOver = resolve;
    });
    const call = client.callTool(
      'slow_compute',
      { seconds: 30, label: 'stdio-give-up' },
      { asTask: true, signal: controller.signal, onTask: () => handedOver() },
    );
    call.catch(() => {});
    await isTask;
    controller.abort(new Error('stop'));
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    // tasks/cancel went out on the pipe; the task ends cancelled (a checkpoint, then the status).
    await expect.poll(() => sent('tasks/cancel').then((lines) => lines.length), { timeout: 5_000 }).toBe(1);
    await expect.poll(() => taskOf('stdio-give-up'), { timeout: 10_000 }).toBe('cancelled');
    expect(await sent('notifications/cancelled')).toEqual([]);
  });

  it('a plain call cancelled on stdio is a notifications/cancelled with its id', async () => {
    const { client, sent } = await connect('plain-cancel', { revision: 'session' });
    const controller = new AbortController();
    const call = client.callTool(
      'slow_compute',
      { seconds: 30, label: 'stdio-plain-cancel' },
      {
        signal: controller.signal,
        // The first progress says the server is running it: cancel then, not before it arrived.
        onProgress: () => controller.abort(new Error('stop')),
      },
    );
    const error = await call.then(
      () => null,
      (reason: unknown) => reason,
    );
    expect(isTaskgateError(error) && error.code).toBe('TG_CALL_CANCELLED');
    const [called] = await sent('tools/call').then((lines) =>
      lines.filter((line) => (line.params as { name?: string }).name === 'slow_compute'),
    );
    await expect
      .poll(() => sent('notifications/cancelled'), { timeout: 5_000 })
      .toEqual([
        expect.objectContaining({ params: expect.objectContaining({ requestId: (called as { id?: unknown }).id }) }),
      ]);
    await expect.poll(() => taskOf('stdio-plain-cancel'), { timeout: 10_000 }).toBe('cancelled');
  });
});
