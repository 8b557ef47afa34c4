import { defineTool, type InputRequest } from '@taskgate/sdk';

// Tools that ask their client for input, as the MCP conformance suite's Tasks scenarios call them
// (docs/design/mcp-tasks-conformance.md). Offered only with TASKGATE_CONFORMANCE=1: they act on
// nothing, they only exercise input_required and the ask-first round trip.

interface ElicitResult {
  readonly action?: unknown;
  readonly content?: Readonly<Record<string, unknown>>;
}

function form(message: string, properties: Record<string, unknown>, required: readonly string[]): InputRequest {
  return {
    method: 'elicitation/create',
    params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } },
  };
}

function accepted(answer: unknown): Readonly<Record<string, unknown>> | null {
  const result = answer as ElicitResult | undefined;
  return result?.action === 'accept' && result.content ? result.content : null;
}

/** Parks for one confirmation, then reports what it would have done. */
export const confirmDelete = defineTool<{ filename: string }>({
  name: 'confirm_delete',
  title: 'Confirm delete',
  description: 'Asks the client to confirm (one elicitation), then reports the decision. Deletes nothing.',
  inputSchema: {
    type: 'object',
    properties: { filename: { type: 'string', minLength: 1, maxLength: 500 } },
    required: ['filename'],
    additionalProperties: false,
  },
  annotations: { title: 'Confirm delete', readOnlyHint: true, openWorldHint: false },
  retry: 'safe',
  taskSupport: 'required',
  requiredClientCapabilities: { elicitation: {} },
  async handler({ filename }, ctx) {
    const { confirm } = await ctx.input({
      confirm: form(`Delete ${filename}?`, { confirm: { type: 'boolean', title: 'Delete it' } }, ['confirm']),
    });
    const yes = accepted(confirm)?.confirm === true;
    return { content: [{ type: 'text', text: yes ? `${filename} would be deleted` : `${filename} is kept` }] };
  },
});

/** Two questions outstanding at once; completes when both are answered. */
export const multiInput = defineTool({
  name: 'multi_input',
  title: 'Multiple inputs',
  description: 'Asks two questions at once (two elicitations), then echoes both answers.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  annotations: { title: 'Multiple inputs', readOnlyHint: true, openWorldHint: false },
  retry: 'safe',
  taskSupport: 'required',
  requiredClientCapabilities: { elicitation: {} },
  async handler(_input, ctx) {
    const properties = { name: { type: 'string' }, confirm: { type: 'boolean' } };
    const answers = await ctx.input({
      first: form('First answer?', properties, []),
      second: form('Second answer?', properties, []),
    });
    const names = ['first', 'second'].map((key) => String(accepted(answers[key])?.name ?? '(declined)'));
    return { content: [{ type: 'text', text: `answers: ${names.join(', ')}` }] };
  },
});

const NAME_QUESTION = form('What is your name?', { name: { type: 'string', title: 'Name' } }, ['name']);

/** Asks in the call (before a task exists), then runs as a task that uses the answer. */
export const testToolWithTask = defineTool({
  name: 'test_tool_with_task',
  title: 'Ask, then task',
  description: 'Asks for a name in the call itself, then creates a task that greets that name.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  annotations: { title: 'Ask, then task', readOnlyHint: true, openWorldHint: false },
  retry: 'safe',
  taskSupport: 'required',
  requiredClientCapabilities: { elicitation: {} },
  askFirst: { name: NAME_QUESTION },
  async handler(_input, ctx) {
    const { name } = await ctx.input({ name: NAME_QUESTION });
    return { content: [{ type: 'text', text: `Hello, ${String(accepted(name)?.name ?? 'stranger')}!` }] };
  },
});
