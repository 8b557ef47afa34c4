/**
 * The task state machine of the MCP Tasks extension.
 *
 * A task moves between `working` and `input_required` as often as it needs to, and ends exactly
 * once. Terminal statuses are final because clients cache results by task id: a task that could
 * leave `completed` would make every cached answer a possible lie.
 */
export const TASK_STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'] as const;

export type TaskStatus = (typeof TASK_STATUSES)[number];

export const TERMINAL_STATUSES = ['completed', 'failed', 'cancelled'] as const satisfies readonly TaskStatus[];

export type TerminalTaskStatus = (typeof TERMINAL_STATUSES)[number];

export type TransitionCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

const statusSet: ReadonlySet<string> = new Set(TASK_STATUSES);
const terminalSet: ReadonlySet<string> = new Set(TERMINAL_STATUSES);

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === 'string' && statusSet.has(value);
}

export function isTerminalStatus(status: string): status is TerminalTaskStatus {
  return terminalSet.has(status);
}

/**
 * Takes plain strings rather than `TaskStatus` because statuses arrive from the database and from
 * clients; an unknown value is one more illegal transition, not a crash.
 */
export function checkTransition(from: string, to: string): TransitionCheck {
  if (!isTaskStatus(from)) return { ok: false, reason: `unknown task status ${JSON.stringify(from)}` };
  if (!isTaskStatus(to)) return { ok: false, reason: `unknown target task status ${JSON.stringify(to)}` };
  if (isTerminalStatus(from)) {
    return { ok: false, reason: `task is already ${from}; a terminal task never changes` };
  }
  if (from === to) {
    return { ok: false, reason: `task is already ${from}; a status does not transition to itself` };
  }
  // Every remaining pair starts at working or input_required and goes somewhere else: all legal.
  return { ok: true };
}
