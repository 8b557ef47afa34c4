export interface InvariantResult {
  readonly name: string;
  readonly pass: boolean;
  /** One line: the count behind the verdict. */
  readonly summary: string;
  /** The rows, ids and log lines that show a failure (capped). */
  readonly evidence: readonly string[];
}

export const EVIDENCE_CAP = 12;

/** Every invariant a run checks, by name (the CI test asserts each of them). */
export const INVARIANTS = {
  allTerminal: 'every task terminal',
  requestModeTerminal: 'no request-mode task left non-terminal',
  noTaskLost: 'no accepted task lost',
  clientsAgree: 'clients were told what the database says',
  noOutageFailures: 'no task failed because the database was unavailable',
  returnedNotTimedOut: 'no task whose handler returned was failed by a clock',
  keyedAnswered: 'every keyed call got a definitive answer',
  keyedSuccessOnce: 'every keyed success exists exactly once',
  keyEffectOnce: "each idempotency key's effect at most once, and with its key",
  stockConserved: 'stock conserved (initial = available + reserved)',
  effectsAnnounced: 'every charge and reservation announced exactly once in the outbox',
  outboxSettled: 'every outbox row delivered or dead-lettered, and the receiver saw each delivery',
  noCrash: 'no process crashed except those the harness killed',
  no5xx: 'no 5xx but 503',
  replaysAgree: 'a replayed key answers its first result',
} as const;

export function verdict(name: string, failures: readonly string[], summary: string): InvariantResult {
  return {
    name,
    pass: failures.length === 0,
    summary,
    evidence:
      failures.length > EVIDENCE_CAP
        ? [...failures.slice(0, EVIDENCE_CAP), `… and ${failures.length - EVIDENCE_CAP} more`]
        : failures,
  };
}

export const TERMINAL_SQL = "('completed', 'failed', 'cancelled')";
