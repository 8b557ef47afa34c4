/**
 * What stops the process gracefully. SIGHUP (a terminal or SSH session closing) and SIGQUIT are
 * stops too: left to their default action they would end the process at once, with no shutdown,
 * and leave its tool handlers' subprocess trees (which are sessions of their own, so a hangup does
 * not reach them) running.
 */
export type StopSignal = 'SIGTERM' | 'SIGINT' | 'SIGHUP' | 'SIGQUIT';

/**
 * A repeat of the first stop signal this soon after it is the same request arriving twice, not
 * an operator asking to exit now. One Ctrl-C reaches a process run by `npm start` twice: the
 * terminal sends SIGINT to the whole foreground process group, and npm forwards the SIGINT it got
 * to its child as well. systemd's control-group stop (SIGTERM to every process of the unit, npm
 * forwarding its own) and Taskgate's bin launcher (which forwards what it gets to its child, also
 * in the terminal's group) do the same. The copies arrive within milliseconds; a second Ctrl-C by
 * hand takes longer than this.
 */
export const DUPLICATE_SIGNAL_WINDOW_MS = 1_000;

export interface FirstSignal {
  readonly signal: StopSignal;
  readonly atMs: number;
}

/**
 * What a stop signal means, given the first one (if any) received so far:
 * - `stop`: the first one: stop gracefully;
 * - `duplicate`: the same signal again within the window: part of the stop already under way;
 * - `exit-now`: another signal, or the same one after the window: stop waiting and exit.
 */
export function signalMeaning(
  first: FirstSignal | null,
  signal: StopSignal,
  nowMs: number,
): 'stop' | 'duplicate' | 'exit-now' {
  if (first === null) return 'stop';
  if (signal === first.signal && nowMs - first.atMs < DUPLICATE_SIGNAL_WINDOW_MS) return 'duplicate';
  return 'exit-now';
}
