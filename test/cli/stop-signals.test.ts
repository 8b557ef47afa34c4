import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, goneWithin, portIsFree, RunningProcess, startCli } from '../support/cli.ts';
import { createTestDatabase, type TestDatabase } from '../support/databases.ts';
import { liveProcessesWith } from '../support/process-tree.ts';
import { waitForTask } from '../support/task-platform.ts';

// How Taskgate is stopped when it is run the ways the README gives: through npm, npx or directly,
// by the real signals a terminal, npm and a process manager send.
const running: RunningProcess[] = [];
const databases: TestDatabase[] = [];
const dataDirs: string[] = [];
afterEach(async () => {
  for (const process of running.splice(0)) process.kill();
  await Promise.all(databases.splice(0).map((database) => database.drop()));
  await Promise.all(dataDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

function track(process: RunningProcess): RunningProcess {
  running.push(process);
  return process;
}

async function started(process: RunningProcess): Promise<string> {
  return (await process.waitForLog((line) => line.msg === 'taskgate started')).url as string;
}

async function call(url: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** A slow_compute task whose handler is running (it has reported progress). */
async function runningTask(url: string): Promise<string> {
  const created = await call(`${url}/v1/tasks`, { tool: 'slow_compute', arguments: { seconds: 60 } });
  const id = created.id as string;
  await waitForTask(
    () => call(`${url}/v1/tasks/${id}`),
    (task) => task.progress !== null,
  );
  return id;
}

async function databaseEnv(): Promise<Record<string, string>> {
  const database = await createTestDatabase();
  databases.push(database);
  return cleanEnv({ DATABASE_URL: database.url, PORT: '0' });
}

const messages = (process: RunningProcess) => process.logs.map((line) => line.msg);
const STALE_DATA_DIR =
  'the previous embedded run on this data directory did not stop cleanly; Postgres recovers from its WAL';

describe('one Ctrl-C is one graceful stop', () => {
  it('SIGINT to the process group of npm start (the terminal and npm both deliver one) hands the running task back and leaves the embedded Postgres clean', async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'taskgate-ctrl-c-'));
    dataDirs.push(dataDir);
    const env = cleanEnv({ TASKGATE_DATA_DIR: dataDir, PORT: '0' });
    const first = track(new RunningProcess('npm', ['start'], env, { detached: true }));
    const id = await runningTask(await started(first));

    first.signalGroup('SIGINT');
    expect(await first.closedWithin(15_000)).toBe(0);
    expect(messages(first)).not.toContain('second signal during shutdown: exiting now');
    expect(first.logs.filter((line) => line.msg === 'shutting down')).toEqual([
      expect.objectContaining({ signal: 'SIGINT' }),
    ]);
    expect(messages(first)).toEqual(expect.arrayContaining(['worker stopped', 'relay stopped']));
    expect(first.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });

    // The next start finds a cleanly closed database and a task that was handed back, not lost:
    // it runs again at once (a lost attempt would first wait for its heartbeat to expire).
    const second = track(new RunningProcess('npm', ['start'], env, { detached: true }));
    const url = await started(second);
    expect(messages(second)).not.toContain(STALE_DATA_DIR);
    const rerun = await waitForTask(
      () => call(`${url}/v1/tasks/${id}`),
      (task) => task.attempt === 2 && task.progress !== null,
    );
    expect(rerun.status).toBe('working');
    expect(messages(second)).not.toContain('previous attempt was lost; running again');
    second.signalGroup('SIGINT');
    expect(await second.closedWithin(15_000)).toBe(0);
    expect(second.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
  }, 90_000);

  it('npx taskgate start: one Ctrl-C stops Taskgate cleanly, and npx reports 130 for the shell it ran it through', async () => {
    const taskgate = track(new RunningProcess('npx', ['taskgate', 'start'], await databaseEnv(), { detached: true }));
    const url = await started(taskgate);
    const pid = taskgate.taskgatePid;
    taskgate.signalGroup('SIGINT');
    // dash (npm's `sh -c`) dies of the terminal's SIGINT at once, and npm passes that on by dying of
    // it too, which a shell reports as 130 (128 + 2).
    expect(await taskgate.closedWithin(15_000)).toBeNull();
    expect(taskgate.child.signalCode).toBe('SIGINT');
    // Taskgate itself took the one Ctrl-C as one stop and stopped cleanly (its own status is 0).
    expect(taskgate.logs.filter((line) => line.msg === 'shutting down')).toEqual([
      expect.objectContaining({ signal: 'SIGINT' }),
    ]);
    expect(taskgate.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
    expect(await goneWithin(pid, 1_000), `Taskgate pid ${pid}`).toBe(true);
    expect(await portIsFree(Number(new URL(url).port))).toBe(true);
  });

  it('another signal during the shutdown still exits at once', async () => {
    const taskgate = track(startCli(['start'], await databaseEnv()));
    await runningTask(await started(taskgate));
    // Both arrive long before the shutdown they start can finish; whichever is taken first stops
    // gracefully and the other cuts it short.
    taskgate.child.kill('SIGINT');
    taskgate.child.kill('SIGTERM');
    const code = await taskgate.closedWithin(15_000);
    const first = taskgate.logs.find((line) => line.msg === 'shutting down')?.signal;
    const second = first === 'SIGINT' ? 'SIGTERM' : 'SIGINT';
    expect(taskgate.logs.at(-1)).toMatchObject({ msg: 'second signal during shutdown: exiting now', signal: second });
    expect(code).toBe(second === 'SIGINT' ? 130 : 143);
  });
});

describe('SIGTERM to the npm or npx process leaves no Taskgate behind', () => {
  async function expectGone(process: RunningProcess, url: string): Promise<void> {
    const pid = process.taskgatePid;
    await process.closedWithin(15_000);
    expect(process.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
    expect(await goneWithin(pid, 1_000), `Taskgate pid ${pid}`).toBe(true);
    expect(await portIsFree(Number(new URL(url).port))).toBe(true);
  }

  it('npx taskgate start: the shell npx runs it through dies, and Taskgate stops gracefully as its orphan', async () => {
    const taskgate = track(new RunningProcess('npx', ['taskgate', 'start'], await databaseEnv()));
    const url = await started(taskgate);
    // npm 11 runs `sh -c "'taskgate' start"`, and dash stays in between: Taskgate is npx's grandchild.
    expect(taskgate.taskgatePid).not.toBe(taskgate.child.pid);
    taskgate.child.kill('SIGTERM');
    await expectGone(taskgate, url);
    expect(taskgate.logs.find((line) => line.msg === 'shutting down')).toMatchObject({ cause: 'parent exited' });
  });

  it('npm run taskgate -- start: npm forwards SIGTERM to Taskgate itself (the script execs it)', async () => {
    const taskgate = track(new RunningProcess('npm', ['run', 'taskgate', '--', 'start'], await databaseEnv()));
    const url = await started(taskgate);
    taskgate.child.kill('SIGTERM');
    await expectGone(taskgate, url);
    expect(taskgate.logs.find((line) => line.msg === 'shutting down')).toMatchObject({ signal: 'SIGTERM' });
  });
});

describe('SIGHUP and SIGQUIT stop it gracefully too', () => {
  // Left to their default action they end the process at once, with no shutdown: a tool's
  // subprocess tree, a session of its own that a hangup does not reach, would run on.
  for (const signal of ['SIGHUP', 'SIGQUIT'] as const) {
    it(`${signal}: the running sleep_subprocess task is handed back and its process tree is gone`, async () => {
      const taskgate = track(startCli(['start'], await databaseEnv()));
      const url = await started(taskgate);
      const seconds = randomInt(100, 599) + randomInt(1, 9_999) / 10_000;
      await call(`${url}/v1/tasks`, { tool: 'sleep_subprocess', arguments: { seconds } });
      await waitForTask(
        async () => liveProcessesWith(String(seconds)).length,
        (count) => count === 3,
      );
      taskgate.child.kill(signal);
      expect(await taskgate.closedWithin(15_000)).toBe(0);
      expect(taskgate.logs.find((line) => line.msg === 'shutting down')).toMatchObject({ signal });
      expect(taskgate.logs.at(-1)).toMatchObject({ msg: 'taskgate stopped', problems: [] });
      expect(liveProcessesWith(String(seconds)).length).toBe(0);
    }, 60_000);
  }
});

describe('the shutdown deadline holds while mcp-stdio starts', () => {
  it('SIGTERM while start-up waits on a database that never answers: it exits within the deadline', async () => {
    // A port that accepts and never says a word: pg's start-up message goes unanswered.
    const held = new Set<net.Socket>();
    let reached!: () => void;
    const waiting = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const silent = net.createServer((socket) => {
      held.add(socket);
      socket.on('error', () => {});
      reached();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const child = spawn(process.execPath, [CLI, 'mcp-stdio'], {
      env: cleanEnv({
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/taskgate`,
        // The deadline: the grace period plus 2 s.
        TASKGATE_SHUTDOWN_GRACE_MS: '1000',
      }),
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      // Start-up is now waiting on the database: the stop comes in that phase.
      await waiting;
      const sentAt = performance.now();
      child.kill('SIGTERM');
      const outcome = await Promise.race([
        exited.then((code) => ({ code, ms: performance.now() - sentAt })),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 10_000).unref()),
      ]);
      expect(outcome, `still running 10 s after SIGTERM; stderr:\n${stderr}`).not.toBeNull();
      expect(outcome?.ms).toBeLessThan(3_000 + 1_000);
      expect(outcome?.code).toBe(70);
      expect(stderr).toContain('TG_SHUTDOWN_TIMEOUT');
    } finally {
      child.kill('SIGKILL');
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
