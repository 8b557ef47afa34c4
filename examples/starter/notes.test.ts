import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startTaskgate, type TaskgateHandle } from '@taskgate/cli';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The module under test, run on a whole Taskgate in this process: its embedded Postgres (in a
// temporary folder, so nothing else is touched), its migrations, a worker and the REST API.
const HERE = path.dirname(fileURLToPath(import.meta.url));
let taskgate: TaskgateHandle;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'starter-notes-'));
  taskgate = await startTaskgate({
    tools: ['./index.ts'],
    cwd: HERE,
    port: 0,
    env: { TASKGATE_DATA_DIR: dataDir },
    logger: pino({ level: 'silent' }),
  });
}, 60_000);
afterAll(async () => {
  await taskgate?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

async function addNote(text: string, key?: string) {
  const response = await fetch(`${taskgate.url}/v1/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify({ tool: 'add_note', arguments: { text } }),
  });
  return { status: response.status, task: (await response.json()) as { id: string; status: string } };
}

/** Polls the task until it ends, as a REST client does (GET /v1/tasks/{id}/events would stream it). */
async function finished(id: string) {
  for (;;) {
    const task = (await (await fetch(`${taskgate.url}/v1/tasks/${id}`)).json()) as {
      status: string;
      result?: { structuredContent?: { id?: string } };
    };
    if (['completed', 'failed', 'cancelled'].includes(task.status)) return task;
    await setTimeout(50);
  }
}

describe('add_note', () => {
  it('serves only the module it was given', () => {
    expect(taskgate.modules).toEqual(['starter-notes']);
  });

  it('stores the note in the transaction that completes its task', async () => {
    const { status, task } = await addNote('buy milk');
    expect(status).toBe(201);
    const done = await finished(task.id);
    expect(done.status).toBe('completed');
    expect(done.result?.structuredContent?.id).toMatch(/^\d+$/);
  });

  it('replays a retry with the same key instead of storing the note twice', async () => {
    const first = await addNote('call back', 'note-key-1');
    const done = await finished(first.task.id);
    const retry = await addNote('call back', 'note-key-1');
    expect([first.status, retry.status]).toEqual([201, 200]);
    expect(retry.task.id).toBe(first.task.id);
    expect((await finished(retry.task.id)).result).toEqual(done.result);
  });

  it('refuses arguments its schema does not allow, before any task exists', async () => {
    const { status } = await addNote('');
    expect(status).toBe(422);
  });
});
