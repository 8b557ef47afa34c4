import { defineTool } from '@taskgate/sdk';

export const greet = defineTool<{ name: string }>({
  name: 'greet',
  title: 'Greet',
  description: 'Says hello. Answers at once; useful to check that calls get through.',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1, maxLength: 200, description: 'Who to greet' } },
    required: ['name'],
    additionalProperties: false,
  },
  annotations: { title: 'Greet', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  retry: 'safe',
  timeouts: { maxMs: 10_000 },
  // Always answered in the call, never as a task (the conformance suite's synchronous fixture).
  taskSupport: 'forbidden',
  async handler({ name }) {
    return { content: [{ type: 'text', text: `Hello, ${name}!` }], structuredContent: { greeting: `Hello, ${name}!` } };
  },
});
