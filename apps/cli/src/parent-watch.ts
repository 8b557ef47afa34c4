import { readFileSync } from 'node:fs';

/** How often the parent's pid is read: the cost is one getppid(2) per tick. */
export const PARENT_POLL_MS = 250;

/**
 * The environment variable through which bin/taskgate.js tells the Node it started who started it.
 * Not TASKGATE_*: the configuration warns about every unknown variable of that prefix.
 */
export const LAUNCHER_PID_VARIABLE = 'TG_LAUNCHER_PID';

let parentAtStart = process.ppid;

/**
 * bin/taskgate.js reads the parent pid as its very first statement and hands it over here: a
 * launcher that dies while Taskgate is still loading has already handed it to init by the time the
 * signal handlers are installed, and a comparison with the parent of then would miss that.
 */
export function noteParentAtStart(pid: number): void {
  parentAtStart = pid;
}

/** The parent this process started under, as far as it can tell. */
export function startingParent(): number {
  return parentAtStart;
}

/**
 * Whether this process should stop when its parent goes away. Only when the parent is a launcher
 * that waits for it and whose death means "stop":
 * - npm (`npm_lifecycle_event` is set for every npm script and for `npx`). `npx taskgate` runs
 *   `sh -c "'taskgate' …"` (npm 11's libnpmexec; a script without `exec` does the same), and
 *   Debian's dash does not exec the last command of `sh -c`: the shell stays in between. npm
 *   forwards SIGTERM and SIGINT to that shell only, the shell dies of it, and Taskgate — never
 *   signalled — would run on under PID 1.
 * - bin/taskgate.js re-running the CLI on the project's Node: it forwards signals, but a SIGKILL
 *   of the launcher cannot be forwarded. (Its pid differs from the parent's when the launcher
 *   died before this process looked, or when a process further down inherited the variable.)
 * A process started from an interactive shell (`taskgate start &`, nohup) is not watched: there
 * the parent's exit is no request to stop.
 */
export function shouldStopWithParent(env: Readonly<Record<string, string | undefined>>, parent: number): boolean {
  const launcher = env[LAUNCHER_PID_VARIABLE];
  return (
    env.npm_lifecycle_event !== undefined || launcher === String(parent) || (launcher !== undefined && parent === 1)
  );
}

/**
 * Whether a process whose parent was `parent` when it started had already been handed to init
 * then: its launcher died even before that first look (the kill came while Node itself started).
 * A launcher that is PID 1 itself (npm as a container's entrypoint) leads the process group its
 * children share (1), or that group lies outside the container's pid namespace and reads as 0;
 * an orphan keeps the group of the launcher that is gone. Handed to a subreaper other than PID 1,
 * such an orphan is not recognised.
 */
export function orphanedAtStart(parent: number, processGroup: () => number | null = ownProcessGroup): boolean {
  if (parent !== 1) return false;
  const group = processGroup();
  return group !== null && group !== 0 && group !== 1;
}

/**
 * Calls `onExit` once when the parent pid is no longer the one this process started under, which
 * on POSIX systems means the parent died and the process was handed to init or a subreaper (or at
 * once, if that had happened before it started: see orphanedAtStart). Polled: Node has no
 * parent-death signal (prctl PR_SET_PDEATHSIG) and no pidfd. The timer does not keep the process
 * alive.
 */
export function watchParent(
  onExit: (formerParent: number) => void,
  options: {
    readonly parent?: number;
    readonly ppid?: () => number;
    readonly processGroup?: () => number | null;
    readonly intervalMs?: number;
  } = {},
): () => void {
  const ppid = options.ppid ?? (() => process.ppid);
  const parent = options.parent ?? parentAtStart;
  const gone = orphanedAtStart(parent, options.processGroup);
  const timer = setInterval(() => {
    if (!gone && ppid() === parent) return;
    clearInterval(timer);
    onExit(parent);
  }, options.intervalMs ?? PARENT_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** This process's group id from /proc (Linux); null where that is not available. */
function ownProcessGroup(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses.
    const group = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    return Number.isInteger(group) ? group : null;
  } catch {
    return null;
  }
}
