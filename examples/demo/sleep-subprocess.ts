import { defineTool } from '@taskgate/sdk';

/**
 * A process tree: a shell whose two children sleep. What it shows is ctx.spawn()'s reach — a
 * cancel, a clock or a worker handing the task back ends every process of the tree (the shell
 * alone dying would leave both sleeps running), SIGTERM first and SIGKILL 2 s later.
 */
export const sleepSubprocess = defineTool<{ seconds: number }>({
  name: 'sleep_subprocess',
  title: 'Sleep in a process tree',
  description:
    'Runs a shell with two sleeping children for the given number of seconds; a cancel ends all three processes.',
  inputSchema: {
    type: 'object',
    properties: {
      seconds: { type: 'number', minimum: 0, maximum: 600, description: 'How long the tree sleeps' },
    },
    required: ['seconds'],
    additionalProperties: false,
  },
  annotations: { title: 'Sleep in a process tree', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  retry: 'safe',
  // Progress comes once a second: the idle clock catches a tree that stopped being watched.
  timeouts: { idleMs: 5_000, maxMs: 660_000 },
  subprocessGraceMs: 2_000,
  taskSupport: 'optional',
  async handler({ seconds }, ctx) {
    const started = Date.now();
    const ticking = setInterval(() => {
      ctx.progress(Math.min(seconds, Math.floor((Date.now() - started) / 1000)), seconds);
    }, 1_000);
    try {
      const tree = await ctx.spawn('sh', ['-c', 'sleep "$1" & sleep "$1" & wait', 'sleep_subprocess', String(seconds)]);
      return {
        content: [{ type: 'text', text: `slept ${seconds} s in a tree of three processes` }],
        structuredContent: { seconds, exitCode: tree.exitCode },
      };
    } finally {
      clearInterval(ticking);
    }
  },
});
