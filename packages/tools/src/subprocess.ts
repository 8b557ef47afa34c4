import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { isGraceMs, MAX_SUBPROCESS_GRACE_MS, type SpawnOptions, type SpawnResult } from '@taskgate/sdk';

/** The most of stdout, and of stderr, a result keeps unless the call says otherwise. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
/**
 * How soon a stopping tree is first looked at, for whether any of it is left; each look doubles
 * the wait. A tree that dies of SIGTERM is out of /proc 3 ms after the signal at the median and
 * 9-11 ms at p99 (bench/subprocess-cancel.ts); a first look at 20 ms made such a stop wait 20 or
 * 60 ms. A look costs about a millisecond per hundred processes (see readStat).
 */
const GROUP_POLL_MS = 2;
const GROUP_POLL_MAX_MS = 250;
/**
 * How long, after the command exited and its tree was killed, its output pipes may stay open: a
 * process that left the session (setsid) and kept them would otherwise hold the call forever.
 */
const PIPE_CLOSE_WAIT_MS = 1_000;

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * The trees calls started that are not yet seen gone, by the leader's pid (its session's id). If
 * this process exits first — a worker whose shutdown deadline passed while a tree was in its grace
 * period, or one told to exit at once — its kill timers die with it, so the exit SIGKILLs what is
 * left. (A SIGKILLed worker runs nothing: under an init, its orphans are at least reaped.)
 */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function track(sid: number, registry: Set<number> | undefined): void {
  liveGroups.add(sid);
  registry?.add(sid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => killSubprocessTrees(liveGroups));
}

function forget(sid: number, registry: Set<number> | undefined): void {
  liveGroups.delete(sid);
  registry?.delete(sid);
}

/** What binds a subprocess to its task's run. */
export interface SubprocessScope {
  /** The run's signal: its abort stops the group. */
  readonly signal: AbortSignal;
  /** The tool's grace period (its subprocessGraceMs, or the default). */
  readonly graceMs: number;
  readonly log: LogFn;
  /** The run's own trees while they live, for its worker to SIGKILL when it stops waiting (ToolRun). */
  readonly registry?: Set<number>;
  /** +1 when a tree is still alive when its grace period ends (it is SIGKILLed then), -1 once it is gone. */
  readonly onOrphan?: (delta: 1 | -1) => void;
}

/**
 * ctx.spawn(): `command` with `args` (no shell) as the leader of a session and process group of
 * its own, so a signal reaches everything it starts that stays in the session, whatever group it
 * moved to. On the scope's abort the tree gets SIGTERM, and SIGKILL once the grace period passes
 * or at once if the grace is 0; the call rejects with the abort's reason once nothing of the tree
 * is left (or it was SIGKILLed). When the leader exits by itself, whatever it left running is
 * SIGKILLed: nothing outlives the call. Only a process that starts a session of its own escapes.
 */
export async function runSubprocess(
  command: string,
  args: readonly string[] | undefined,
  options: SpawnOptions | undefined,
  scope: SubprocessScope,
): Promise<SpawnResult> {
  // Typed for the handler, checked for what JavaScript can still pass.
  const checked = checkedCall(command, args, options ?? {}, scope.graceMs);
  if (scope.signal.aborted) throw scope.signal.reason;
  const child = spawn(checked.command, checked.args, {
    ...(checked.options.cwd === undefined ? {} : { cwd: checked.options.cwd }),
    ...(checked.options.env === undefined ? {} : { env: { ...checked.options.env } }),
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  await started(child, checked);
  const sid = child.pid as number;
  track(sid, scope.registry);
  try {
    return await supervise(child, sid, checked, scope);
  } finally {
    forget(sid, scope.registry);
  }
}

interface CheckedCall {
  readonly command: string;
  readonly args: string[];
  readonly options: SpawnOptions;
  readonly graceMs: number;
  readonly maxOutputBytes: number;
}

/** The call as given, or a TypeError naming what is wrong: nothing is coerced. */
function checkedCall(command: unknown, args: unknown, options: unknown, toolGraceMs: number): CheckedCall {
  const fail = (what: string) => {
    throw new TypeError(`ctx.spawn: ${what}`);
  };
  if (typeof command !== 'string' || command === '') fail('command must be a non-empty string');
  if ((command as string).includes('\u0000')) fail('command must not contain a NUL character');
  const list = args ?? [];
  if (!Array.isArray(list) || list.some((arg) => typeof arg !== 'string')) fail('args must be an array of strings');
  if ((list as string[]).some((arg) => arg.includes('\u0000'))) fail('args must not contain a NUL character');
  if (typeof options !== 'object' || options === null || Array.isArray(options)) fail('options must be an object');
  const given = options as SpawnOptions;
  if (given.cwd !== undefined && typeof given.cwd !== 'string') fail('options.cwd must be a string');
  if (given.env !== undefined) {
    const env = given.env as unknown;
    if (typeof env !== 'object' || env === null || Array.isArray(env)) fail('options.env must be an object of strings');
    for (const [name, value] of Object.entries(env as object)) {
      if (typeof value !== 'string') fail(`options.env.${name} must be a string`);
      if (name.includes('\u0000') || (value as string).includes('\u0000') || name.includes('=') || name === '') {
        fail(`options.env has a name or value Node cannot pass: ${JSON.stringify(name)}`);
      }
    }
  }
  if (given.input !== undefined && typeof given.input !== 'string') fail('options.input must be a string');
  for (const key of ['onStdout', 'onStderr'] as const) {
    if (given[key] !== undefined && typeof given[key] !== 'function') fail(`options.${key} must be a function`);
  }
  if (given.graceMs !== undefined && !isGraceMs(given.graceMs)) {
    fail(`options.graceMs must be an integer of milliseconds from 0 to ${MAX_SUBPROCESS_GRACE_MS}`);
  }
  const maxOutputBytes = given.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isSafeInteger(maxOutputBytes) || maxOutputBytes < 0) {
    fail('options.maxOutputBytes must be a non-negative integer');
  }
  return {
    command: command as string,
    args: [...(list as string[])],
    options: given,
    graceMs: given.graceMs ?? toolGraceMs,
    maxOutputBytes,
  };
}

/** Resolves once the child runs; rejects (ENOENT, EACCES) when it could not start. */
function started(child: ChildProcess, call: CheckedCall): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      child.off('spawn', onSpawn);
      // Node says ENOENT for a missing working directory too, naming the command.
      const cwd = call.options.cwd;
      const what =
        error.code === 'ENOENT' && cwd !== undefined && !existsSync(cwd)
          ? `the working directory ${JSON.stringify(cwd)} does not exist`
          : error.message;
      reject(new Error(`ctx.spawn ${call.command}: ${what}`, { cause: error }));
    };
    const onSpawn = () => {
      child.off('error', onError);
      resolve();
    };
    child.once('error', onError);
    child.once('spawn', onSpawn);
  });
}

/** The output of one stream: kept up to a bound, every piece told to the handler as it comes. */
class Output {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  truncated = false;
  readonly #limit: number;
  readonly #live = new StringDecoder('utf8');
  #listener: ((text: string) => void) | undefined;
  readonly #onListenerError: (error: unknown) => void;

  constructor(
    limit: number,
    listener: ((text: string) => void) | undefined,
    onListenerError: (error: unknown) => void,
  ) {
    this.#limit = limit;
    this.#listener = listener;
    this.#onListenerError = onListenerError;
  }

  add(chunk: Buffer): void {
    const room = this.#limit - this.#kept;
    if (chunk.length > room) this.truncated = true;
    if (room > 0) {
      const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
      this.#chunks.push(kept);
      this.#kept += kept.length;
    }
    if (this.#listener) {
      const text = this.#live.write(chunk);
      try {
        if (text !== '') this.#listener(text);
      } catch (error) {
        // Told once; the rest of the output is only kept.
        this.#listener = undefined;
        this.#onListenerError(error);
      }
    }
  }

  /** What was kept, as UTF-8; a character cut by the bound is left out rather than mangled. */
  text(): string {
    return new StringDecoder('utf8').write(Buffer.concat(this.#chunks));
  }
}

function supervise(child: ChildProcess, sid: number, call: CheckedCall, scope: SubprocessScope): Promise<SpawnResult> {
  let listenerFailure: { error: unknown } | null = null;
  // A listener that throws must not take the worker down (it runs in a stream's 'data' event):
  // the call fails with its error, and the tree is stopped as for any stop.
  const onListenerError = (error: unknown) => {
    if (listenerFailure !== null) return;
    listenerFailure = { error };
    onStop();
  };
  const stdout = new Output(call.maxOutputBytes, call.options.onStdout, onListenerError);
  const stderr = new Output(call.maxOutputBytes, call.options.onStderr, onListenerError);
  child.stdout?.on('data', (chunk: Buffer) => stdout.add(chunk));
  child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
  // A child that exits without reading its input: the write's EPIPE is no failure of the call.
  child.stdin?.on('error', () => {});
  child.stdin?.end(call.options.input ?? '');

  const where = { command: call.command, pid: sid };
  let stopping = false;
  let killTimer: NodeJS.Timeout | undefined;
  let killed = false;
  let orphaned = false;
  const kill = (signal: NodeJS.Signals) => {
    if (signal === 'SIGKILL') killed = true;
    signalTree(sid, signal);
  };
  function onStop() {
    if (stopping) return;
    stopping = true;
    if (call.graceMs === 0) {
      kill('SIGKILL');
      return;
    }
    scope.log({ ...where, graceMs: call.graceMs }, 'stopping a subprocess tree: SIGTERM');
    kill('SIGTERM');
    killTimer = setTimeout(() => {
      if (treeAlive(sid)) {
        scope.log(where, 'a subprocess tree outlived its grace period: SIGKILL');
        orphaned = true;
        scope.onOrphan?.(1);
      }
      kill('SIGKILL');
    }, call.graceMs);
  }
  scope.signal.addEventListener('abort', onStop, { once: true });
  // Aborted while the child was starting (between spawn() and its 'spawn' event): a listener
  // added to an aborted signal never runs.
  if (scope.signal.aborted) onStop();
  // Once the tree is gone nothing may signal its ids again (a new group may have taken them).
  const release = () => {
    clearTimeout(killTimer);
    if (orphaned) scope.onOrphan?.(-1);
    scope.signal.removeEventListener('abort', onStop);
    forget(sid, scope.registry);
  };

  return new Promise<SpawnResult>((resolve, reject) => {
    child.once('exit', (exitCode, signal) => {
      void (async () => {
        try {
          if (!stopping) {
            // Exited by itself: what it left running in its session goes with it.
            if (treeAlive(sid)) kill('SIGKILL');
          } else {
            // Stopped: the rest of the tree has until the grace timer (which SIGKILLs it). Polled
            // with backoff: each look reads /proc, and a tree may take its whole grace.
            for (let wait = GROUP_POLL_MS; !killed && treeAlive(sid); wait = Math.min(wait * 2, GROUP_POLL_MAX_MS)) {
              await pause(wait);
            }
          }
          // A SIGKILL is delivered, not awaited, and a process changing its group at that moment
          // can miss it: the call settles once the tree is gone, so nothing of it is still in
          // /proc when the handler goes on. (CI caught both: a sleep left after a clean exit.)
          if (killed) await untilGone(sid);
        } finally {
          release();
        }
        await pipesClosed(child);
        if (listenerFailure !== null) {
          reject((listenerFailure as { error: unknown }).error);
          return;
        }
        if (stopping) {
          reject(scope.signal.reason);
          return;
        }
        resolve({
          exitCode,
          signal,
          stdout: stdout.text(),
          stderr: stderr.text(),
          truncated: stdout.truncated || stderr.truncated,
        });
      })();
    });
  });
}

/**
 * Sends `signal` to every process of the tree: the leader's session, each process group in it (a
 * child that moved to a group of its own, a shell's job control, is still of the session). A tree
 * already gone is no failure.
 */
function signalTree(sid: number, signal: NodeJS.Signals): void {
  // Never 0 or 1: -0 is this process's own group, -1 every process it may signal.
  if (!Number.isInteger(sid) || sid <= 1) return;
  // The leader's own group first, before the scan: it is usually the whole tree, and a scan of
  // /proc takes about a millisecond per hundred processes.
  signalGroup(sid, signal);
  if (!HAS_PROC) return;
  for (const group of scanSession(sid).groups) {
    if (group > 1 && group !== sid) signalGroup(group, signal);
  }
}

function signalGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** How many trees calls in this process have started that are not yet seen gone. */
export function liveSubprocessGroups(): number {
  return liveGroups.size;
}

/** SIGKILLs every tree in `registry` (a run's: its worker is done waiting for it). */
export function killSubprocessTrees(registry: ReadonlySet<number>): void {
  for (const sid of registry) {
    try {
      signalTree(sid, 'SIGKILL');
    } catch {
      // Not ours to signal any more: nothing to do.
    }
  }
}

/**
 * Whether any process of the tree still runs. On Linux from /proc, by session, leaving out
 * zombies: where nothing reaps orphans (a container's PID 1 that is not an init), a killed
 * grandchild stays a zombie forever, and counting it would make every stop wait out its grace.
 * A process whose main thread exited shows as a zombie while its other threads run: it counts.
 * Elsewhere, kill(0) on the leader's group (which counts zombies).
 */
export function treeAlive(sid: number): boolean {
  if (!Number.isInteger(sid) || sid <= 1) return false;
  if (HAS_PROC) return scanSession(sid).live > 0;
  try {
    process.kill(-sid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const HAS_PROC = process.platform === 'linux' && existsSync('/proc/self/stat');

/** The session's live processes and its process groups, from /proc/<pid>/stat ("pid (comm) state ppid pgrp session …"). */
function scanSession(sid: number): { live: number; groups: Set<number> } {
  let live = 0;
  const groups = new Set<number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    if (stat === null) continue; // Gone between the listing and the read.
    // comm may hold spaces and parentheses: the fields start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[3]) !== sid) continue;
    const state = fields[0];
    if ((state === 'Z' || state === 'X') && !threadsLeft(entry)) continue;
    live += 1;
    groups.add(Number(fields[2]));
  }
  return { live, groups };
}

// One buffer for every read: /proc/<pid>/stat is one line of a few hundred bytes (comm is at
// most 16). open/read/close into it takes half the time readFileSync does (which also stats the
// file and allocates per read): measured 1.0 against 1.8-2.4 ms per scan of 85 processes.
const statBuffer = Buffer.allocUnsafe(4096);

function readStat(pid: string): string | null {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/stat`, 'r');
  } catch {
    return null;
  }
  try {
    const length = readSync(fd, statBuffer, 0, statBuffer.length, 0);
    return statBuffer.toString('latin1', 0, length);
  } catch {
    return null; // The process exited between the open and the read (ESRCH).
  } finally {
    closeSync(fd);
  }
}

/** A zombie's threads other than its exited main thread (a process that called pthread_exit in main). */
function threadsLeft(pid: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).length > 1;
  } catch {
    return false;
  }
}

/** Resolves once stdout and stderr have closed, or after PIPE_CLOSE_WAIT_MS (their ends destroyed). */
function pipesClosed(child: ChildProcess): Promise<void> {
  const streams = [child.stdout, child.stderr].filter((stream) => stream !== null && !stream.closed);
  if (streams.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    let open = streams.length;
    const timer = setTimeout(() => {
      for (const stream of streams) stream?.destroy();
      resolve();
    }, PIPE_CLOSE_WAIT_MS);
    for (const stream of streams) {
      stream?.once('close', () => {
        open -= 1;
        if (open === 0) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
  });
}

/** How long a SIGKILLed tree may take to leave /proc before the call settles anyway. */
const KILLED_GONE_WAIT_MS = 1_000;

/**
 * Waits for a SIGKILLed tree to leave /proc, signalling it again at each look: a process that
 * moved to a group of its own between the scan and the signal (a child calling setpgid just then)
 * missed the first one, and the next scan finds its new group.
 */
async function untilGone(sid: number): Promise<void> {
  const deadline = Date.now() + KILLED_GONE_WAIT_MS;
  while (treeAlive(sid) && Date.now() < deadline) {
    signalTree(sid, 'SIGKILL');
    await pause(5);
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
