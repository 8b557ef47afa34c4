import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanEnv,
  goneWithin,
  isRunning,
  type LogLine,
  portIsFree,
  REPO_ROOT,
  RunningProcess,
  runCommand,
} from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { waitForTask } from '../support/task-platform.ts';

// node_modules/.bin/taskgate run directly, as an MCP client's configuration runs it, with the
// system's Node (20 here, too old for Taskgate) first on PATH and a cwd outside the project.
const BIN = path.join(REPO_ROOT, 'node_modules/.bin/taskgate');
const SYSTEM_NODE = '/usr/bin/node';
const running: RunningProcess[] = [];
const databases: TestDatabase[] = [];
let projectNode: string;
let cwd: string;

beforeAll(async () => {
  projectNode = await realpath(path.join(REPO_ROOT, 'node_modules/.bin/node'));
  cwd = await mkdtemp(path.join(tmpdir(), 'taskgate-launcher-'));
  // Without an older Node first on PATH this file would test nothing.
  const first = spawnSync('node', ['--version'], { env: systemNodeFirst(), encoding: 'utf8' });
  expect(first.stdout.trim()).toBe(spawnSync(SYSTEM_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim());
  expect(Number(/^v(\d+)/.exec(first.stdout)?.[1])).toBeLessThan(22);
});

afterAll(async () => {
  await rm(cwd, { recursive: true, force: true });
});

afterEach(async () => {
  for (const process of running.splice(0)) process.kill();
  await Promise.all(databases.splice(0).map((database) => database.drop()));
});

function systemNodeFirst(extra: Record<string, string> = {}): Record<string, string> {
  const env = cleanEnv(extra);
  return { ...env, PATH: `${path.dirname(SYSTEM_NODE)}:${env.PATH}` };
}

async function databaseUrl(options: { empty?: boolean } = {}): Promise<string> {
  const database = await createTestDatabase(options);
  databases.push(database);
  return database.url;
}

/** The executable a live process runs, resolved. */
async function executableOf(pid: number): Promise<string> {
  return realpath(await readlink(`/proc/${pid}/exe`));
}

describe('node_modules/.bin/taskgate with an old Node first on PATH', () => {
  it('start runs on the project Node, and SIGTERM to the launcher stops it gracefully with its status', async () => {
    const launcher = new RunningProcess(
      BIN,
      ['start'],
      systemNodeFirst({ DATABASE_URL: await databaseUrl(), PORT: '0' }),
      {
        cwd,
      },
    );
    running.push(launcher);
    const { url } = await launcher.waitForLog((line) => line.msg === 'taskgate started');
    const pid = launcher.taskgatePid;
    expect(pid).not.toBe(launcher.child.pid);
    expect(await executableOf(pid)).toBe(projectNode);
    expect(await executableOf(launcher.child.pid as number)).toBe(await realpath(SYSTEM_NODE));

    launcher.child.kill('SIGTERM');
    expect(await launcher.closedWithin(15_000)).toBe(0);
    expect(launcher.logs.find((line) => line.msg === 'shutting down')).toMatchObject({ signal: 'SIGTERM' });
    expect(launcher.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
    expect(isRunning(pid)).toBe(false);
    expect(await portIsFree(Number(new URL(url as string).port))).toBe(true);
  });

  it('exits with the status of the command it ran', async () => {
    const result = await runCommand(
      BIN,
      ['start', '--no-migrate'],
      systemNodeFirst({ DATABASE_URL: await databaseUrl({ empty: true }), PORT: '0' }),
      { cwd },
    );
    expect(result.stderr).toMatch(/\[TG_MIGRATION_PENDING\]$/m);
    expect(result.code).toBe(65);
  });

  it('a SIGKILL of the launcher, which it cannot forward, still stops Taskgate gracefully', async () => {
    const launcher = new RunningProcess(
      BIN,
      ['start'],
      systemNodeFirst({ DATABASE_URL: await databaseUrl(), PORT: '0' }),
      {
        cwd,
      },
    );
    running.push(launcher);
    await launcher.waitForLog((line) => line.msg === 'taskgate started');
    const pid = launcher.taskgatePid;
    launcher.child.kill('SIGKILL');
    await launcher.closedWithin(15_000);
    expect(launcher.logs.find((line) => line.msg === 'shutting down')).toMatchObject({ cause: 'parent exited' });
    expect(launcher.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
    expect(await goneWithin(pid, 1_000)).toBe(true);
  });

  it('Ctrl-C (SIGINT to its process group: the terminal and the launcher both deliver one) is one graceful stop', async () => {
    const env = systemNodeFirst({ DATABASE_URL: await databaseUrl(), PORT: '0' });
    const launcher = new RunningProcess(BIN, ['start'], env, { cwd, detached: true });
    running.push(launcher);
    await launcher.waitForLog((line) => line.msg === 'taskgate started');
    launcher.signalGroup('SIGINT');
    expect(await launcher.closedWithin(15_000)).toBe(0);
    expect(launcher.logs.map((line) => line.msg)).not.toContain('second signal during shutdown: exiting now');
    expect(launcher.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
  });

  it('ends by the same signal as Taskgate when Taskgate is killed', async () => {
    const env = systemNodeFirst({ DATABASE_URL: await databaseUrl(), PORT: '0' });
    const launcher = new RunningProcess(BIN, ['start'], env, { cwd });
    running.push(launcher);
    await launcher.waitForLog((line) => line.msg === 'taskgate started');
    process.kill(launcher.taskgatePid, 'SIGKILL');
    await launcher.closedWithin(15_000);
    expect(launcher.child.signalCode).toBe('SIGKILL');
  });

  it('mcp-stdio keeps stdin and stdout as the protocol pipe and exits 0 when stdin ends', async () => {
    const child = spawn(BIN, ['mcp-stdio'], {
      cwd,
      env: systemNodeFirst({ DATABASE_URL: await databaseUrl() }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stdout: string[] = [];
    const logs: LogLine[] = [];
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      stdout.push(...lines);
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const lines = stderr.split('\n');
      stderr = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('{')) logs.push(JSON.parse(line));
    });
    const exited = new Promise<{ code: number | null }>((resolve) => child.on('close', (code) => resolve({ code })));
    try {
      child.stdin.write(
        `${JSON.stringify({
          jsonrpc: '2.0',
          id: 'hello',
          method: 'tools/call',
          params: {
            name: 'greet',
            arguments: { name: 'Node' },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': '2026-07-28',
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          },
        })}\n`,
      );
      const answer = await waitForTask(
        async () => stdout.map((line) => JSON.parse(line) as { id?: string }).find((message) => message.id === 'hello'),
        (message) => message !== undefined,
        30_000,
      );
      expect(JSON.stringify(answer)).toContain('Hello, Node!');
      // Protocol messages only on stdout, and served by the project's Node.
      expect(stdout.every((line) => (JSON.parse(line) as { jsonrpc?: string }).jsonrpc === '2.0')).toBe(true);
      const pid = logs.find((line) => typeof line.pid === 'number')?.pid as number;
      expect(await executableOf(pid)).toBe(projectNode);

      child.stdin.end();
      expect(await exited).toEqual({ code: 0 });
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('the launcher on a Node too old for Taskgate, with no project Node to move to', () => {
  // A copy of the launcher in a folder of its own, run by the system's Node: what it does depends
  // only on where it sits (a checkout's src/, or an installed package's dist/), not on the cwd.
  async function tooOldMessage(layout: 'checkout' | 'installed'): Promise<string> {
    const root = await mkdtemp(path.join(tmpdir(), `taskgate-old-node-${layout}-`));
    try {
      const cli = path.join(root, 'cli');
      await mkdir(path.join(cli, 'bin'), { recursive: true });
      await copyFile(path.join(REPO_ROOT, 'apps/cli/bin/taskgate.js'), path.join(cli, 'bin/taskgate.js'));
      await writeFile(path.join(cli, 'package.json'), JSON.stringify({ type: 'module' }));
      const entry = layout === 'checkout' ? 'src/main.ts' : 'dist/main.js';
      await mkdir(path.dirname(path.join(cli, entry)), { recursive: true });
      await writeFile(path.join(cli, entry), 'export {};\n');
      // Without this the launcher would move to a Node it found above the temporary folder.
      for (let directory = root; path.dirname(directory) !== directory; directory = path.dirname(directory)) {
        expect(existsSync(path.join(directory, 'node_modules/.bin/node')), directory).toBe(false);
      }
      const result = await runCommand(SYSTEM_NODE, [path.join(cli, 'bin/taskgate.js'), 'version'], cleanEnv(), {
        cwd,
      });
      expect(result.code).toBe(64);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      return lines[0] as string;
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }

  it('in a checkout, says to run npm ci there', async () => {
    expect(await tooOldMessage('checkout')).toMatch(
      /^taskgate: Node\.js 20\.\S+ is too old for Taskgate, which needs Node\.js >= 22\.12: run npm ci in the Taskgate checkout .*\[TG_USAGE\]$/,
    );
  });

  it('in a project that installed the packages, says to install node@24 there', async () => {
    const message = await tooOldMessage('installed');
    expect(message).toMatch(/: run npm install node@24 in your project .*\[TG_USAGE\]$/);
    expect(message).not.toContain('npm ci');
  });
});
