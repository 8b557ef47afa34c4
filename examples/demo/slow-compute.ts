import { defineTool } from '@taskgate/sdk';

const STEP_MS = 50;

export const slowCompute = defineTool<{ seconds: number; label?: string }>({
  name: 'slow_compute',
  title: 'Slow compute',
  description:
    'Works for the given number of seconds, reporting progress and passing a cancellation checkpoint every 50 ms.',
  inputSchema: {
    type: 'object',
    properties: {
      seconds: { type: 'number', minimum: 0, maximum: 600, description: 'How long to work (0: answer at once)' },
      label: { type: 'string', maxLength: 200, description: 'Echoed in the result, to tell calls apart' },
    },
    required: ['seconds'],
    additionalProperties: false,
  },
  annotations: { title: 'Slow compute', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  retry: 'safe',
  timeouts: { idleMs: 5_000, maxMs: 660_000 },
  taskSupport: 'optional',
  async handler({ seconds, label }, ctx) {
    const steps = Math.round((seconds * 1000) / STEP_MS);
    let checksum = 0;
    for (let step = 1; step <= steps; step++) {
      await ctx.checkpoint();
      await ctx.sleep(STEP_MS);
      checksum = (checksum * 31 + step) % 1_000_000_007;
      ctx.progress(step, steps, `step ${step} of ${steps}`);
    }
    return {
      content: [{ type: 'text', text: `computed for ${seconds} s in ${steps} steps${label ? ` (${label})` : ''}` }],
      structuredContent: { seconds, steps, checksum },
    };
  },
});
