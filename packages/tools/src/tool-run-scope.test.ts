import { defineTool, TaskCancelledError, type ToolContext } from '@taskgate/sdk';
import { describe, expect, it } from 'vitest';
import { InlineStore } from './inline-store.ts';
import { ToolRun } from './tool-run.ts';

// ctx.signal, the run's root scope, follows the run's stop by a listener (not AbortSignal.any): it
// must be aborted by the stop with the stop's reason, aborted when the run is over whatever ended
// it, and so refuse what a handler that kept its ctx starts after the run is over.
const silent = { info: () => {}, warn: () => {}, debug: () => {} };

/** A run of a tool whose handler is `handler`, in memory, as an inline call runs. */
function runOf(handler: (ctx: ToolContext) => Promise<void>) {
  const tool = defineTool({
    name: 'scoped',
    description: 'uses its scope as the test says',
    inputSchema: { type: 'object' },
    retry: 'safe',
    async handler(_args, ctx) {
      await handler(ctx);
      return { content: [{ type: 'text', text: 'done' }] };
    },
  });
  return new ToolRun(
    {
      id: 'scope-test',
      tenantId: 'default',
      tool: tool.name,
      arguments: {},
      attempt: 1,
      idempotencyKey: null,
      inputResponses: {},
      cancelReason: null,
      idleTimeoutMs: null,
      maxTimeoutMs: null,
    },
    tool as never,
    {
      store: new InlineStore(tool.name),
      elapsedMs: 0,
      retryable: false,
      logger: silent,
      checkpointReadIntervalMs: Number.POSITIVE_INFINITY,
      progressWriteIntervalMs: 0,
      now: Date.now,
    },
  );
}

describe("a run's scope signal", () => {
  it('is aborted when the run is over, for a handler that looked at it', async () => {
    const kept: AbortSignal[] = [];
    await runOf(async (ctx) => {
      kept.push(ctx.signal);
      expect(ctx.signal.aborted).toBe(false);
    }).run();
    expect(kept).toHaveLength(1);
    expect(kept[0]?.aborted).toBe(true);
    expect(String(kept[0]?.reason)).toMatch(/the handler has ended/);
  });

  it('is aborted for a handler that first looks at it after the run is over: nothing new starts bound to it', async () => {
    let late: ToolContext | null = null;
    await runOf(async (ctx) => {
      late = ctx;
    }).run();
    const ctx = late as unknown as ToolContext;
    expect(ctx.signal.aborted).toBe(true);
    await expect(ctx.sleep(60_000)).rejects.toThrow(/the handler has ended/);
  });

  it('follows the run’s stop, whether the handler read it before or after the stop', async () => {
    let before: AbortSignal | null = null;
    let after: AbortSignal | null = null;
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const run = runOf(async (ctx) => {
      before = ctx.signal;
      started();
      await held;
      after = ctx.signal;
    });
    const done = run.run();
    await running;
    run.cancel('the client gave up', null, 'notification');
    expect((before as AbortSignal | null)?.reason).toBeInstanceOf(TaskCancelledError);
    release();
    await done;
    expect((after as AbortSignal | null)?.reason).toBeInstanceOf(TaskCancelledError);
  });
});
