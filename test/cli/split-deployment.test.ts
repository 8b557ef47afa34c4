import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, REPO_ROOT, type RunningProcess, startCli } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { perRequestMessage } from '../support/mcp-http.ts';
import { listenStream } from '../support/sse-client.ts';
import { waitForTask } from '../support/task-platform.ts';

// The split deployment, as an operator runs it: an API process that loads no tool module
// (`--tools none`) and two worker processes, each loading its own module, on one Postgres. The
// API offers what the workers publish to the catalog, each call runs on a worker of its tool, a
// listening client hears of each change, and a tool whose last worker stopped stays offered for
// the catalog window (calls meanwhile wait in its queue, up to the queue bound), then is gone.
const database = useTestDatabase();
/** Short enough to wait out, long enough for a queue-bound call to end inside it. */
const WINDOW_MS = 10_000;
const MAX_QUEUE_MS = 1_000;

/** A tool module as a user writes one: a .ts file importing @taskgate/sdk, in a folder of its own. */
async function writeModules(): Promise<{ alpha: string; beta: string }> {
  const root = await mkdtemp(path.join(tmpdir(), 'taskgate-fleet-'));
  // Resolved as the user's project would (its own node_modules); the link's target is the SDK's source.
  await mkdir(path.join(root, 'node_modules', '@taskgate'), { recursive: true });
  await symlink(path.join(REPO_ROOT, 'packages/sdk'), path.join(root, 'node_modules/@taskgate/sdk'), 'dir');
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ type: 'module' }));
  const module = (tool: string, content: string[] = []) =>
    [
      "import { definePrompt, defineResource, defineTool } from '@taskgate/sdk';",
      '',
      ...content,
      `export const name: string = '${tool.replace('_', '-')}';`,
      'export const tools = [',
      '  defineTool({',
      `    name: '${tool}',`,
      "    description: 'says which process ran it',",
      "    inputSchema: { type: 'object', properties: {}, additionalProperties: false },",
      "    retry: 'safe',",
      '    async handler() {',
      '      const pid: number = process.pid;',
      `      return { content: [{ type: 'text', text: '${tool} ran in ' + pid }], structuredContent: { pid } };`,
      '    },',
      '  }),',
      '];',
      '',
    ].join('\n');
  // Alpha's module also has a resource and a prompt: the API lists them from the catalog, and its
  // worker reads them.
  const alphaContent = [
    'export const resources = [',
    '  defineResource({',
    "    uri: 'fleet://alpha/pid',",
    "    name: 'pid',",
    '    read: () => [{ text: String(process.pid) }],',
    '    // Changes every 100 ms while anyone watches it.',
    '    watch: (changed: () => void) => {',
    '      const timer = setInterval(changed, 100);',
    '      return () => clearInterval(timer);',
    '    },',
    '  }),',
    '];',
    'export const prompts = [',
    '  definePrompt({',
    "    name: 'fleet_prompt',",
    "    arguments: [{ name: 'who', required: true }],",
    "    get: ({ who }) => ({ messages: [{ role: 'user', content: { type: 'text', text: who + ' in ' + process.pid } }] }),",
    '  }),',
    '];',
    '',
  ];
  await writeFile(path.join(root, 'alpha.ts'), module('fleet_alpha', alphaContent));
  await writeFile(path.join(root, 'beta.ts'), module('fleet_beta'));
  return { alpha: path.join(root, 'alpha.ts'), beta: path.join(root, 'beta.ts') };
}

const running: RunningProcess[] = [];
let modules: { alpha: string; beta: string };
beforeAll(async () => {
  modules = await writeModules();
});
afterAll(() => {
  for (const process of running) process.kill();
});

function start(args: string[], env: Record<string, string> = {}): RunningProcess {
  const taskgate = startCli(
    ['start', ...args],
    cleanEnv({
      DATABASE_URL: database.url,
      TASKGATE_CATALOG_WINDOW_MS: String(WINDOW_MS),
      TASKGATE_MAX_QUEUE_MS: String(MAX_QUEUE_MS),
      ...env,
    }),
  );
  running.push(taskgate);
  return taskgate;
}

async function startWorker(module: string): Promise<RunningProcess> {
  const worker = start(['--role', 'worker', '--tools', module]);
  await worker.waitForLog((line) => line.msg === 'tools published to the catalog');
  return worker;
}

async function rpc(mcpUrl: URL, method: string, params: Record<string, unknown>) {
  const { headers, body } = perRequestMessage(method, params);
  const response = await fetch(mcpUrl, { method: 'POST', headers, body });
  return (await response.json()) as {
    result?: { tools?: { name: string }[]; structuredContent?: { pid: number } };
    error?: { code: number; message: string; data?: Record<string, unknown> };
  };
}

const listed = async (mcpUrl: URL) => ((await rpc(mcpUrl, 'tools/list', {})).result?.tools ?? []).map((t) => t.name);

describe('an API with no module and two workers with one module each', () => {
  it('offers the union, routes each call to its tool, tells listeners of changes, and ages a stopped tool out', async () => {
    // Answered as JSON however long a call waits (the queue-bound call below waits a second or more).
    const api = start(['--role', 'api', '--tools', 'none'], { PORT: '0', TASKGATE_MCP_SSE_AFTER_MS: '60000' });
    const started = await api.waitForLog((line) => line.msg === 'taskgate started');
    const mcpUrl = new URL(`${started.url as string}/mcp`);
    expect(await listed(mcpUrl)).toEqual([]);

    const alpha = await startWorker(modules.alpha);
    await waitForTask(
      () => listed(mcpUrl),
      (names) => names.join() === 'fleet_alpha',
    );
    const stream = listenStream(mcpUrl, 'fleet', { toolsListChanged: true });
    await stream.until((messages) => messages.length >= 1);
    expect(stream.messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });

    // The second worker's tools reach the listener as a change, and tools/list as the union.
    const beta = await startWorker(modules.beta);
    await stream.until((messages) => messages.length >= 2);
    expect(stream.messages[1]).toMatchObject({ method: 'notifications/tools/list_changed' });
    expect(await listed(mcpUrl)).toEqual(['fleet_alpha', 'fleet_beta']);

    // Alpha's content, listed from the catalog and read by alpha's worker (the API loaded no module).
    const resources = await rpc(mcpUrl, 'resources/list', {});
    expect((resources.result as { resources?: { uri: string }[] }).resources?.map((r) => r.uri)).toEqual([
      'fleet://alpha/pid',
    ]);
    const read = await rpc(mcpUrl, 'resources/read', { uri: 'fleet://alpha/pid' });
    expect(read.result).toMatchObject({ contents: [{ uri: 'fleet://alpha/pid', text: String(alpha.taskgatePid) }] });
    const prompt = await rpc(mcpUrl, 'prompts/get', { name: 'fleet_prompt', arguments: { who: 'me' } });
    expect(prompt.result).toMatchObject({
      messages: [{ role: 'user', content: { type: 'text', text: `me in ${alpha.taskgatePid}` } }],
    });

    // A subscription to it (2026-07-28: subscriptions/listen) hears the changes alpha's worker watches.
    const watched = listenStream(mcpUrl, 'fleet-watch', { resourceSubscriptions: ['fleet://alpha/pid'] });
    await watched.until((messages) => messages.length >= 3);
    expect(watched.messages[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { resourceSubscriptions: ['fleet://alpha/pid'] } },
    });
    expect(watched.messages[2]).toMatchObject({
      method: 'notifications/resources/updated',
      params: { uri: 'fleet://alpha/pid' },
    });
    watched.close();

    // Each call runs in the process that serves its tool, never in the API's.
    const ranAlpha = await rpc(mcpUrl, 'tools/call', { name: 'fleet_alpha', arguments: {} });
    const ranBeta = await rpc(mcpUrl, 'tools/call', { name: 'fleet_beta', arguments: {} });
    expect(ranAlpha.result?.structuredContent?.pid).toBe(alpha.taskgatePid);
    expect(ranBeta.result?.structuredContent?.pid).toBe(beta.taskgatePid);
    expect(new Set([api.taskgatePid, alpha.taskgatePid, beta.taskgatePid]).size).toBe(3);

    // The beta worker stops: within the window its tool is still offered, and a call of it waits
    // in its queue until the queue bound ends it, naming the tool.
    const stoppedAt = performance.now();
    expect((await beta.stop('SIGTERM')).code).toBe(0);
    expect(await listed(mcpUrl)).toEqual(['fleet_alpha', 'fleet_beta']);
    const queued = await rpc(mcpUrl, 'tools/call', { name: 'fleet_beta', arguments: {} });
    expect(performance.now() - stoppedAt).toBeLessThan(WINDOW_MS);
    expect(queued.error?.message).toBe(
      `no worker started fleet_beta within ${MAX_QUEUE_MS} ms (TASKGATE_MAX_QUEUE_MS); is a worker serving it running?`,
    );
    expect(queued.error?.data).toMatchObject({ clock: 'queue', tool: 'fleet_beta' });

    // After the window: gone from tools/list (the listener is told), and a call of it is an unknown tool.
    await stream.until((messages) => messages.length >= 3, WINDOW_MS + 10_000);
    expect(stream.messages[2]).toMatchObject({ method: 'notifications/tools/list_changed' });
    expect(performance.now() - stoppedAt).toBeGreaterThanOrEqual(WINDOW_MS);
    expect(await listed(mcpUrl)).toEqual(['fleet_alpha']);
    const unknown = await rpc(mcpUrl, 'tools/call', { name: 'fleet_beta', arguments: {} });
    expect(unknown.error).toMatchObject({ code: -32602, data: { code: 'TG_TOOL_UNKNOWN', tool: 'fleet_beta' } });
    // The other worker's tool is unaffected.
    expect((await rpc(mcpUrl, 'tools/call', { name: 'fleet_alpha', arguments: {} })).result).toBeDefined();

    stream.close();
    expect((await alpha.stop('SIGTERM')).code).toBe(0);
    expect((await api.stop('SIGTERM')).code).toBe(0);
  }, 120_000);

  it('refuses --tools none with a module, and a worker with no tools', async () => {
    const mixed = start(['--role', 'api', '--tools', 'none', '--tools', modules.alpha], { PORT: '0' });
    expect(await mixed.closed).toBe(64);
    expect(mixed.stderr).toContain('--tools none loads no module, so it cannot be combined with modules');
    const idle = start(['--role', 'worker', '--tools', 'none']);
    expect(await idle.closed).toBe(64);
    expect(idle.stderr).toContain('the worker role has no tools to serve: name a tool module with --tools');
    const env = start(['--role', 'api'], { PORT: '0', TASKGATE_TOOLS: `none,${modules.alpha}` });
    expect(await env.closed).toBe(78);
    expect(env.stderr).toContain('TASKGATE_TOOLS none loads no module, so it cannot be combined with modules');
  }, 60_000);
});
