import { createMcpCore, type McpCore, RemoteWatches, type RequestContext, TaskEventsHub } from '@taskgate/api';
import { CatalogView, publishTools, type TaskRecord } from '@taskgate/db';
import { toolCatalogEntry } from '@taskgate/reliability';
import { definePrompt, defineResource, defineResourceTemplate } from '@taskgate/sdk';
import {
  type AnyTool,
  CatalogTools,
  CONTENT_TOOL_PREFIX,
  type ContentSet,
  contentTool,
  MAX_CONTENT_BYTES,
  ToolRegistry,
} from '@taskgate/tools';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prompts, resources, resourceTemplates } from '../../examples/conformance/index.ts';
import { catalogTool, setInstance } from '../support/catalog.ts';
import { useTestDatabase } from '../support/databases.ts';
import { listenStream } from '../support/sse-client.ts';
import { type Platform, serveApi, silentLogger, startPlatform, waitForTask } from '../support/task-platform.ts';

// A module's resources, templates and prompts published through the tool catalog: an API that did
// not load the module lists them from the catalog and has a worker serving the module read them,
// as platform-owned tasks. Each answer is compared with the same request answered by an API that
// loaded the module itself (in the request): remote content is the same content, however it runs.
const database = useTestDatabase();

/** A template whose reads end only by their clock or their request's signal; counts the aborts. */
const aborted: string[] = [];
const started: string[] = [];
const hanging = defineResourceTemplate({
  uriTemplate: 'slow://{name}',
  name: 'hanging',
  timeoutMs: 2_000,
  read: (uri, _vars, ctx) => {
    started.push(uri);
    return new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        aborted.push(uri);
        reject(ctx.signal.reason);
      }),
    );
  },
});
const quick = defineResourceTemplate({
  uriTemplate: 'quick://{name}',
  name: 'quick-clock',
  timeoutMs: 300,
  read: (_uri, _vars, ctx) =>
    new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('x')))),
});
/** The module resource's watches running now, by tenant: calling one says the resource changed. */
const watching = new Map<string, () => void>();
const watched = defineResource({
  uri: 'watched://counter',
  name: 'counter',
  read: () => [{ text: 'count' }],
  watch: (changed, ctx) => {
    watching.set(ctx.tenant, changed);
    return () => watching.delete(ctx.tenant);
  },
});
/**
 * Reads at the size bound: `edge`'s contents array is exactly MAX_CONTENT_BYTES as sent, `over` one byte more,
 * `split` over it in two items that are each well under it.
 */
const EDGE_TEXT = MAX_CONTENT_BYTES - Buffer.byteLength(JSON.stringify([{ uri: 'size://edge', text: '' }]));
const sized = defineResourceTemplate({
  uriTemplate: 'size://{kind}',
  name: 'sized',
  read: (_uri, { kind }) => {
    if (kind === 'split') return [{ text: 'x'.repeat(9 * 1024 * 1024) }, { text: 'y'.repeat(9 * 1024 * 1024) }];
    return [{ text: 'x'.repeat(kind === 'over' ? EDGE_TEXT + 1 : EDGE_TEXT) }];
  },
});
const extras: ContentSet = {
  resources: [
    watched,
    defineResource({
      uri: 'bad://throws',
      name: 'throws',
      read: () => Promise.reject(new Error('secret: db password')),
    }),
    defineResource({ uri: 'bad://empty', name: 'empty', read: () => [] }),
    defineResource({ uri: 'gone://nothing', name: 'nothing', read: () => null }),
  ],
  resourceTemplates: [
    hanging,
    quick,
    sized,
    // More values than a completion sends: the worker cuts them, the total must come along.
    defineResourceTemplate({
      uriTemplate: 'many://{n}',
      name: 'many',
      complete: { n: (value) => Array.from({ length: 250 }, (_, i) => `${value}${i}`) },
      read: (uri, { n }) => [{ uri, text: n as string }],
    }),
  ],
  prompts: [
    definePrompt({
      name: 'whoami',
      get: (_args, ctx) => ({ messages: [{ role: 'user', content: { type: 'text', text: ctx.tenant } }] }),
    }),
  ],
};
/** A resource that asks twice, one question per run: each retry runs it from the start. */
const interview = defineResource({
  uri: 'ask://interview',
  name: 'interview',
  read: async (ctx) => {
    const { first } = await ctx.input({ first: elicitName('first') });
    const { second } = await ctx.input({ second: elicitName('second') });
    const name = (answer: unknown) => String((answer as { content?: { name?: unknown } }).content?.name);
    return [{ text: `${name(first)} then ${name(second)}` }];
  },
});
function elicitName(which: string) {
  return {
    method: 'elicitation/create',
    params: {
      message: `the ${which} name?`,
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    },
  };
}
/** A resource that never stops asking: each run asks one question more than the answers it has. */
const forever = defineResource({
  uri: 'ask://forever',
  name: 'forever',
  read: async (ctx) => {
    for (let n = 0; ; n += 1) await ctx.input({ [`q${n}`]: elicitName(`q${n}`) });
  },
});
const fixtures: ContentSet = { resources: [...resources, interview, forever], resourceTemplates, prompts };
const moduleContent: ContentSet = {
  resources: [...(fixtures.resources ?? []), ...(extras.resources ?? [])],
  resourceTemplates: [...(fixtures.resourceTemplates ?? []), ...(extras.resourceTemplates ?? [])],
  prompts: [...(fixtures.prompts ?? []), ...(extras.prompts ?? [])],
};
const served = contentTool('fixtures', moduleContent) as AnyTool;

/** What the remote API warned of. */
const warnings: { fields: Record<string, unknown>; message: string }[] = [];
const recording = {
  ...silentLogger,
  warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
};

let platform: Platform;
let hub: TaskEventsHub;
let view: CatalogView;
let catalogTools: CatalogTools;
/** Loaded the module: reads in the request. */
let local: McpCore;
/** Did not: reads through the catalog, by a worker. */
let remote: McpCore;
let contentWatches: RemoteWatches;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await sql`DELETE FROM instances`.execute(platform.db);
  await platform.startWorker({ tools: new ToolRegistry([served]), workerId: 'w-content' });
  hub = new TaskEventsHub({ connectionString: database.url, listen: true, logger: silentLogger });
  await hub.start();
  view = new CatalogView({
    db: platform.db,
    pollIntervalMs: 3_600_000,
    listen: { connectionString: database.url, applicationName: 'catalog-content-test' },
    logger: silentLogger,
  });
  await view.start();
  catalogTools = new CatalogTools(view, { logger: silentLogger });
  const common = { service: platform.service, hub, server: { name: 'taskgate', version: 'test' }, pollMs: 100 };
  local = createMcpCore({ ...common, tools: platform.tools, content: [moduleContent], logger: silentLogger });
  // The remote API's instance row: a worker watches only for a live instance.
  await setInstance(platform.db, 'api-remote', { heartbeatAgoMs: 0 });
  contentWatches = new RemoteWatches({
    db: platform.db,
    instanceId: 'api-remote',
    listen: { connectionString: database.url, applicationName: 'catalog-content-watches' },
    pollMs: 200,
    logger: silentLogger,
  });
  remote = createMcpCore({ ...common, tools: catalogTools, contentWatches, logger: recording });
  await waitForTask(
    async () => catalogTools.content().length,
    (count) => count === 1,
  );
});
afterAll(async () => {
  await contentWatches.stop();
  catalogTools.close();
  await view.stop();
  await hub.stop();
  await platform.stop();
});

const REVISIONS = ['2026-07-28', '2025-11-25', '2024-11-05'];

function ask(core: McpCore, method: string, params: Record<string, unknown>, extra: Partial<RequestContext> = {}) {
  return core.request(method, params, {
    tenantId: 'tenant-a',
    signal: new AbortController().signal,
    revision: '2026-07-28',
    ...extra,
  });
}

function resultOf(outcome: Awaited<ReturnType<typeof ask>>): Record<string, unknown> {
  if (outcome?.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  return outcome.result as Record<string, unknown>;
}

/** A platform task of the content tool with these arguments, once it has ended. */
async function contentTask(op: string, key: string): Promise<TaskRecord> {
  return waitForTask(
    async () => {
      const { rows } = await sql<{ id: string; status: string }>`
        SELECT id, status FROM tasks
        WHERE tool = ${served.name} AND arguments->>'op' = ${op}
          AND coalesce(arguments->>'uri', arguments->>'name') = ${key}
        ORDER BY created_at DESC LIMIT 1`.execute(platform.db);
      return rows[0];
    },
    (row) => row !== undefined && row.status !== 'working',
  ).then((row) => platform.service.get('tenant-a', (row as { id: string }).id));
}

describe('content published through the catalog', () => {
  it('answers every list, read, get and completion as the API that loaded the module does', async () => {
    const requests: [string, Record<string, unknown>][] = [
      ['resources/list', {}],
      ['resources/templates/list', {}],
      ['prompts/list', {}],
      ['resources/read', { uri: 'test://static-text' }],
      ['resources/read', { uri: 'test://static-binary' }],
      ['resources/read', { uri: 'test://template/a%20b/data' }],
      ['resources/read', { uri: 'test://nothing' }],
      ['resources/read', { uri: 'gone://nothing' }],
      ['resources/read', { uri: 'bad://throws' }],
      ['resources/read', { uri: 'bad://empty' }],
      ['prompts/get', { name: 'test_simple_prompt' }],
      ['prompts/get', { name: 'test_prompt_with_arguments', arguments: { arg1: 'x', arg2: 'y' } }],
      ['prompts/get', { name: 'test_prompt_with_arguments', arguments: { arg1: 'x' } }],
      ['prompts/get', { name: 'whoami' }],
      ['prompts/get', { name: 'nope' }],
      [
        'completion/complete',
        { ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'pa' } },
      ],
      [
        'completion/complete',
        { ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg2', value: 'pa' } },
      ],
      [
        'completion/complete',
        { ref: { type: 'ref/resource', uri: 'test://template/{id}/data' }, argument: { name: 'id', value: '12' } },
      ],
      [
        'completion/complete',
        { ref: { type: 'ref/resource', uri: 'many://{n}' }, argument: { name: 'n', value: 'v' } },
      ],
    ];
    for (const revision of REVISIONS) {
      for (const [method, params] of requests) {
        const here = await ask(local, method, params, { revision });
        const there = await ask(remote, method, params, { revision });
        expect(there, `${revision} ${method} ${JSON.stringify(params)}`).toEqual(here);
      }
    }
    // Not vacuous: the lists hold the module's entries, the reads their contents.
    const listed = await ask(remote, 'resources/list', {});
    expect((resultOf(listed).resources as { uri: string }[]).map((r) => r.uri)).toContain('test://static-binary');
    const whoami = await ask(remote, 'prompts/get', { name: 'whoami' });
    expect(whoami).toMatchObject({ result: { messages: [{ content: { text: 'tenant-a' } }] } });
    const many = await ask(remote, 'completion/complete', {
      ref: { type: 'ref/resource', uri: 'many://{n}' },
      argument: { name: 'n', value: 'v' },
    });
    expect(many).toMatchObject({ result: { completion: { total: 250, hasMore: true } } });
    // What the handler threw reaches the API's log (never the client), as a local read's does.
    expect(warnings).toContainEqual({
      fields: { error: 'resource bad://throws failed', cause: 'secret: db password' },
      message: 'resource bad://throws gave no answer',
    });
  }, 60_000);

  it('reads up to the size bound and refuses a read over it, naming the resource, as a local read does', async () => {
    const edge = await ask(remote, 'resources/read', { uri: 'size://edge' });
    expect(edge).toEqual(await ask(local, 'resources/read', { uri: 'size://edge' }));
    expect(Buffer.byteLength(JSON.stringify(resultOf(edge).contents))).toBe(MAX_CONTENT_BYTES);
    for (const [uri, bytes] of [
      ['size://over', MAX_CONTENT_BYTES + 1],
      [
        'size://split',
        2 * (9 * 1024 * 1024 + Buffer.byteLength(JSON.stringify({ uri: 'size://split', text: '' }))) + 3,
      ],
    ] as const) {
      const there = await ask(remote, 'resources/read', { uri });
      expect(there).toEqual(await ask(local, 'resources/read', { uri }));
      expect(there).toEqual({
        kind: 'error',
        httpStatus: 200,
        error: {
          code: -32603,
          message: `resource size://{kind} returned ${bytes} bytes as JSON, more than the ${MAX_CONTENT_BYTES} one answer may be (a large output belongs in storage the answer links to)`,
        },
      });
    }
  }, 60_000);

  it('reads by a worker, as a platform task of the caller’s tenant that no client lists or calls', async () => {
    await ask(remote, 'resources/read', { uri: 'test://static-text' });
    const task = await contentTask('read', 'test://static-text');
    expect(task).toMatchObject({ status: 'completed', mode: 'request', tenantId: 'tenant-a' });
    expect(task.tool.startsWith(CONTENT_TOOL_PREFIX)).toBe(true);
    // A worker claimed it (the API never runs a content tool).
    expect(task.startedAt).not.toBeNull();

    const tools = await ask(remote, 'tools/list', {});
    expect(resultOf(tools).tools as unknown[]).toEqual([]);
    const called = await ask(remote, 'tools/call', { name: served.name, arguments: { op: 'read', uri: 'x://y' } });
    expect(called).toMatchObject({ kind: 'error', error: { data: { code: 'TG_TOOL_UNKNOWN' } } });
    const listedTasks = await platform.service.list('tenant-a', { limit: 100 });
    expect(listedTasks.tasks.map((listed) => listed.id)).not.toContain(task.id);
  });

  it('cancels the read’s task when the request is cancelled, and the worker’s handler sees the abort', async () => {
    const controller = new AbortController();
    const answer = ask(remote, 'resources/read', { uri: 'slow://cancelled' }, { signal: controller.signal });
    await waitForTask(
      async () => started.includes('slow://cancelled'),
      (running) => running,
    );
    controller.abort(new Error('the client went away'));
    expect(await answer).toBeNull();
    const task = await contentTask('read', 'slow://cancelled');
    expect(task.status).toBe('cancelled');
    await waitForTask(
      async () => aborted.includes('slow://cancelled'),
      (seen) => seen,
    );
  });

  it('ends a read by its clock whether or not a worker answers, and ends its task with it', async () => {
    const began = performance.now();
    const outcome = await ask(remote, 'resources/read', { uri: 'quick://late' });
    expect(performance.now() - began).toBeLessThan(2_000);
    expect(outcome).toMatchObject({
      kind: 'error',
      error: { code: -32603, message: 'resource quick://{name} did not answer within 300 ms' },
    });
    // Cancelled by the API's clock, or answered by the worker's own (the same 300 ms, started a
    // queue hop later): either way ended within a second, not at the task's max clock (5.3 s).
    const task = await contentTask('read', 'quick://late');
    expect(['cancelled', 'completed']).toContain(task.status);
    expect((task.finishedAt as Date).getTime() - task.createdAt.getTime()).toBeLessThan(1_500);
  });
});

describe('list changes of the catalog’s content', () => {
  it('tells a listener which lists moved, and lists what the catalog holds now', async () => {
    const { mcpUrl, close } = await serveApi(platform, database.url, { tools: catalogTools });
    try {
      // The tools list too: a change of content alone must not tell it.
      const stream = listenStream(mcpUrl, 'content-1', {
        toolsListChanged: true,
        resourcesListChanged: true,
        promptsListChanged: true,
      });
      await stream.until((all) => all.length >= 1);
      expect(stream.messages[0]).toMatchObject({
        method: 'notifications/subscriptions/acknowledged',
        params: { notifications: { toolsListChanged: true, resourcesListChanged: true, promptsListChanged: true } },
      });
      // A second module's worker publishes a prompt only: the prompt list moved, the resources did not.
      await setInstance(platform.db, 'w-other', { heartbeatAgoMs: 0 });
      const other = contentTool('other', {
        prompts: [definePrompt({ name: 'other_prompt', get: () => ({ messages: [] }) })],
      }) as AnyTool;
      await publishTools(platform.db, 'w-other', [toolCatalogEntry(other as unknown as Record<string, unknown>)]);
      await stream.until((all) => all.length >= 2);
      expect(stream.messages[1]).toEqual({
        jsonrpc: '2.0',
        method: 'notifications/prompts/list_changed',
        params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'content-1' } },
      });
      const names = await ask(remote, 'prompts/list', {});
      expect((resultOf(names).prompts as { name: string }[]).map((p) => p.name)).toContain('other_prompt');
      // It now serves a resource too: the resource list moved (and the prompt list did not).
      const withResource = contentTool('other', {
        prompts: [definePrompt({ name: 'other_prompt', get: () => ({ messages: [] }) })],
        resources: [defineResource({ uri: 'other://r', name: 'r', read: () => [{ text: 'r' }] })],
      }) as AnyTool;
      await publishTools(platform.db, 'w-other', [
        toolCatalogEntry(withResource as unknown as Record<string, unknown>),
      ]);
      await stream.until((all) => all.length >= 3);
      expect(stream.messages[2]).toMatchObject({ method: 'notifications/resources/list_changed' });
      // Gone: both lists move back.
      await publishTools(platform.db, 'w-other', []);
      await stream.until((all) => all.length >= 5);
      expect(
        stream.messages
          .slice(3)
          .map((message) => message.method)
          .sort(),
      ).toEqual(['notifications/prompts/list_changed', 'notifications/resources/list_changed']);
      // And a tool of its own: only the tools list moves.
      await publishTools(platform.db, 'w-other', [catalogTool('other_tool')]);
      await stream.until((all) => all.length >= 6);
      expect(stream.messages[5]).toMatchObject({ method: 'notifications/tools/list_changed' });
      await publishTools(platform.db, 'w-other', []);
      await stream.until((all) => all.length >= 7);
      expect(stream.messages.map((message) => message.method)).toEqual([
        'notifications/subscriptions/acknowledged',
        'notifications/prompts/list_changed',
        'notifications/resources/list_changed',
        expect.stringMatching(/^notifications\/(prompts|resources)\/list_changed$/),
        expect.stringMatching(/^notifications\/(prompts|resources)\/list_changed$/),
        'notifications/tools/list_changed',
        'notifications/tools/list_changed',
      ]);
      stream.close();
    } finally {
      await close();
    }
  });

  it('tells nothing of a change that moves no list, and lists two modules of one name apart', async () => {
    const told: string[] = [];
    const stop = remote.onListChanged((kind) => told.push(kind));
    await setInstance(platform.db, 'w-same', { heartbeatAgoMs: 0 });
    const version = (timeoutMs: number, extra: string[] = []) =>
      toolCatalogEntry(
        contentTool('fixtures', {
          resources: ['same://a', ...extra].map((uri) =>
            defineResource({ uri, name: 'a', timeoutMs, read: () => [{ text: 'a' }] }),
          ),
        }) as unknown as Record<string, unknown>,
      );
    // Another module also named "fixtures" (two files called tools.ts): listed next to the first.
    await publishTools(platform.db, 'w-same', [version(1_000)]);
    await waitForTask(
      async () => told.join(),
      (kinds) => kinds === 'resources',
    );
    const uris = (resultOf(await ask(remote, 'resources/list', {})).resources as { uri: string }[]).map((r) => r.uri);
    expect(uris).toEqual(expect.arrayContaining(['same://a', 'test://static-text']));
    // Its clock changes: a new version, the same list. The offer's listener runs in the catalog's
    // own change, so once the catalog holds the version, any notification would have been told.
    const entry = version(2_000);
    await publishTools(platform.db, 'w-same', [entry]);
    await waitForTask(
      async () => catalogTools.content().map((content) => content.fingerprint),
      (fingerprints) => fingerprints.includes(entry.fingerprint),
    );
    expect(told).toEqual(['resources']);
    await publishTools(platform.db, 'w-same', [version(2_000, ['same://b'])]);
    await waitForTask(
      async () => told.join(),
      (kinds) => kinds === 'resources,resources',
    );
    await publishTools(platform.db, 'w-same', []);
    stop();
  });

  it('leaves out a published key another module already serves, and a publisher that sends no content', async () => {
    // Served from the first module by content-tool name: "fixtures" before "theft".
    await setInstance(platform.db, 'w-dup', { heartbeatAgoMs: 0 });
    const duplicate = contentTool('theft', {
      resources: [
        defineResource({ uri: 'test://static-text', name: 'stolen', read: () => [{ text: 'not the fixture' }] }),
        defineResource({ uri: 'dup://own', name: 'own', read: () => [{ text: 'own' }] }),
      ],
    }) as AnyTool;
    const broken = toolCatalogEntry({
      name: `${CONTENT_TOOL_PREFIX}broken`,
      description: 'no content field',
      inputSchema: { type: 'object' },
      retry: 'safe',
    });
    await publishTools(platform.db, 'w-dup', [
      toolCatalogEntry(duplicate as unknown as Record<string, unknown>),
      broken,
    ]);
    await waitForTask(
      async () => catalogTools.content().map((entry) => entry.content.module),
      (modules) => modules.includes('theft'),
    );
    const read = await ask(remote, 'resources/read', { uri: 'test://static-text' });
    expect(read).toMatchObject({
      result: { contents: [{ text: 'This is the content of the static text resource.' }] },
    });
    // Its other resource is listed (no worker runs its queue here, so it is not read).
    const listed = resultOf(await ask(remote, 'resources/list', {})).resources as { uri: string; name: string }[];
    expect(listed.filter((item) => ['dup://own', 'test://static-text'].includes(item.uri))).toEqual([
      { uri: 'dup://own', name: 'own' },
      expect.objectContaining({ uri: 'test://static-text', name: 'static-text' }),
    ]);
    const said = warnings.filter((warning) => warning.fields.module === 'theft');
    expect(said).toEqual([
      {
        fields: expect.objectContaining({ skipped: ['test://static-text is published by module fixtures too'] }),
        message: expect.stringContaining("some of a module's published resources or prompts are not served"),
      },
    ]);
    await publishTools(platform.db, 'w-dup', []);
  });

  it('reads in the request what this process loaded, though its worker publishes it too, and says nothing of it', async () => {
    const before = warnings.length;
    const both = createMcpCore({
      service: platform.service,
      hub,
      server: { name: 'taskgate', version: 'test' },
      pollMs: 100,
      tools: catalogTools,
      content: [moduleContent],
      logger: recording,
    });
    const count = async () => {
      const { rows } = await sql<{ count: number }>`
        SELECT count(*)::int AS count FROM tasks WHERE arguments->>'uri' = 'gone://nothing'`.execute(platform.db);
      return rows[0]?.count;
    };
    const tasksBefore = await count();
    expect(await ask(both, 'resources/read', { uri: 'gone://nothing' })).toEqual(
      await ask(local, 'resources/read', { uri: 'gone://nothing' }),
    );
    expect(await count()).toBe(tasksBefore);
    // The same read through the API that did not load it is a task: the count could move.
    await ask(remote, 'resources/read', { uri: 'gone://nothing' });
    expect(await count()).toBe((tasksBefore as number) + 1);
    expect(warnings.slice(before)).toEqual([]);
  });
});

describe('subscriptions to a resource a worker watches', () => {
  const updated = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'watched://counter' } };
  const rows = async () =>
    (
      await sql<{ tenant_id: string }>`
        SELECT tenant_id FROM content_watches WHERE api_instance_id = 'api-remote' ORDER BY tenant_id`.execute(
        platform.db,
      )
    ).rows.map((row) => row.tenant_id);

  it('runs the module’s watch in the worker while a subscription is held, and tells each change to its tenant only', async () => {
    await setInstance(platform.db, 'api-remote', { heartbeatAgoMs: 0 });
    const heardA: unknown[] = [];
    const heardA2: unknown[] = [];
    const heardB: unknown[] = [];
    const a = remote.resourceSubscriptions('tenant-a', (message) => heardA.push(message));
    const a2 = remote.resourceSubscriptions('tenant-a', (message) => heardA2.push(message));
    const b = remote.resourceSubscriptions('tenant-b', (message) => heardB.push(message));
    a.subscribe('watched://counter');
    a2.subscribe('watched://counter');
    b.subscribe('watched://counter');
    // One watch per tenant in the worker (two connections of tenant-a share one), one row per tenant.
    await waitForTask(
      async () => [...watching.keys()].sort().join(),
      (tenants) => tenants === 'tenant-a,tenant-b',
    );
    expect(await rows()).toEqual(['tenant-a', 'tenant-b']);

    watching.get('tenant-a')?.();
    await waitForTask(
      async () => heardA.length + heardA2.length,
      (count) => count === 2,
    );
    expect(heardA).toEqual([updated]);
    expect(heardA2).toEqual([updated]);
    // Tenant b's count did not move: the read that told a and a2 told b nothing.
    expect(heardB).toEqual([]);
    watching.get('tenant-b')?.();
    await waitForTask(
      async () => heardB.length,
      (count) => count === 1,
    );
    expect(heardA).toHaveLength(1);

    // The last subscription of a tenant goes: its row and its watch go; the other tenant's stay.
    a.stop();
    expect(watching.has('tenant-a')).toBe(true);
    a2.unsubscribe('watched://counter');
    await waitForTask(
      async () => watching.has('tenant-a'),
      (running) => !running,
    );
    expect(await rows()).toEqual(['tenant-b']);
    expect(watching.has('tenant-b')).toBe(true);
    b.stop();
    await waitForTask(
      async () => watching.size,
      (count) => count === 0,
    );
    a2.stop();
  });

  it('stops the watch when the API instance holding the subscription goes silent', async () => {
    await setInstance(platform.db, 'api-remote', { heartbeatAgoMs: 0 });
    const subscriptions = remote.resourceSubscriptions('tenant-c', () => {});
    subscriptions.subscribe('watched://counter');
    await waitForTask(
      async () => watching.has('tenant-c'),
      (running) => running,
    );
    // Its heartbeat a minute old: a crashed API, whose rows stay until retention.
    await setInstance(platform.db, 'api-remote', { heartbeatAgoMs: 60_000 });
    await waitForTask(
      async () => watching.has('tenant-c'),
      (running) => !running,
    );
    expect(await rows()).toEqual(['tenant-c']);
    subscriptions.stop();
    await waitForTask(rows, (left) => left.length === 0);
  });
});

describe('a remote handler’s ctx.input()', () => {
  const ELICIT = { clientCapabilities: { elicitation: {} } };
  const accept = (name: string) => ({ action: 'accept', content: { name } });

  it('is answered input_required in 2026-07-28, and the retry runs the handler again with the answers', async () => {
    const run = async (core: McpCore) => {
      const first = resultOf(await ask(core, 'resources/read', { uri: 'ask://interview' }, ELICIT));
      expect(first).toMatchObject({ resultType: 'input_required', inputRequests: { first: elicitName('first') } });
      const second = resultOf(
        await ask(
          core,
          'resources/read',
          { uri: 'ask://interview', requestState: first.requestState, inputResponses: { first: accept('Ada') } },
          ELICIT,
        ),
      );
      expect(second).toMatchObject({ resultType: 'input_required', inputRequests: { second: elicitName('second') } });
      const done = resultOf(
        await ask(
          core,
          'resources/read',
          { uri: 'ask://interview', requestState: second.requestState, inputResponses: { second: accept('Grace') } },
          ELICIT,
        ),
      );
      return done;
    };
    const here = await run(local);
    expect(here.contents).toEqual([{ uri: 'ask://interview', text: 'Ada then Grace' }]);
    expect(await run(remote)).toEqual(here);
    // The prompt the conformance suite asks with, the same way.
    const prompt = resultOf(await ask(remote, 'prompts/get', { name: 'test_input_required_result_prompt' }, ELICIT));
    expect(prompt).toMatchObject({ resultType: 'input_required', inputRequests: { user_context: expect.any(Object) } });
  });

  it('asks the client on the request’s connection in a handshake revision, and refuses without the capability', async () => {
    const asked: string[] = [];
    const askClient = async (method: string, params: Readonly<Record<string, unknown>>) => {
      asked.push(`${method} ${String(params.message)}`);
      return accept(asked.length === 1 ? 'Ada' : 'Grace');
    };
    const handshake = { revision: '2025-11-25', askClient, ...ELICIT };
    const there = await ask(remote, 'resources/read', { uri: 'ask://interview' }, handshake);
    // The worker ran the handler three times (none, one, two answers); the client was asked twice.
    expect(asked).toEqual(['elicitation/create the first name?', 'elicitation/create the second name?']);
    asked.length = 0;
    expect(there).toEqual(await ask(local, 'resources/read', { uri: 'ask://interview' }, handshake));
    expect(resultOf(there).contents).toEqual([{ uri: 'ask://interview', text: 'Ada then Grace' }]);
    // A client that did not declare elicitation: -32021, as for a read in the request.
    const undeclared = { revision: '2025-11-25', askClient };
    const refused = await ask(remote, 'resources/read', { uri: 'ask://interview' }, undeclared);
    expect(refused).toEqual(await ask(local, 'resources/read', { uri: 'ask://interview' }, undeclared));
    expect(refused).toMatchObject({ kind: 'error', error: { code: -32021 } });
  });

  it('ends a handler that keeps asking without asking the client a question it would not use', async () => {
    const asked: string[] = [];
    const askClient = async (_method: string, params: Readonly<Record<string, unknown>>) => {
      asked.push(String(params.message));
      return accept('Ada');
    };
    const outcome = await ask(
      remote,
      'resources/read',
      { uri: 'ask://forever' },
      { revision: '2025-11-25', askClient, ...ELICIT },
    );
    expect(outcome).toMatchObject({ kind: 'error' });
    // Eight runs of the handler: the first seven questions were answered and used by the next run;
    // the eighth run's question was never sent.
    expect(asked).toEqual(['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q6'].map((q) => `the ${q} name?`));
    expect(warnings).toContainEqual({
      fields: { error: 'resource ask://forever kept asking for input: 8 rounds' },
      message: 'resource ask://forever gave no answer',
    });
  });
});
