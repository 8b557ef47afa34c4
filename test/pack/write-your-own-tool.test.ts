import { execFile } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packPackages } from '../../scripts/pack-packages.ts';
import { cleanEnv, goneWithin, portIsFree, REPO_ROOT, RunningProcess } from '../support/cli.ts';
import { useTestDatabase } from '../support/databases.ts';
import { testClient } from '../support/pg-clients.ts';
import { waitForTask } from '../support/task-platform.ts';

// The README's "Write your own tool", followed as a newcomer would, on the packages as they would
// be published: the workspace packages are built and packed (`npm pack`), installed into a new
// project in a temporary folder outside the checkout (no workspace links: npm installs the
// tarballs and fetches the rest), and the section's own files and commands run there as written.
// The only changes to them: the tarballs' folder, the port (0: the machine is shared) and the
// database (this test's own, through DATABASE_URL). System PATH, so `npx` and the launcher start
// on the machine's Node and the project's node_modules/.bin/node is what runs Taskgate.
const execFileAsync = promisify(execFile);
const database = useTestDatabase({ empty: true });

interface Block {
  readonly lang: string;
  readonly file: string | undefined;
  readonly text: string;
}

/** The fenced blocks of a README section ("Write your own tool" unless named), in order. */
async function sectionBlocks(heading = 'Write your own tool'): Promise<Block[]> {
  const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no section "${heading}"`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```(\w+)(?: file=(\S+))?\n([\s\S]*?)^```$/gm)].map((match) => ({
    lang: match[1] as string,
    file: match[2],
    text: match[3] as string,
  }));
}

/** The shell lines of a block, without comments; a line ending in `\` continues. */
function commands(block: Block): string[] {
  return block.text
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** PATH as a shell of this machine has it: no project's node_modules/.bin (npm test adds ours). */
function systemPath(): string {
  return (process.env.PATH ?? '')
    .split(':')
    .filter((entry) => !entry.includes(`${path.sep}node_modules${path.sep}.bin`))
    .join(':');
}

let parent: string;
let project: string;
let blocks: Block[];
let env: Record<string, string>;
let taskgate: RunningProcess | undefined;
let origin: string;
let db: pg.Client;

async function bash(line: string, cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileAsync('bash', ['-euo', 'pipefail', '-c', line], { cwd, env, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const failure = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${line}\nfailed: ${failure.message}\n${failure.stdout ?? ''}${failure.stderr ?? ''}`);
  }
}

beforeAll(async () => {
  blocks = await sectionBlocks();
  parent = await mkdtemp(path.join(tmpdir(), 'taskgate-newcomer-'));
  expect(path.relative(REPO_ROOT, parent).startsWith('..')).toBe(true);
  env = cleanEnv({
    PATH: systemPath(),
    DATABASE_URL: database.url,
    // Cache policy only: what is in npm's cache (the checkout's npm ci filled it) is not fetched again.
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  });

  const [pack, install, ...rest] = blocks;
  expect(pack && commands(pack)).toEqual(['npm run pack:packages']);
  const packs = path.join(parent, 'packs');
  const packed = packPackages(packs);
  expect(packed.map((entry) => entry.name)).toEqual(expect.arrayContaining(['@taskgate/sdk', '@taskgate/cli']));

  // mkdir, npm init, npm install of the tarballs: one shell, as typed.
  if (!install) throw new Error('the section has no install block');
  const script = commands(install)
    .map((line) => line.replaceAll('/path/to/taskgate/dist/packs', packs))
    .join('\n');
  await bash(script, parent);
  project = path.join(parent, 'notes');

  for (const block of rest.filter((entry) => entry.file !== undefined)) {
    const file = path.join(project, block.file as string);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, block.text);
  }
  db = testClient({ connectionString: database.url });
  await db.connect();
}, 300_000);

afterAll(async () => {
  taskgate?.kill();
  await db?.end();
  if (parent) await rm(parent, { recursive: true, force: true });
});

/** The block that runs it: `npx taskgate migrate up …` and `npx taskgate start …`. */
function runBlock(): string[] {
  const block = blocks.find((entry) => entry.lang === 'sh' && entry.text.includes('taskgate start'));
  if (!block) throw new Error('the section has no block that starts Taskgate');
  return commands(block);
}

/** The curl lines, aimed at the running process. */
function curlLines(): string[] {
  const block = blocks.find((entry) => entry.lang === 'sh' && entry.text.includes('curl'));
  if (!block) throw new Error('the section has no curl block');
  return commands(block).map((line) => line.replaceAll('localhost:8080', new URL(origin).host));
}

async function rowsOf(taskId: string): Promise<{ text: string; xmin: string }[]> {
  const { rows } = await db.query('SELECT text, xmin::text AS xmin FROM notes WHERE task_id = $1 ORDER BY id', [
    taskId,
  ]);
  return rows;
}

interface TaskRead {
  readonly id: string;
  readonly status: string;
  readonly progress: { value: number; total?: number } | null;
  readonly result: { content: unknown[] } | null;
}

async function task(id: string): Promise<TaskRead> {
  return (await (await fetch(`${origin}/v1/tasks/${id}`)).json()) as TaskRead;
}

describe('Write your own tool (README), on the packed packages', () => {
  it('installs from the tarballs alone, with the types a tool author compiles against', async () => {
    const manifest = JSON.parse(await readFile(path.join(project, 'package.json'), 'utf8'));
    for (const spec of Object.values(manifest.dependencies as Record<string, string>)) {
      expect(spec).not.toMatch(/^(link|workspace):/);
    }
    // Installed copies, not links into this checkout.
    for (const name of ['sdk', 'cli', 'db', 'tools', 'api', 'worker']) {
      const installed = path.join(project, 'node_modules/@taskgate', name);
      expect((await lstat(installed)).isSymbolicLink(), installed).toBe(false);
      expect(path.relative(REPO_ROOT, await realpath(installed)).startsWith('..'), installed).toBe(true);
    }
    const sdk = path.join(project, 'node_modules/@taskgate/sdk');
    expect(JSON.parse(await readFile(path.join(sdk, 'package.json'), 'utf8')).exports['.'].default).toBe(
      './dist/index.js',
    );
    // The module type-checks against the published declarations (this repo's compiler and Node's
    // types; the project itself needs neither to run).
    await writeFile(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2024',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          typeRoots: [path.join(REPO_ROOT, 'node_modules/@types')],
          types: ['node'],
        },
        include: ['tools.ts'],
      }),
    );
    await execFileAsync(process.execPath, [path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], {
      cwd: project,
    }).catch((error) => {
      throw new Error(`tools.ts does not type-check against the packed declarations:\n${error.stdout}${error.stderr}`);
    });
  });

  it('migrates the platform and the module, then starts serving the tool', async () => {
    const [migrate, start] = runBlock();
    expect(migrate).toBe('npx taskgate migrate up --tools ./tools.ts');
    expect(start).toBe('npx taskgate start --tools ./tools.ts');
    const { stdout } = await bash(migrate as string, project);
    expect(stdout).toContain('applied 0001_notes of tool module notes');
    const { rows } = await db.query(`SELECT to_regclass('notes') IS NOT NULL AS created`);
    expect(rows[0].created).toBe(true);

    const [command, ...args] = (start as string).split(' ');
    taskgate = new RunningProcess(command as string, args, { ...env, PORT: '0' }, { cwd: project, detached: true });
    const started = await taskgate.waitForLog((line) => line.msg === 'taskgate started');
    origin = new URL(started.url as string).origin;
    const loaded = taskgate.logs.find((line) => line.msg === 'tool module loaded');
    expect(loaded).toMatchObject({ module: 'notes', tools: ['save_notes'] });
  }, 60_000);

  it('answers the README curl calls: a task, its result, rows committed with it, a replay', async () => {
    const [submit, poll] = curlLines();
    const created = JSON.parse((await bash(submit as string, project)).stdout);
    expect(created).toMatchObject({ tool: 'save_notes', status: 'working', idempotencyKey: 'notes-1' });
    const pollLine = (poll as string).replace('<id>', created.id);
    const done = await waitForTask(
      async () => JSON.parse((await bash(pollLine, project)).stdout) as TaskRead,
      (read) => read.status !== 'working',
    );
    expect(done.status).toBe('completed');
    expect(done.result?.content).toEqual([{ type: 'text', text: 'saved 2 notes' }]);
    expect(done.progress).toMatchObject({ value: 2, total: 2 });

    // One transaction: the rows, the key's stored result and the task's completion share an xmin.
    const rows = await rowsOf(created.id);
    expect(rows.map((row) => row.text)).toEqual(['buy milk', 'call Ada']);
    const { rows: committed } = await db.query(
      `SELECT t.xmin::text AS task, k.xmin::text AS key FROM tasks t
         JOIN idempotency_keys k ON k.tenant_id = t.tenant_id AND k.key = 'notes-1' WHERE t.id = $1`,
      [created.id],
    );
    expect(committed[0]).toEqual({ task: rows[0]?.xmin, key: rows[0]?.xmin });

    // The same call again: the stored task, nothing saved twice.
    const replay = JSON.parse((await bash(submit as string, project)).stdout);
    expect(replay).toMatchObject({ id: created.id, status: 'completed' });
    expect(await rowsOf(created.id)).toHaveLength(2);
    const again = await fetch(`${origin}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'notes-1' },
      body: JSON.stringify({ tool: 'save_notes', arguments: { notes: ['buy milk', 'call Ada'] } }),
    });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const other = await fetch(`${origin}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'notes-1' },
      body: JSON.stringify({ tool: 'save_notes', arguments: { notes: ['something else'] } }),
    });
    expect(other.status).toBe(422);
    expect(((await other.json()) as { code: string }).code).toBe('TG_IDEMPOTENCY_KEY_MISMATCH');
  });

  it('cancels over REST while the handler works: the task ends cancelled, with no rows', async () => {
    const notes = Array.from({ length: 40 }, (_, index) => `rest cancel ${index}`);
    const response = await fetch(`${origin}/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'save_notes', arguments: { notes } }),
    });
    expect(response.status).toBe(201);
    const { id } = (await response.json()) as TaskRead;
    // The handler has started (its first progress is stored) and is 39 sleeps from its commit.
    await waitForTask(
      () => task(id),
      (read) => read.progress !== null,
    );
    const cancel = await fetch(`${origin}/v1/tasks/${id}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(cancel.status).toBe(202);
    const ended = await waitForTask(
      () => task(id),
      (read) => read.status !== 'working',
    );
    expect(ended.status).toBe('cancelled');
    expect(await rowsOf(id)).toEqual([]);
  });

  it('serves an MCP client over Streamable HTTP: the tool alone, progress, result, replay, cancel', async () => {
    const client = new Client({ name: 'newcomer', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', origin)));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['save_notes']);

      const progress: number[] = [];
      const call = { name: 'save_notes', arguments: { notes: ['mcp one', 'mcp two'], idempotencyKey: 'mcp-1' } };
      const result = await client.callTool(call, undefined, { onprogress: (update) => progress.push(update.progress) });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'saved 2 notes' }] });
      expect(progress).toEqual([1, 2]);
      const replayed = await client.callTool(call);
      expect(replayed.content).toEqual(result.content);
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM notes WHERE text LIKE 'mcp %'`);
      expect(rows[0].n).toBe(2);
      await expect(
        client.callTool({ name: 'save_notes', arguments: { notes: ['mcp three'], idempotencyKey: 'mcp-1' } }),
      ).rejects.toThrow(/idempotency/i);

      // Abort after the first progress: the SDK sends notifications/cancelled; the sleep ends at once.
      const controller = new AbortController();
      const notes = Array.from({ length: 40 }, (_, index) => `mcp cancel ${index}`);
      await expect(
        client.callTool({ name: 'save_notes', arguments: { notes } }, undefined, {
          signal: controller.signal,
          onprogress: () => controller.abort('the user pressed stop'),
        }),
      ).rejects.toThrow();
      const ended = await waitForTask(
        async () =>
          (await db.query(`SELECT id, status FROM tasks WHERE arguments->'notes'->>0 = 'mcp cancel 0'`)).rows[0] as
            | { id: string; status: string }
            | undefined,
        (read) => read !== undefined && read.status !== 'working',
      );
      expect(ended?.status).toBe('cancelled');
      expect(await rowsOf(ended?.id as string)).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it("answers the README's CLI calls, and its review finds nothing to flag", async () => {
    // "Call it from an MCP client": the CLI lines, aimed at the running process.
    const block = (await sectionBlocks('Call it from an MCP client')).find(
      (entry) => entry.lang === 'sh' && entry.text.includes('taskgate review'),
    );
    if (!block) throw new Error('the section has no block that runs taskgate review');
    const [call, review, ...others] = commands(block);
    expect(others).toEqual([]);
    expect(call).toMatch(/^npx taskgate call save_notes /);
    expect(review).toBe('npx taskgate review');
    const mcp = new URL('/mcp', origin).href;
    const called = await bash(`${call} --url ${mcp}`, project);
    expect(JSON.parse(called.stdout)).toMatchObject({ content: [{ type: 'text', text: 'saved 1 notes' }] });
    // Exits 0 only with no finding: every tool has a max clock, every mutation takes a key.
    const reviewed = await bash(`${review} --url ${mcp} --json`, project);
    const report = JSON.parse(reviewed.stdout) as {
      tools: { tool: string; maxMs: number | null }[];
      findings: string[];
    };
    expect(report.findings).toEqual([]);
    expect(report.tools).toEqual([expect.objectContaining({ tool: 'save_notes', maxMs: 60_000 })]);
  }, 60_000);

  it("starts as the README's MCP client settings write it: the launcher, mcp-stdio, absolute paths", async () => {
    const block = (await sectionBlocks('Call it from an MCP client')).find((entry) => entry.lang === 'json');
    if (!block) throw new Error('the section has no MCP client settings');
    const settings = JSON.parse(block.text.replaceAll('/path/to/notes', project)) as {
      mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
    };
    const server = settings.mcpServers.notes;
    if (!server) throw new Error('the settings name no server "notes"');
    const client = new Client({ name: 'newcomer-settings', version: '1.0.0' });
    // Started from another folder, as clients do; this test's database, as for every command here.
    await client.connect(
      new StdioClientTransport({
        command: server.command,
        args: server.args,
        cwd: parent,
        env: { ...server.env, ...env },
        stderr: 'pipe',
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(['save_notes']);
      const result = await client.callTool({ name: 'save_notes', arguments: { notes: ['settings note'] } });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'saved 1 notes' }] });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('runs as an MCP client server command: npx taskgate mcp-stdio --tools ./tools.ts', async () => {
    const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('`npx taskgate mcp-stdio --tools ./tools.ts`');
    const client = new Client({ name: 'newcomer-stdio', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: 'npx',
        args: ['taskgate', 'mcp-stdio', '--tools', './tools.ts'],
        cwd: project,
        env,
        stderr: 'pipe',
      }),
    );
    try {
      const result = await client.callTool({ name: 'save_notes', arguments: { notes: ['stdio note'] } });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'saved 1 notes' }] });
    } finally {
      await client.close();
    }
  }, 60_000);

  it('without --tools, mcp-stdio says to name a tool module (an installed CLI has no demo modules)', async () => {
    const result = await execFileAsync('npx', ['taskgate', 'mcp-stdio'], { cwd: project, env }).then(
      () => {
        throw new Error('npx taskgate mcp-stdio without --tools succeeded');
      },
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(result.code).toBe(64);
    expect(result.stderr).toContain(
      'mcp-stdio has no tools to run in-process: name a tool module with --tools <file or package> (or TASKGATE_TOOLS)',
    );
    expect(result.stderr).not.toContain('--tools none');
  }, 60_000);

  it('stops on Ctrl-C with nothing left running', async () => {
    const running = taskgate as RunningProcess;
    const pid = running.taskgatePid;
    running.signalGroup('SIGINT');
    // npx and the shell it runs die of the signal; Taskgate itself stops gracefully.
    await running.closedWithin(20_000);
    expect(running.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
    expect(await goneWithin(pid, 1_000)).toBe(true);
    expect(await portIsFree(Number(new URL(origin).port))).toBe(true);
    taskgate = undefined;
  }, 30_000);
});
