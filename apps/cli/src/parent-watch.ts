/** How often the parent's pid is read: the cost is one getppid(2) per tick. */
export const PARENT_POLL_MS = 250;

/**
 * The environment variable through which bin/taskgate.js tells the Node it started who started it.
 * Not TASKGATE_*: the configuration warns about every unknown variable of that prefix.
 */
export const LAUNCHER_PID_VARIABLE = 'TG_LAUNCHER_PID';

/**
 * Whether this process should stop when its parent goes away. Only when the parent is a launcher
 * that waits for it and whose death means "stop":
 * - npm (`npm_lifecycle_event` is set for every npm script and for `npx`). `npx taskgate` runs
 *   `sh -c "'taskgate' …"` (npm 11's libnpmexec; a script without `exec` does the same), and
 *   Debian's dash does not exec the last command of `sh -c`: the shell stays in between. npm
 *   forwards SIGTERM and SIGINT to that shell only, the shell dies of it, and Taskgate — never
 *   signalled — would run on under PID 1.
 * - bin/taskgate.js re-running the CLI on the project's Node: it forwards signals, but a SIGKILL
 *   of the launcher cannot be forwarded.
 * A process started from an interactive shell (`taskgate start &`, nohup) is not watched: there
 * the parent's exit is no request to stop.
 */
export function shouldStopWithParent(env: Readonly<Record<string, string | undefined>>, ppid: number): boolean {
  return env.npm_lifecycle_event !== undefined || env[LAUNCHER_PID_VARIABLE] === String(ppid);
}

/**
 * Calls `onExit` once when the parent pid changes, which on POSIX systems means the parent died
 * and the process was handed to init or a subreaper. Polled: Node has no parent-death signal
 * (prctl PR_SET_PDEATHSIG) and no pidfd. The timer does not keep the process alive.
 */
export function watchParent(
  onExit: (formerParent: number) => void,
  options: { readonly ppid?: () => number; readonly intervalMs?: number } = {},
): () => void {
  const ppid = options.ppid ?? (() => process.ppid);
  const parent = ppid();
  const timer = setInterval(() => {
    if (ppid() === parent) return;
    clearInterval(timer);
    onExit(parent);
  }, options.intervalMs ?? PARENT_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
