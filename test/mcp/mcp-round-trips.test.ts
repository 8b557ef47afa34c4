import { randomBytes } from 'node:crypto';
import { createMcpCore, type McpCore, TaskEventsHub } from '@taskgate/api';
import { definePrompt, defineResource, defineTool, type InputRequest } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prompts } from '../../examples/conformance/index.ts';
import { roundTripTools } from '../../examples/conformance/round-trip-fixtures.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// Multi round-trip requests (2026-07-28 basic/patterns/mrtr) of inline tools and prompts: a
// handler's ctx.input() of unanswered keys is answered input_required with a signed requestState,
// and the retry runs it again with every answer so far. The state is refused when altered, another
// tenant's, another request's, or made under another key; any instance with the same key takes it.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
const key = randomBytes(32);

/** Counts its runs: each round runs the handler from the start. */
let greeterRuns = 0;
const greeter = defineTool<{ who: string }>({
  name: 'greeter',
  description: 'Asks a name, then greets.',
  inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
  retry: 'safe',
  inline: true,
  async handler({ who }, ctx) {
    greeterRuns += 1;
    const { name } = await ctx.input({
      name: { method: 'elicitation/create', params: { message: `Name for ${who}?`, requestedSchema: {} } },
    });
    return { content: [{ type: 'text', text: `hello ${JSON.stringify(name)}` }] };
  },
});
let chargerRuns = 0;
const charger = defineTool({
  name: 'charger',
  description: 'Asks for an amount in whole cents, then charges it.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    const { amount } = await ctx.input({
      amount: {
        method: 'elicitation/create',
        params: {
          message: 'How many cents?',
          requestedSchema: {
            type: 'object',
            properties: { cents: { type: 'integer', minimum: 1 } },
            required: ['cents'],
          },
        },
      },
    });
    chargerRuns += 1;
    const { cents } = (amount as { content: { cents: number } }).content;
    return { content: [{ type: 'text', text: `charged ${cents} cents` }] };
  },
});
const oddAsker = defineTool({
  name: 'odd_asker',
  description: 'Asks with a method MCP does not define.',
  inputSchema: { type: 'object' },
  retry: 'safe',
  inline: true,
  async handler(_input, ctx) {
    await ctx.input({ x: { method: 'tools/call', params: {} } });
    return { content: [] };
  },
});

/** One elicitation asking whole cents, as the charger asks, for the prompt and resource below. */
const CENTS: InputRequest = {
  method: 'elicitation/create',
  params: {
    message: 'How many cents?',
    requestedSchema: { type: 'object', properties: { cents: { type: 'integer', minimum: 1 } }, required: ['cents'] },
  },
};
let centsSeen: unknown[] = [];
const centsOf = (answer: unknown) => {
  const { cents } = (answer as { content: { cents: unknown } }).content;
  centsSeen.push(cents);
  return String(cents);
};
const centsPrompt = definePrompt({
  name: 'cents_prompt',
  description: 'Asks for an amount in whole cents, then says it.',
  async get(_args, ctx) {
    const { amount } = await ctx.input({ amount: CENTS });
    return { messages: [{ role: 'user', content: { type: 'text', text: `${centsOf(amount)} cents` } }] };
  },
});
const centsResource = defineResource({
  uri: 'test://cents',
  name: 'cents',
  description: 'Asks for an amount in whole cents, then reads it.',
  async read(ctx) {
    const { amount } = await ctx.input({ amount: CENTS });
    return [{ text: `${centsOf(amount)} cents` }];
  },
});

function coreWith(stateKey: Buffer): McpCore {
  return createMcpCore({
    service: platform.service,
    hub,
    tools: new ToolRegistry([...roundTripTools, greeter, charger, oddAsker]),
    server: { name: 'taskgate', version: 'test' },
    pollMs: 100,
    content: [{ prompts: [...prompts, centsPrompt], resources: [centsResource] }],
    requestStateKey: stateKey,
    logger: silentLogger,
  });
}

let core: McpCore;
beforeAll(async () => {
  platform = await startPlatform(database.url);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = coreWith(key);
});
afterAll(async () => {
  await hub.stop();
  await platform.stop();
});

const ELICIT = { elicitation: {} };
const ALL = { elicitation: {}, sampling: {}, roots: {} };

async function call(
  params: Record<string, unknown>,
  options: { capabilities?: Record<string, unknown>; tenant?: string; revision?: string; on?: McpCore } = {},
) {
  const method =
    'name' in params && !('arguments' in params) && String(params.name).endsWith('_prompt')
      ? 'prompts/get'
      : 'tools/call';
  return (options.on ?? core).request(method, params, {
    tenantId: options.tenant ?? 'acme',
    signal: new AbortController().signal,
    revision: options.revision ?? '2026-07-28',
    clientCapabilities: options.capabilities ?? ELICIT,
  });
}

async function asked(params: Record<string, unknown>, options: Parameters<typeof call>[1] = {}) {
  const outcome = await call(params, options);
  const result = outcome?.kind === 'result' ? (outcome.result as Record<string, unknown>) : null;
  expect(result?.resultType, JSON.stringify(outcome)).toBe('input_required');
  expect(result?.requestState).toEqual(expect.any(String));
  return result as { inputRequests: Record<string, unknown>; requestState: string };
}

async function completed(params: Record<string, unknown>, options: Parameters<typeof call>[1] = {}) {
  const outcome = await call(params, options);
  const result = outcome?.kind === 'result' ? (outcome.result as Record<string, unknown>) : null;
  expect(result?.resultType, JSON.stringify(outcome)).toBe('complete');
  return result as { content: { text: string }[]; messages?: unknown[] };
}

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

describe('multi round-trip tools/call of an inline tool', () => {
  it('asks, then completes the retry with the answer, running the handler once per round', async () => {
    const before = greeterRuns;
    const first = await asked({ name: 'greeter', arguments: { who: 'ada' } });
    expect(first.inputRequests).toEqual({
      name: { method: 'elicitation/create', params: { message: 'Name for ada?', requestedSchema: {} } },
    });
    const done = await completed({
      name: 'greeter',
      arguments: { who: 'ada' },
      requestState: first.requestState,
      inputResponses: { name: accept({ n: 1 }) },
    });
    expect(done.content[0]?.text).toBe('hello {"action":"accept","content":{"n":1}}');
    expect(greeterRuns - before).toBe(2);
  });

  it('carries earlier answers through the state, round after round, and asks again for what is missing', async () => {
    const tool = 'test_input_required_result_multi_round';
    const one = await asked({ name: tool, arguments: {} });
    expect(Object.keys(one.inputRequests)).toEqual(['step1']);
    // An answer to another key, or none: step1 is asked again, not an error.
    const again = await asked({
      name: tool,
      arguments: {},
      requestState: one.requestState,
      inputResponses: { wrong: accept({}) },
    });
    expect(Object.keys(again.inputRequests)).toEqual(['step1']);
    const two = await asked({
      name: tool,
      arguments: {},
      requestState: again.requestState,
      inputResponses: { step1: accept({ name: 'Ada' }) },
    });
    expect(Object.keys(two.inputRequests)).toEqual(['step2']);
    // The retry of round 2 may not replace step1's answer: only the keys round 2 asked are taken.
    const done = await completed({
      name: tool,
      arguments: {},
      requestState: two.requestState,
      inputResponses: { step2: accept({ color: 'green' }), step1: accept({ name: 'Mallory' }) },
    });
    expect(done.content[0]?.text).toBe('Ada likes green');
  });

  it('refuses a state altered, another tenant’s, another call’s, or made under another key', async () => {
    const first = await asked({ name: 'greeter', arguments: { who: 'ada' } });
    const retry = (overrides: Record<string, unknown>, options: Parameters<typeof call>[1] = {}) =>
      call(
        {
          name: 'greeter',
          arguments: { who: 'ada' },
          requestState: first.requestState,
          inputResponses: { name: accept({}) },
          ...overrides,
        },
        options,
      );
    const cases: [Promise<unknown>, string][] = [
      [retry({ requestState: `${first.requestState}-TAMPERED` }), 'signature'],
      [retry({ requestState: 'not a state' }), 'malformed'],
      [retry({ requestState: 42 }), 'malformed'],
      [retry({}, { tenant: 'globex' }), 'principal'],
      [retry({ arguments: { who: 'bob' } }), 'request'],
      [retry({ name: 'test_input_required_result_tampered_state', arguments: {} }), 'request'],
      [retry({}, { on: coreWith(randomBytes(32)) }), 'signature'],
    ];
    const before = greeterRuns;
    for (const [pending, problem] of cases) {
      expect(await pending).toMatchObject({
        kind: 'error',
        error: { code: -32602, data: { code: 'TG_REQUEST_STATE_INVALID', problem } },
      });
    }
    expect(greeterRuns).toBe(before);
  });

  it('takes the state on another instance with the same key', async () => {
    const first = await asked({ name: 'greeter', arguments: { who: 'ada' } });
    const done = await completed(
      {
        name: 'greeter',
        arguments: { who: 'ada' },
        requestState: first.requestState,
        inputResponses: { name: accept({}) },
      },
      { on: coreWith(Buffer.from(key)) },
    );
    expect(done.content[0]?.text).toContain('hello');
  });

  it('takes no answer without a state, nor one not shaped as its request’s result', async () => {
    // Answers sent before anything was asked are not answers: the first round asks.
    const first = await asked({ name: 'greeter', arguments: { who: 'z' }, inputResponses: { name: accept({}) } });
    expect(Object.keys(first.inputRequests)).toEqual(['name']);
    for (const wrong of [{ action: 'maybe' }, { action: 'accept', content: 'text' }, {}]) {
      expect(
        await call({
          name: 'greeter',
          arguments: { who: 'z' },
          requestState: first.requestState,
          inputResponses: { name: wrong },
        }),
      ).toMatchObject({ error: { code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID' } } });
    }
    const roots = await asked({ name: 'test_input_required_result_list_roots', arguments: {} }, { capabilities: ALL });
    expect(
      await call(
        {
          name: 'test_input_required_result_list_roots',
          arguments: {},
          requestState: roots.requestState,
          inputResponses: { client_roots: { roots: [{ name: 'no uri' }] } },
        },
        { capabilities: ALL },
      ),
    ).toMatchObject({ error: { code: -32602, message: expect.stringContaining('a root without a uri') } });
  });

  it('fails a retry whose elicitation content its requestedSchema refuses, before the handler sees it', async () => {
    const first = await asked({ name: 'charger', arguments: {} });
    const retry = (content: unknown) =>
      call({
        name: 'charger',
        arguments: {},
        requestState: first.requestState,
        inputResponses: { amount: accept(content as Record<string, unknown>) },
      });
    const before = chargerRuns;
    for (const content of [{ cents: true }, { cents: '250' }, { cents: 0 }, {}]) {
      const refused = await retry(content);
      expect(refused).toMatchObject({ kind: 'error', error: { code: -32602, data: { key: 'amount' } } });
      expect(JSON.stringify(refused)).toContain('requestedSchema');
    }
    expect(chargerRuns).toBe(before);
    const done = await retry({ cents: 250 });
    expect(done).toMatchObject({ kind: 'result', result: { content: [{ text: 'charged 250 cents' }] } });
    expect(chargerRuns).toBe(before + 1);
  });

  it('refuses inputResponses that are not results, before the handler runs', async () => {
    const before = greeterRuns;
    for (const inputResponses of ['x', [accept({})], { name: 'yes' }, { name: null }, { name: [1] }]) {
      expect(await call({ name: 'greeter', arguments: { who: 'a' }, inputResponses })).toMatchObject({
        error: { code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID' } },
      });
    }
    expect(greeterRuns).toBe(before);
  });

  it('asks only for what the client declared: -32021 otherwise, and a tool may look for itself', async () => {
    expect(await call({ name: 'greeter', arguments: { who: 'a' } }, { capabilities: { sampling: {} } })).toMatchObject({
      kind: 'error',
      httpStatus: 400,
      error: { code: -32021, data: { requiredCapabilities: { elicitation: {} } } },
    });
    const sampling = await asked(
      { name: 'test_input_required_result_capabilities', arguments: {} },
      { capabilities: { sampling: {} } },
    );
    expect(Object.keys(sampling.inputRequests)).toEqual(['sampled']);
    const both = await asked(
      { name: 'test_input_required_result_multiple_inputs', arguments: {} },
      { capabilities: ALL },
    );
    expect(Object.keys(both.inputRequests).sort()).toEqual(['client_roots', 'greeting', 'user_name']);
  });

  it('fails a call that asks with a method MCP does not define, and one asked in a revision without round trips', async () => {
    expect(await call({ name: 'odd_asker', arguments: {} })).toMatchObject({
      kind: 'error',
      error: { code: -32603, message: expect.stringContaining('"tools/call", which MCP does not define') },
    });
    const old = await call({ name: 'greeter', arguments: { who: 'a' } }, { revision: '2025-06-18' });
    expect(old).toMatchObject({ kind: 'error', error: { code: -32603 } });
  });
});

describe('multi round-trip prompts/get and resources/read', () => {
  const read = (params: Record<string, unknown>) =>
    core.request(
      'resources/read',
      { uri: 'test://cents', ...params },
      {
        tenantId: 'acme',
        signal: new AbortController().signal,
        revision: '2026-07-28',
        clientCapabilities: ELICIT,
      },
    );

  it('refuses a retry whose elicitation content its requestedSchema refuses, as tools/call does', async () => {
    const firstPrompt = await asked({ name: 'cents_prompt' });
    const readAsked = await read({});
    expect(readAsked).toMatchObject({ kind: 'result', result: { resultType: 'input_required' } });
    const firstRead = (readAsked as unknown as { result: { requestState: string } }).result;
    const retries = {
      prompt: (content: Record<string, unknown>) =>
        call({
          name: 'cents_prompt',
          requestState: firstPrompt.requestState,
          inputResponses: { amount: accept(content) },
        }),
      read: (content: Record<string, unknown>) =>
        read({ requestState: firstRead.requestState, inputResponses: { amount: accept(content) } }),
    };
    centsSeen = [];
    for (const retry of Object.values(retries)) {
      for (const content of [{ cents: true }, { cents: '250' }, { cents: 0 }, {}]) {
        const refused = await retry(content);
        expect(refused).toMatchObject({
          kind: 'error',
          error: { code: -32602, data: { code: 'TG_INPUT_RESPONSES_INVALID', key: 'amount' } },
        });
        expect(JSON.stringify(refused)).toContain('requestedSchema');
      }
    }
    expect(centsSeen).toEqual([]);
    expect(await retries.prompt({ cents: 250 })).toMatchObject({
      kind: 'result',
      result: { messages: [{ content: { text: '250 cents' } }] },
    });
    expect(await retries.read({ cents: 7 })).toMatchObject({
      kind: 'result',
      result: { contents: [{ uri: 'test://cents', text: '7 cents' }] },
    });
    expect(centsSeen).toEqual([250, 7]);
  });

  it('keeps a resources/read answered after input cacheable-shaped: ttlMs 0 and cacheScope private', async () => {
    const first = (await read({})) as unknown as { result: { requestState: string } };
    const done = await read({
      requestState: first.result.requestState,
      inputResponses: { amount: accept({ cents: 3 }) },
    });
    // server/utilities/caching: a complete resources/read MUST carry its hints; a retry's result
    // MUST NOT be cached, which ttlMs 0 (immediately stale) and private say.
    expect(done).toMatchObject({
      kind: 'result',
      result: { resultType: 'complete', ttlMs: 0, cacheScope: 'private', contents: [{ text: '3 cents' }] },
    });
  });

  it('asks, then makes its messages from the answer', async () => {
    const name = 'test_input_required_result_prompt';
    const first = await asked({ name });
    expect(Object.keys(first.inputRequests)).toEqual(['user_context']);
    const done = await completed({
      name,
      requestState: first.requestState,
      inputResponses: { user_context: accept({ context: 'billing' }) },
    });
    expect(done.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Context: billing' } }]);
    // A handshake revision cannot carry input_required: the prompt fails, naming itself.
    const old = await call({ name }, { revision: '2025-11-25' });
    expect(old).toMatchObject({
      kind: 'error',
      error: {
        code: -32603,
        message: expect.stringContaining('prompt test_input_required_result_prompt asked for input'),
      },
    });
  });
});
