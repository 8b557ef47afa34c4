import { execFile, execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { TaskCancelledError } from '@taskgate/sdk';
import { describe, expect, it } from 'vitest';
import { liveSubprocessGroups, runSubprocess, treeAlive } from './subprocess.ts';

// Real processes, checked in /proc: a process tree started through ctx.spawn() must be gone —
// every process of it, grandchildren included — once a stop has been answered, and nothing a
// command leaves behind may outlive its call. Each test's `sleep` takes a unique number of seconds,
// which is how /proc tells its processes from everything else on the machine.
const logged: string[] = [];
const scope = (signal: AbortSignal, graceMs = 2_000) => ({
  signal,
  graceMs,
  log: (_fields: Record<string, unknown>, message: string) => logged.push(message),
});

function marker(): string {
  return `${randomInt(100_000, 999_999)}.${randomInt(1_000, 9_999)}`;
}

/** Live (not zombie) processes whose command line is `sleep <seconds>`. */
function sleeping(seconds: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\u0000');
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
      if (argv[0]?.endsWith('sleep') && argv[1] === seconds && state !== 'Z') found.push(Number(entry));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}

/** Resolves once `count` processes sleep `seconds` (they started): polled, with a bound. */
async function untilSleeping(seconds: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (sleeping(seconds).length < count) {
    if (Date.now() > deadline) throw new Error(`${count} sleep ${seconds} never started`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('ctx.spawn', () => {
  it('runs a command with its input, and answers its exit code and output', async () => {
    const heard: string[] = [];
    const result = await runSubprocess(
      'sh',
      ['-c', 'read line; echo "got $line"; echo oops >&2; exit 3'],
      { input: 'hello\n', onStdout: (text) => heard.push(text) },
      scope(new AbortController().signal),
    );
    expect(result).toEqual({ exitCode: 3, signal: null, stdout: 'got hello\n', stderr: 'oops\n', truncated: false });
    expect(heard.join('')).toBe('got hello\n');
  });

  it('on a stop, ends the whole tree: the shell and both of its children', async () => {
    const seconds = marker();
    const stop = new AbortController();
    const running = runSubprocess('sh', ['-c', `sleep ${seconds} & sleep ${seconds} & wait`], {}, scope(stop.signal));
    await untilSleeping(seconds, 2);
    const reason = new TaskCancelledError('the client went away');
    const started = Date.now();
    stop.abort(reason);
    await expect(running).rejects.toBe(reason);
    // sleep dies of SIGTERM: well before the 2 s grace.
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(sleeping(seconds)).toEqual([]);
  });

  it('SIGKILLs what ignores SIGTERM once the grace period has passed, and not before', async () => {
    const seconds = marker();
    const stop = new AbortController();
    // An ignored signal stays ignored across exec: the sleeps ignore SIGTERM too.
    const running = runSubprocess(
      'sh',
      ['-c', `trap "" TERM; sleep ${seconds} & sleep ${seconds} & wait`],
      {},
      scope(stop.signal, 400),
    );
    await untilSleeping(seconds, 2);
    const started = Date.now();
    stop.abort(new TaskCancelledError(null));
    await expect(running).rejects.toBeInstanceOf(TaskCancelledError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(sleeping(seconds)).toEqual([]);
    expect(logged).toContain('a subprocess tree outlived its grace period: SIGKILL');
  });

  it('with a grace of 0, SIGKILLs at once', async () => {
    const seconds = marker();
    const stop = new AbortController();
    const running = runSubprocess('sh', ['-c', `trap "" TERM; sleep ${seconds}`], { graceMs: 0 }, scope(stop.signal));
    await untilSleeping(seconds, 1);
    const started = Date.now();
    stop.abort(new TaskCancelledError(null));
    await expect(running).rejects.toBeInstanceOf(TaskCancelledError);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(sleeping(seconds)).toEqual([]);
  });

  it('kills what a command that exits by itself left running in its group', async () => {
    const seconds = marker();
    const result = await runSubprocess(
      'sh',
      ['-c', `sleep ${seconds} & echo started`],
      {},
      scope(new AbortController().signal),
    );
    expect(result).toMatchObject({ exitCode: 0, stdout: 'started\n' });
    expect(sleeping(seconds)).toEqual([]);
  });

  it('does not start when the task has already stopped', async () => {
    const stop = new AbortController();
    const reason = new TaskCancelledError('before');
    stop.abort(reason);
    await expect(runSubprocess('sleep', ['1000'], {}, scope(stop.signal))).rejects.toBe(reason);
  });

  it('keeps at most maxOutputBytes of output, and still tells the handler every byte', async () => {
    let heard = 0;
    const result = await runSubprocess(
      'sh',
      ['-c', 'yes abc | head -c 300000'],
      { maxOutputBytes: 1000, onStdout: (text) => (heard += text.length) },
      scope(new AbortController().signal),
    );
    expect(result.stdout).toHaveLength(1000);
    expect(result.truncated).toBe(true);
    expect(heard).toBe(300_000);
  });

  it('rejects a command that cannot start, naming it', async () => {
    await expect(runSubprocess('/no/such/command', [], {}, scope(new AbortController().signal))).rejects.toThrow(
      'ctx.spawn /no/such/command: spawn /no/such/command ENOENT',
    );
  });

  it('refuses what is not a command, an argument list or its options, coercing nothing', async () => {
    const signal = new AbortController().signal;
    const cases: [unknown, unknown, unknown, string][] = [
      ['', [], {}, 'command must be a non-empty string'],
      [5, [], {}, 'command must be a non-empty string'],
      ['echo\u0000x', [], {}, 'command must not contain a NUL character'],
      ['echo', [1], {}, 'args must be an array of strings'],
      ['echo', 'a b', {}, 'args must be an array of strings'],
      ['echo', ['a\u0000b'], {}, 'args must not contain a NUL character'],
      ['echo', [], [], 'options must be an object'],
      ['echo', [], { env: { A: 1 } }, 'options.env.A must be a string'],
      ['echo', [], { env: { 'A=B': 'x' } }, 'options.env has a name or value Node cannot pass'],
      ['echo', [], { graceMs: -1 }, 'options.graceMs must be an integer of milliseconds from 0 to 60000'],
      ['echo', [], { graceMs: true }, 'options.graceMs must be an integer'],
      ['echo', [], { maxOutputBytes: 1.5 }, 'options.maxOutputBytes must be a non-negative integer'],
      ['echo', [], { input: Buffer.from('x') }, 'options.input must be a string'],
      ['echo', [], { onStdout: 'log' }, 'options.onStdout must be a function'],
    ];
    for (const [command, args, options, message] of cases) {
      await expect(
        runSubprocess(command as never, args as never, options as never, scope(signal)),
        message,
      ).rejects.toThrow(new RegExp(`^ctx.spawn: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    }
  });

  it('SIGKILLs a group still in its grace period when the process exits (a shutdown deadline)', async () => {
    const seconds = marker();
    // A process that starts a TERM-proof tree with a minute's grace, stops it, and exits while the
    // grace runs: its kill timer dies with it, so only the exit can end the tree.
    const script = `
      import { runSubprocess } from ${JSON.stringify(new URL('./subprocess.ts', import.meta.url).pathname)};
      const stop = new AbortController();
      const running = runSubprocess('sh', ['-c', 'trap "" TERM; sleep ${seconds} & sleep ${seconds} & wait'], {},
        { signal: stop.signal, graceMs: 60000, log: () => {} });
      running.catch(() => {});
      const started = () => new Promise((resolve) => setTimeout(resolve, 20));
      const { readdirSync, readFileSync } = await import('node:fs');
      const count = () => readdirSync('/proc').filter((e) => {
        try { return readFileSync('/proc/' + e + '/cmdline', 'utf8').includes('${seconds}'); } catch { return false; }
      }).length;
      while (count() < 3) await started();
      stop.abort(new Error('stop'));
      await started();
      process.exit(0);`;
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 });
    expect(sleeping(seconds)).toEqual([]);
  });

  it('holds no group once every call has settled', () => {
    expect(liveSubprocessGroups()).toBe(0);
  });

  it('reaches a child that moved to a process group of its own (it is still of the session)', async () => {
    for (const stopped of [false, true]) {
      const seconds = marker();
      const stop = new AbortController();
      const script = `perl -e 'setpgrp(0, 0); exec "sleep", @ARGV' ${seconds} & sleep ${seconds} & wait`;
      const running = runSubprocess(
        'sh',
        ['-c', stopped ? script : script.replace('& wait', '& echo left')],
        {},
        scope(stop.signal),
      );
      if (stopped) {
        await untilSleeping(seconds, 2);
        stop.abort(new TaskCancelledError(null));
        await expect(running).rejects.toBeInstanceOf(TaskCancelledError);
      } else {
        await running;
      }
      expect(sleeping(seconds), stopped ? 'after a stop' : 'after a clean exit').toEqual([]);
    }
  });

  it.skipIf(!existsSync('/usr/bin/cc'))(
    'counts a process whose main thread exited while another thread runs (it shows as a zombie)',
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'tg-zleader-'));
      const binary = path.join(dir, 'zleader');
      // Ignores SIGTERM; its main thread calls pthread_exit, a second thread sleeps on.
      writeFileSync(
        path.join(dir, 'zleader.c'),
        `#include <pthread.h>
#include <signal.h>
#include <unistd.h>
static void *spin(void *arg) { (void)arg; for (;;) sleep(1); return 0; }
int main(void) { signal(SIGTERM, SIG_IGN); pthread_t t; pthread_create(&t, 0, spin, 0); pthread_exit(0); }
`,
      );
      execFileSync('cc', ['-pthread', '-o', binary, path.join(dir, 'zleader.c')]);
      const threads = () =>
        readdirSync('/proc').filter((entry) => {
          try {
            return readFileSync(`/proc/${entry}/cmdline`, 'utf8') === '' &&
              readFileSync(`/proc/${entry}/comm`, 'utf8') === 'zleader\n'
              ? readdirSync(`/proc/${entry}/task`).length > 1
              : false;
          } catch {
            return false;
          }
        }).length;
      const stop = new AbortController();
      const started = Date.now();
      const running = runSubprocess('sh', ['-c', `${binary} & wait`], {}, scope(stop.signal, 300));
      while (threads() === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      stop.abort(new TaskCancelledError(null));
      await expect(running).rejects.toBeInstanceOf(TaskCancelledError);
      // It ignores SIGTERM: only the SIGKILL at the end of the grace ends it.
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(threads()).toBe(0);
    },
  );

  it('fails the call, not the process, when an output listener throws; the tree is stopped', async () => {
    const seconds = marker();
    const failure = new Error('the listener broke');
    const running = runSubprocess(
      'sh',
      ['-c', `echo hello; sleep ${seconds} & sleep ${seconds} & wait`],
      {
        onStdout: () => {
          throw failure;
        },
      },
      scope(new AbortController().signal),
    );
    await expect(running).rejects.toBe(failure);
    expect(sleeping(seconds)).toEqual([]);
  });

  it('names a working directory that does not exist, not the command', async () => {
    await expect(
      runSubprocess('echo', ['x'], { cwd: '/no/such/dir' }, scope(new AbortController().signal)),
    ).rejects.toThrow('ctx.spawn echo: the working directory "/no/such/dir" does not exist');
  });

  it('never looks at group 0 or 1: -0 is this process’s own group, -1 every process', () => {
    expect(treeAlive(0)).toBe(false);
    expect(treeAlive(1)).toBe(false);
  });
});
