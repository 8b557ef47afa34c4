import { listCatalog, type TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { startWorkerRole, type WorkerRole } from '@taskgate/worker';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// Version skew: the API accepted a call under one definition of a tool (the task records its
// fingerprint) and the worker that claims it serves another. The rule (README, "Version skew"):
// run it when its arguments still fit the worker's schema, else fail it -32602 naming both.
const database = useTestDatabase();
const TENANT = 'acme';

const version = (maxLength: number, description: string) =>
  defineTool<{ text: string }>({
    name: 'shout',
    description,
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', maxLength } },
      required: ['text'],
      additionalProperties: false,
    },
    retry: 'safe',
    async handler({ text }) {
      return { content: [{ type: 'text', text: text.toUpperCase() }] };
    },
  });
/** What the API checked calls against: any text up to 100 characters. */
const accepted = version(100, 'shouts (v1)');
/** What the worker serves: at most 5 characters. */
const served = version(5, 'shouts (v2, shorter)');

const logs: { msg: string; [field: string]: unknown }[] = [];
let platform: Platform;
let worker: WorkerRole;

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [accepted] as never });
  worker = await startWorkerRole({
    connectionString: database.url,
    logger: pino({ level: 'info' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
    tools: new ToolRegistry([served] as never),
    graceMs: 1_000,
    listenNotify: true,
    concurrency: 4,
  });
});
afterAll(async () => {
  await worker.stop();
  await platform.stop();
});

const v1 = new ToolRegistry([accepted] as never).fingerprint('shout') as string;
const v2 = new ToolRegistry([served] as never).fingerprint('shout') as string;

const run = async (text: string) => {
  const task = await platform.service.create(TENANT, { tool: 'shout', arguments: { text } });
  expect(task.toolFingerprint).toBe(v1);
  return waitForTask(
    () => platform.service.get(TENANT, task.id),
    (current: TaskRecord) => current.status !== 'working',
  );
};

describe('a task accepted under another version of its tool', () => {
  it('the two versions differ, and the catalog lists the one the worker serves', async () => {
    expect(v1).not.toBe(v2);
    const [listed] = (await listCatalog(platform.db, { windowMs: 60_000 })).filter((tool) => tool.name === 'shout');
    expect(listed?.fingerprint).toBe(v2);
  });

  it("runs when its arguments fit the worker's schema, logging both fingerprints", async () => {
    const task = await run('hey');
    expect(task).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'HEY' }] } });
    expect(logs.find((line) => line.taskId === task.id)).toMatchObject({
      msg: 'running a task accepted under another version of its tool: its arguments fit this one',
      acceptedFingerprint: v1,
      servedFingerprint: v2,
    });
  });

  it("fails with -32602 naming both fingerprints when the worker's schema rejects its arguments, and runs nothing", async () => {
    const task = await run('far too long');
    expect(task.status).toBe('failed');
    expect(task.error).toEqual({
      code: -32602,
      message: `version skew: the call was accepted under shout ${v1}, but this worker serves shout ${v2}, whose input schema rejects its arguments: /text must NOT have more than 5 characters`,
      data: {
        code: 'TG_TOOL_VERSION_SKEW',
        tool: 'shout',
        acceptedFingerprint: v1,
        servedFingerprint: v2,
        errors: [{ path: '/text', message: 'must NOT have more than 5 characters' }],
      },
    });
    expect(task.result).toBeNull();
    expect(logs.find((line) => line.taskId === task.id)?.msg).toBe(
      'failing a task accepted under another version of its tool: its arguments do not fit this one',
    );
  });
});
