import type { TaskRecord } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { MAX_TOOL_RESULT_BYTES } from '@taskgate/tools';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, startPlatform, waitForTask } from '../support/task-platform.ts';

// A handler's result reaches clients as a CallToolResult: one that is not fails the task, naming
// the tool, instead of completing it with something every client refuses.
const database = useTestDatabase();
const TENANT = 'acme';
const returns = (name: string, result: unknown, extra: Record<string, unknown> = {}) =>
  defineTool({
    name,
    description: 'returns what it is told to',
    inputSchema: { type: 'object' },
    retry: 'safe',
    ...extra,
    handler: async () => result as never,
  });
const tools: unknown[] = [
  returns('returns_string_content', { content: 'nope' }),
  returns('returns_nothing', undefined),
  // One byte past the bound, as JSON: {"content":[{"type":"text","text":""}]} is 39 bytes around the text.
  returns('returns_too_much', { content: [{ type: 'text', text: 'x'.repeat(MAX_TOOL_RESULT_BYTES - 38) }] }),
  returns(
    'returns_off_schema',
    { content: [], structuredContent: { n: 'not a number' } },
    { outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } },
  ),
  returns(
    'returns_on_schema',
    { content: [], structuredContent: { n: 1 } },
    { outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } },
  ),
];

// Handlers that go on after their ctx.commit completed the task: the task keeps what committed.
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
tools.push(
  defineTool({
    name: 'commits_twice',
    description: 'commits, then commits again',
    inputSchema: { type: 'object' },
    retry: 'safe',
    async handler(_input, ctx) {
      const first = await ctx.commit(async () => text('first'));
      await ctx.commit(async () => text('second'));
      return first;
    },
  }),
  defineTool({
    name: 'returns_other_than_commit',
    description: 'commits one result and returns another',
    inputSchema: { type: 'object' },
    retry: 'safe',
    async handler(_input, ctx) {
      await ctx.commit(async () => text('committed'));
      return text('returned');
    },
  }),
);

tools.push(
  defineTool({
    name: 'progress_not_numbers',
    description: 'reports progress wrongly twice, then rightly',
    inputSchema: { type: 'object' },
    retry: 'safe',
    async handler(_input, ctx) {
      ctx.progress(Number.NaN);
      ctx.progress(1, Number.POSITIVE_INFINITY);
      ctx.progress(1, 2, 'half way');
      return text('done');
    },
  }),
);

const logs: { level: number; msg: string; tool?: string }[] = [];
let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: tools as never });
  await platform.startWorker({
    logger: pino({ level: 'warn' }, { write: (line: string) => logs.push(JSON.parse(line)) }),
  });
});
afterAll(async () => {
  await platform.stop();
});

async function run(tool: string): Promise<TaskRecord> {
  const created = await platform.service.create(TENANT, { tool, arguments: {} });
  return waitForTask(
    () => platform.service.get(TENANT, created.id),
    (task) => ['completed', 'failed', 'cancelled'].includes(task.status),
  );
}

describe("a handler's result", () => {
  it.each([
    ['returns_string_content', 'its result has no content array'],
    ['returns_nothing', 'it returned nothing, not a { content: [...] } result'],
    ['returns_off_schema', 'its structuredContent does not match its outputSchema (/n must be number)'],
    [
      'returns_too_much',
      `its result is ${MAX_TOOL_RESULT_BYTES + 1} bytes as JSON, more than the ${MAX_TOOL_RESULT_BYTES} a result may be (a large output belongs in storage the result links to)`,
    ],
  ])('fails the task when %s', async (tool, problem) => {
    const task = await run(tool);
    expect(task.status).toBe('failed');
    expect(task.error).toMatchObject({ code: -32603, message: `tool ${tool} returned an invalid result: ${problem}` });
  });

  it.each([
    [
      'commits_twice',
      'first',
      'the handler threw after its ctx.commit completed the task; the task keeps the committed result',
    ],
    [
      'returns_other_than_commit',
      'committed',
      'the handler returned a result other than the one its ctx.commit stored; the task keeps the committed one',
    ],
  ])('keeps the committed result when %s, and says so in the log', async (tool, kept, warning) => {
    const task = await run(tool);
    expect(task.status).toBe('completed');
    expect(task.result).toEqual(text(kept));
    expect(logs).toContainEqual(expect.objectContaining({ level: 40, tool, msg: warning }));
  });

  it('completes the task when it fits', async () => {
    expect((await run('returns_on_schema')).status).toBe('completed');
  });
});

describe('ctx.progress', () => {
  it('ignores a value or total that is not a finite number, says so once, and takes the next good one', async () => {
    const task = await run('progress_not_numbers');
    expect(task.status).toBe('completed');
    expect(task.progress).toMatchObject({ value: 1, total: 2, message: 'half way' });
    const warnings = logs.filter((line) => line.tool === 'progress_not_numbers');
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'ctx.progress ignored a call: value and total must be finite numbers and message a string',
      }),
    ]);
  });
});
