import { createMcpCore, type McpCore, TaskEventsHub } from '@taskgate/api';
import { definePrompt, defineResource, defineResourceTemplate } from '@taskgate/sdk';
import { MAX_CONTENT_BYTES } from '@taskgate/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prompts, resources, resourceTemplates } from '../../examples/conformance/index.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, silentLogger, startPlatform } from '../support/task-platform.ts';

// Resources, resource templates, prompts and completion (server/resources, server/prompts,
// server/utilities/completion) through McpCore's method tables, in the per-request revision and in
// the handshake ones: the same methods, with each revision's not-found code and result shape.
// Taskgate's own task resources are read against a real task row, tenant-scoped.
const database = useTestDatabase();
let platform: Platform;
let hub: TaskEventsHub;
let core: McpCore;

/** A template whose reads never end on their own: only its clock or the request's signal ends them. */
let hungReads = 0;
const hanging = defineResourceTemplate({
  uriTemplate: 'slow://{name}',
  name: 'hanging',
  timeoutMs: 150,
  read: (_uri, _vars, ctx) => {
    hungReads += 1;
    return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  },
});
const broken = [
  defineResource({ uri: 'bad://throws', name: 'throws', read: () => Promise.reject(new Error('secret: db password')) }),
  defineResource({ uri: 'bad://empty', name: 'empty', read: () => [] }),
  defineResource({ uri: 'bad://blob', name: 'blob', read: () => [{ blob: 'not base64!' }] }),
  defineResource({ uri: 'bad://nul', name: 'nul', read: () => [{ text: 'a\u0000b' }] }),
];
const bare = defineResource({ uri: 'plain://csv', name: 'csv', mimeType: 'text/csv', read: () => [{ text: 'a,b' }] });
/** A prompt whose one message is larger than an answer may be. */
const huge = definePrompt({
  name: 'huge',
  get: () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'x'.repeat(MAX_CONTENT_BYTES) } }] }),
});
const echoTenant = definePrompt({
  name: 'whoami',
  get: (_args, ctx) => ({ messages: [{ role: 'user', content: { type: 'text', text: ctx.tenant } }] }),
});

beforeAll(async () => {
  platform = await startPlatform(database.url);
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  core = createMcpCore({
    service: platform.service,
    hub,
    tools: platform.tools,
    server: { name: 'taskgate', version: 'test' },
    pollMs: 100,
    content: [
      { resources, resourceTemplates, prompts },
      { resources: [...broken, bare], resourceTemplates: [hanging], prompts: [echoTenant, huge] },
    ],
    listPageSize: 3,
    logger: silentLogger,
  });
});
afterAll(async () => {
  await hub.stop();
  await platform.stop();
});

const PER_REQUEST = '2026-07-28';
const HANDSHAKE = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];

function call(method: string, params: Record<string, unknown>, options: { revision?: string; tenant?: string } = {}) {
  return core.request(method, params, {
    tenantId: options.tenant ?? 'default',
    signal: new AbortController().signal,
    revision: options.revision ?? PER_REQUEST,
  });
}

async function result(method: string, params: Record<string, unknown>, options: Parameters<typeof call>[2] = {}) {
  const outcome = await call(method, params, options);
  if (outcome?.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  return outcome.result as Record<string, unknown>;
}

async function error(method: string, params: Record<string, unknown>, options: Parameters<typeof call>[2] = {}) {
  const outcome = await call(method, params, options);
  if (outcome?.kind !== 'error') throw new Error(`expected an error, got ${JSON.stringify(outcome)}`);
  return outcome;
}

/** Every page of a list method, following nextCursor. */
async function allPages(method: string, field: string, revision = PER_REQUEST) {
  const items: Record<string, unknown>[] = [];
  const cursors: unknown[] = [];
  let cursor: unknown;
  do {
    const page = await result(method, cursor === undefined ? {} : { cursor }, { revision });
    items.push(...(page[field] as Record<string, unknown>[]));
    cursor = page.nextCursor;
    cursors.push(cursor);
  } while (cursor !== undefined);
  return { items, cursors };
}

describe('resources/list and resources/templates/list', () => {
  it('pages the fixed resources in URI order, every one once', async () => {
    const { items, cursors } = await allPages('resources/list', 'resources');
    expect(items.map((item) => item.uri)).toEqual([
      'bad://blob',
      'bad://empty',
      'bad://nul',
      'bad://throws',
      'plain://csv',
      'test://static-binary',
      'test://static-text',
      'test://watched-resource',
    ]);
    // Three per page: two cursors, then none.
    expect(cursors.filter((cursor) => cursor !== undefined)).toHaveLength(2);
    expect(items.find((item) => item.uri === 'test://static-text')).toEqual({
      uri: 'test://static-text',
      name: 'static-text',
      description: 'A fixed text resource.',
      mimeType: 'text/plain',
    });
  });

  it('lists the templates, Taskgate’s task template among them', async () => {
    const { items } = await allPages('resources/templates/list', 'resourceTemplates');
    expect(items.map((item) => item.uriTemplate)).toEqual([
      'slow://{name}',
      'taskgate://tasks/{id}',
      'test://template/{id}/data',
    ]);
  });

  it('carries cache hints and resultType per request, and neither in a handshake revision', async () => {
    const modern = await result('resources/list', {});
    expect(modern).toMatchObject({ resultType: 'complete', ttlMs: 60_000, cacheScope: 'public' });
    for (const revision of HANDSHAKE) {
      const old = await result('resources/list', {}, { revision });
      expect(old).not.toHaveProperty('resultType');
      expect(old).not.toHaveProperty('ttlMs');
      expect(old.resources).toEqual(modern.resources);
    }
  });

  it('refuses a cursor it did not give out', async () => {
    for (const cursor of ['nope!', 'aGVsbG8', 42, '']) {
      const refused = await error('resources/list', { cursor });
      expect(refused).toMatchObject({ httpStatus: 400, error: { code: -32602 } });
      expect(refused.error.message).toContain('cursor');
    }
    expect(await error('prompts/list', { cursor: 'x' }, { revision: '2025-11-25' })).toMatchObject({
      httpStatus: 200,
      error: { code: -32602 },
    });
  });
});

describe('resources/read', () => {
  it('reads text, binary and template resources, filling in the URI read', async () => {
    expect((await result('resources/read', { uri: 'test://static-text' })).contents).toEqual([
      { uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
    ]);
    const [binary] = (await result('resources/read', { uri: 'test://static-binary' })).contents as {
      blob: string;
    }[];
    expect(
      Buffer.from(binary?.blob as string, 'base64')
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    const read = await result('resources/read', { uri: 'test://template/a%20b/data' });
    expect(JSON.parse((read.contents as { text: string }[])[0]?.text as string)).toEqual({
      id: 'a b',
      templateTest: true,
      data: 'Data for ID: a b',
    });
    expect(read).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
    // What an item leaves out comes from its declaration.
    expect((await result('resources/read', { uri: 'plain://csv' })).contents).toEqual([
      { uri: 'plain://csv', mimeType: 'text/csv', text: 'a,b' },
    ]);
  });

  it('answers a URI that names nothing with -32602 (2026-07-28) or -32002 (before), the URI in data', async () => {
    // A template variable matches no "/", and a "%" must start an escape.
    for (const uri of [
      'test://nothing',
      'test://template/1/2/data',
      'test://template/%zz/data',
      'TEST://static-text',
    ]) {
      expect(await error('resources/read', { uri })).toEqual({
        kind: 'error',
        httpStatus: 200,
        error: { code: -32602, message: 'Resource not found', data: { uri } },
      });
      for (const revision of HANDSHAKE) {
        expect((await error('resources/read', { uri }, { revision })).error).toEqual({
          code: -32002,
          message: 'Resource not found',
          data: { uri },
        });
      }
    }
  });

  it('refuses a uri that is not a string', async () => {
    for (const uri of [undefined, '', 7, true, null, ['test://static-text']]) {
      expect(await error('resources/read', { uri })).toMatchObject({ httpStatus: 400, error: { code: -32602 } });
    }
  });

  it('answers -32603 naming the resource, never the handler’s own message, for what a handler got wrong', async () => {
    const cases: [string, string][] = [
      ['bad://throws', 'resource bad://throws failed'],
      ['bad://empty', 'resource bad://empty returned [], not an array of contents'],
      ['bad://blob', 'resource bad://blob: contents[0] has a blob that is not base64'],
      ['bad://nul', 'resource bad://nul: contents[0] cannot be sent'],
    ];
    for (const [uri, message] of cases) {
      const refused = await error('resources/read', { uri });
      expect(refused.error.code).toBe(-32603);
      expect(refused.error.message).toContain(message);
      expect(refused.error.message).not.toContain('secret');
    }
  });

  it('answers -32603 for a prompt whose messages are larger than an answer may be', async () => {
    const refused = await error('prompts/get', { name: 'huge' });
    expect(refused.error.code).toBe(-32603);
    expect(refused.error.message).toMatch(
      new RegExp(`^prompt huge returned \\d+ bytes as JSON, more than the ${MAX_CONTENT_BYTES} one answer may be`),
    );
  });

  it('ends a read that never answers at its clock, and gives a cancelled request no answer', async () => {
    const started = Date.now();
    const timedOut = await error('resources/read', { uri: 'slow://a' });
    expect(timedOut.error).toEqual({ code: -32603, message: 'resource slow://{name} did not answer within 150 ms' });
    expect(Date.now() - started).toBeLessThan(5_000);
    const cancel = new AbortController();
    const before = hungReads;
    const pending = core.request('resources/read', { uri: 'slow://b' }, { tenantId: 'default', signal: cancel.signal });
    // The handler is running (it counted itself) before the request is cancelled.
    await expect.poll(() => hungReads).toBe(before + 1);
    cancel.abort();
    expect(await pending).toBeNull();
  });

  it('reads a task as taskgate://tasks/{id}, for its own tenant only', async () => {
    const task = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'Ada' } });
    const uri = `taskgate://tasks/${task.id}`;
    const read = await result('resources/read', { uri }, { tenant: 'acme' });
    const [contents] = read.contents as { uri: string; mimeType: string; text: string }[];
    expect(contents).toMatchObject({ uri, mimeType: 'application/json' });
    expect(JSON.parse(contents?.text as string)).toMatchObject({ taskId: task.id, status: 'working', tool: 'greet' });
    expect(read.cacheScope).toBe('private');
    // Another tenant, or no such task, cannot tell the two apart.
    for (const [tenant, other] of [
      ['globex', uri],
      ['acme', 'taskgate://tasks/00000000-0000-4000-8000-000000000000'],
      ['acme', 'taskgate://tasks/not-a-uuid'],
    ] as const) {
      expect((await error('resources/read', { uri: other }, { tenant })).error).toEqual({
        code: -32602,
        message: 'Resource not found',
        data: { uri: other },
      });
    }
  });
});

describe('prompts/list and prompts/get', () => {
  it('lists every prompt with its arguments, paged', async () => {
    const { items } = await allPages('prompts/list', 'prompts', '2025-06-18');
    expect(items.map((item) => item.name)).toEqual([
      'huge',
      'test_input_required_result_prompt',
      'test_prompt_with_arguments',
      'test_prompt_with_embedded_resource',
      'test_prompt_with_image',
      'test_simple_prompt',
      'whoami',
    ]);
    expect(items[2]).toEqual({
      name: 'test_prompt_with_arguments',
      description: 'A prompt with two required arguments.',
      arguments: [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    });
  });

  it('gets a prompt with its arguments, in the caller’s tenant', async () => {
    const got = await result('prompts/get', {
      name: 'test_prompt_with_arguments',
      arguments: { arg1: 'a', arg2: 'b' },
    });
    expect(got.messages).toEqual([
      { role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='a', arg2='b'" } },
    ]);
    const mine = await result('prompts/get', { name: 'whoami' }, { tenant: 'acme', revision: '2025-03-26' });
    expect(mine).toEqual({
      messages: [{ role: 'user', content: { type: 'text', text: 'acme' } }],
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'taskgate', version: 'test' } },
    });
  });

  it('refuses what a prompt cannot take, naming it, before the prompt runs', async () => {
    const name = 'test_prompt_with_arguments';
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'nope' }, 'there is no prompt named "nope"'],
      [{ name: 7 }, 'prompts/get needs params.name'],
      [{ name, arguments: { arg1: 'a' } }, 'missing required argument arg2'],
      [{ name, arguments: { arg1: 'a', arg2: 5 } }, 'argument arg2 must be a string, not a number'],
      [{ name, arguments: { arg1: 'a', arg2: true } }, 'argument arg2 must be a string, not a boolean'],
      [{ name, arguments: { arg1: 'a', arg2: 'b', arg3: 'c' } }, 'it has no argument named "arg3"'],
      [{ name, arguments: ['a', 'b'] }, 'params.arguments must be an object'],
      // As JSON.parse makes it: an own key, not the prototype.
      [{ name, arguments: JSON.parse('{"__proto__":"x","arg1":"a","arg2":"b"}') }, 'no argument named "__proto__"'],
    ];
    for (const [params, message] of cases) {
      const refused = await error('prompts/get', params);
      expect(refused.error.code).toBe(-32602);
      expect(refused.error.message).toContain(message);
    }
  });
});

describe('completion/complete', () => {
  it('completes a prompt argument and a template variable from their definitions', async () => {
    const prompt = await result('completion/complete', {
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg1', value: 'par' },
    });
    expect(prompt.completion).toEqual({ values: ['paris', 'park', 'party'], total: 3, hasMore: false });
    const template = await result(
      'completion/complete',
      {
        ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
        argument: { name: 'id', value: '12' },
        context: { arguments: {} },
      },
      { revision: '2025-11-25' },
    );
    expect(template).toEqual({
      completion: { values: ['123', '124'], total: 2, hasMore: false },
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'taskgate', version: 'test' } },
    });
    // An argument without a completer has no suggestions.
    const none = await result('completion/complete', {
      ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
      argument: { name: 'arg2', value: 'x' },
    });
    expect(none.completion).toEqual({ values: [], total: 0, hasMore: false });
  });

  it('refuses a reference or an argument that names nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'a', value: '' } }, 'no prompt named "nope"'],
      [
        { ref: { type: 'ref/prompt', name: 'test_simple_prompt' }, argument: { name: 'a', value: '' } },
        'has no argument named "a"',
      ],
      [
        { ref: { type: 'ref/resource', uri: 'test://x/{id}' }, argument: { name: 'id', value: '' } },
        'no resource template',
      ],
      [{ ref: { type: 'ref/tool', name: 'x' }, argument: { name: 'id', value: '' } }, 'params.ref.type must be'],
      [{ ref: { type: 'ref/prompt', name: 'whoami' } }, 'params.argument'],
      [
        { ref: { type: 'ref/prompt', name: 'whoami' }, argument: { name: 'a', value: 1 } },
        'params.argument.name and params.argument.value must be strings',
      ],
      [
        {
          ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
          argument: { name: 'arg1', value: '' },
          context: { arguments: { arg2: 3 } },
        },
        'params.context.arguments.arg2 must be a string',
      ],
    ];
    for (const [params, message] of cases) {
      const refused = await error('completion/complete', params);
      expect(refused.error.code).toBe(-32602);
      expect(refused.error.message).toContain(message);
    }
  });
});

describe('capabilities', () => {
  it('declares resources, prompts, completions and logging in server/discover', async () => {
    const discover = await result('server/discover', {});
    expect(discover.capabilities).toMatchObject({
      resources: { subscribe: true, listChanged: true },
      prompts: { listChanged: true },
      completions: {},
      logging: {},
    });
  });
});
