import { defineTool } from '@taskgate/sdk';

// The conformance suite's diagnostic tools: logging during a call, a capability the client must
// declare, and an elicitation on the request's own stream. Offered only with TASKGATE_CONFORMANCE=1;
// they act on nothing.

const NO_ARGUMENTS = { type: 'object', properties: {} } as const;
const FIXTURE = { readOnlyHint: true, openWorldHint: false } as const;

function logsThreeTimes(name: string) {
  return defineTool({
    name,
    description: 'Sends three info log messages, 50 ms apart, while it runs.',
    inputSchema: NO_ARGUMENTS,
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    async handler(_input, ctx) {
      ctx.log('info', 'Tool execution started', name);
      await ctx.sleep(50);
      ctx.log('info', 'Tool processing data', name);
      await ctx.sleep(50);
      ctx.log('info', 'Tool execution completed', name);
      return { content: [{ type: 'text', text: 'Logged three messages.' }] };
    },
  });
}

export const diagnosticTools = [
  defineTool<{ region: string; priority?: number; dryRun?: boolean }>({
    name: 'test_custom_headers',
    description: 'Takes parameters a client mirrors into Mcp-Param-* headers (x-mcp-header), and says what it got.',
    inputSchema: {
      type: 'object',
      properties: {
        region: { type: 'string', maxLength: 200, 'x-mcp-header': 'Region' },
        priority: { type: 'integer', 'x-mcp-header': 'Priority' },
        dryRun: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
      },
      required: ['region'],
    },
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    async handler(input) {
      return { content: [{ type: 'text', text: `Headers matched the body: ${JSON.stringify(input)}` }] };
    },
  }),
  logsThreeTimes('test_tool_with_logging'),
  logsThreeTimes('test_logging_tool'),
  defineTool({
    name: 'test_missing_capability',
    description: 'Needs the client to declare sampling; refused with -32021 before it runs otherwise.',
    inputSchema: NO_ARGUMENTS,
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    requiredClientCapabilities: { sampling: {} },
    async handler() {
      return { content: [{ type: 'text', text: 'The client declared sampling.' }] };
    },
  }),
  defineTool({
    name: 'test_streaming_elicitation',
    description: 'Asks for input in the call: the answer is input_required, never a request of its own on the stream.',
    inputSchema: NO_ARGUMENTS,
    annotations: FIXTURE,
    retry: 'safe',
    inline: true,
    async handler(_input, ctx) {
      ctx.progress(1, 2);
      const { answer } = await ctx.input({
        answer: {
          method: 'elicitation/create',
          params: {
            message: 'Anything to add?',
            requestedSchema: { type: 'object', properties: { note: { type: 'string' } } },
          },
        },
      });
      return { content: [{ type: 'text', text: `Answered: ${JSON.stringify(answer)}` }] };
    },
  }),
];
