import { definePrompt, defineTool, type InputRequest } from '@taskgate/sdk';

// The conformance suite's multi round-trip fixtures (2026-07-28 basic/patterns/mrtr): inline tools
// and a prompt whose ctx.input() is answered input_required with a signed requestState, and whose
// handler runs again on the client's retry. Offered only with TASKGATE_CONFORMANCE=1; they act on
// nothing.

const NO_ARGUMENTS = { type: 'object', properties: {} } as const;

function elicit(message: string, properties: Record<string, unknown>): InputRequest {
  return {
    method: 'elicitation/create',
    params: { message, requestedSchema: { type: 'object', properties, required: Object.keys(properties) } },
  };
}

function sample(text: string, maxTokens: number): InputRequest {
  return {
    method: 'sampling/createMessage',
    params: { messages: [{ role: 'user', content: { type: 'text', text } }], maxTokens },
  };
}

const ROOTS: InputRequest = { method: 'roots/list', params: {} };

/** An elicitation's accepted content, or {}. */
function content(answer: unknown): Record<string, unknown> {
  const result = answer as { action?: unknown; content?: unknown } | undefined;
  return result?.action === 'accept' && typeof result.content === 'object' && result.content !== null
    ? (result.content as Record<string, unknown>)
    : {};
}

/** A sampling result's text, or ''. */
function sampled(answer: unknown): string {
  const text = (answer as { content?: { text?: unknown } } | undefined)?.content?.text;
  return typeof text === 'string' ? text : '';
}

function roots(answer: unknown): string[] {
  const list = (answer as { roots?: unknown } | undefined)?.roots;
  return Array.isArray(list) ? list.map((root) => String((root as { uri?: unknown })?.uri)) : [];
}

function asking(name: string, description: string, handler: Parameters<typeof defineTool>[0]['handler']) {
  return defineTool({
    name,
    description,
    inputSchema: NO_ARGUMENTS,
    annotations: { readOnlyHint: true, openWorldHint: false },
    retry: 'safe',
    inline: true,
    handler,
  });
}

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

export const roundTripTools = [
  asking(
    'test_input_required_result_elicitation',
    'Asks for a name (elicitation), then greets it.',
    async (_input, ctx) => {
      const { user_name } = await ctx.input({ user_name: elicit('What is your name?', { name: { type: 'string' } }) });
      return text(`Hello, ${String(content(user_name).name ?? 'stranger')}!`);
    },
  ),
  asking('test_input_required_result_sampling', 'Asks the client to sample an answer.', async (_input, ctx) => {
    const { capital_question } = await ctx.input({ capital_question: sample('What is the capital of France?', 100) });
    return text(`LLM response: ${sampled(capital_question)}`);
  }),
  asking('test_input_required_result_list_roots', "Asks for the client's roots.", async (_input, ctx) => {
    const { client_roots } = await ctx.input({ client_roots: ROOTS });
    return text(`Roots: ${roots(client_roots).join(', ') || 'none'}`);
  }),
  asking(
    'test_input_required_result_request_state',
    'Asks for a confirmation; the retry is only taken with the requestState the server signed.',
    async (_input, ctx) => {
      const { confirm } = await ctx.input({ confirm: elicit('Please confirm', { ok: { type: 'boolean' } }) });
      // The platform refused any state it did not sign for this call before this line ran.
      return text(`state-ok: confirmed=${content(confirm).ok === true}`);
    },
  ),
  asking(
    'test_input_required_result_multiple_inputs',
    'Asks for an elicitation, a sampling and the roots at once.',
    async (_input, ctx) => {
      const answers = await ctx.input({
        user_name: elicit('What is your name?', { name: { type: 'string' } }),
        greeting: sample('Generate a greeting', 50),
        client_roots: ROOTS,
      });
      return text(
        `name=${String(content(answers.user_name).name)}; greeting=${sampled(answers.greeting)}; roots=${roots(answers.client_roots).length}`,
      );
    },
  ),
  asking('test_input_required_result_multi_round', 'Asks two questions, one round each.', async (_input, ctx) => {
    const { step1 } = await ctx.input({ step1: elicit('Step 1: What is your name?', { name: { type: 'string' } }) });
    const { step2 } = await ctx.input({
      step2: elicit('Step 2: What is your favorite color?', { color: { type: 'string' } }),
    });
    return text(`${String(content(step1).name)} likes ${String(content(step2).color)}`);
  }),
  asking(
    'test_input_required_result_tampered_state',
    'Asks for a confirmation; a retry with an altered requestState is refused.',
    async (_input, ctx) => {
      const { confirm } = await ctx.input({ confirm: elicit('Please confirm', { ok: { type: 'boolean' } }) });
      return text(`confirmed=${content(confirm).ok === true}`);
    },
  ),
  asking(
    'test_input_required_result_capabilities',
    'Asks only for the kinds of input the client declared (sampling, elicitation).',
    async (_input, ctx) => {
      const declared = ctx.clientCapabilities ?? {};
      const requests: Record<string, InputRequest> = {};
      if ('sampling' in declared) requests.sampled = sample('Say something', 20);
      if ('elicitation' in declared) requests.elicited = elicit('Say something', { text: { type: 'string' } });
      if (Object.keys(requests).length === 0) return text('the client declared no way to give input');
      const answers = await ctx.input(requests);
      return text(`answered: ${Object.keys(answers).sort().join(', ')}`);
    },
  ),
];

export const roundTripPrompts = [
  definePrompt({
    name: 'test_input_required_result_prompt',
    description: 'Asks the client for context (elicitation) before making its messages.',
    async get(_args, ctx) {
      const { user_context } = await ctx.input({
        user_context: elicit('What context should the prompt use?', { context: { type: 'string' } }),
      });
      return {
        messages: [
          { role: 'user', content: { type: 'text', text: `Context: ${String(content(user_context).context ?? '')}` } },
        ],
      };
    },
  }),
];

// The same ctx.input() as the tools above, as the handshake-revision scenarios call it: there the
// requests go to the client on the call's stream and the handler waits for the answers.

/** "Elicitation completed: action=..., content={...}", the text these scenarios expect. */
function elicited(answer: unknown): string {
  const result = (answer ?? {}) as { action?: unknown; content?: unknown };
  return `Elicitation completed: action=${String(result.action)}, content=${JSON.stringify(result.content ?? {})}`;
}

function withArgument(
  name: string,
  description: string,
  argument: string,
  handler: Parameters<typeof defineTool<Record<string, string>>>[0]['handler'],
) {
  return defineTool<Record<string, string>>({
    name,
    description,
    inputSchema: {
      type: 'object',
      properties: { [argument]: { type: 'string', minLength: 1, maxLength: 10_000 } },
      required: [argument],
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
    retry: 'safe',
    inline: true,
    handler,
  });
}

export const askingTools = [
  withArgument(
    'test_sampling',
    'Asks the client to sample a reply to the prompt.',
    'prompt',
    async ({ prompt }, ctx) => {
      const { reply } = await ctx.input({ reply: sample(prompt as string, 100) });
      return text(`LLM response: ${sampled(reply)}`);
    },
  ),
  withArgument(
    'test_elicitation',
    'Asks the user for a username and an email.',
    'message',
    async ({ message }, ctx) => {
      const { user } = await ctx.input({
        user: {
          method: 'elicitation/create',
          params: {
            message: message as string,
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" },
              },
              required: ['username', 'email'],
            },
          },
        },
      });
      const result = (user ?? {}) as { action?: unknown; content?: unknown };
      return text(
        `User response: <action: ${String(result.action)}, content: ${JSON.stringify(result.content ?? {})}>`,
      );
    },
  ),
  asking(
    'test_elicitation_sep1034_defaults',
    'Asks with a default for every primitive type (SEP-1034).',
    async (_input, ctx) => {
      const { answer } = await ctx.input({
        answer: {
          method: 'elicitation/create',
          params: {
            message: 'Confirm or change these values',
            requestedSchema: {
              type: 'object',
              properties: {
                name: { type: 'string', default: 'John Doe' },
                age: { type: 'integer', default: 30 },
                score: { type: 'number', default: 95.5 },
                status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
                verified: { type: 'boolean', default: true },
              },
            },
          },
        },
      });
      return text(elicited(answer));
    },
  ),
  asking('test_elicitation_sep1330_enums', 'Asks with each of the five enum forms (SEP-1330).', async (_input, ctx) => {
    const { answer } = await ctx.input({
      answer: {
        method: 'elicitation/create',
        params: {
          message: 'Pick from each list',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              titledSingle: {
                type: 'string',
                oneOf: [
                  { const: 'value1', title: 'First Option' },
                  { const: 'value2', title: 'Second Option' },
                  { const: 'value3', title: 'Third Option' },
                ],
              },
              legacyEnum: {
                type: 'string',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
              titledMulti: {
                type: 'array',
                items: {
                  anyOf: [
                    { const: 'value1', title: 'First Choice' },
                    { const: 'value2', title: 'Second Choice' },
                    { const: 'value3', title: 'Third Choice' },
                  ],
                },
              },
            },
          },
        },
      },
    });
    return text(elicited(answer));
  }),
];
