import type { CommitContext, InputRequest, ToolResult } from '@taskgate/sdk';

/** The task a run works on: the fields of a task row that a handler's context reads. */
export interface RunTask {
  readonly id: string;
  readonly tenantId: string;
  readonly tool: string;
  readonly arguments: unknown;
  readonly attempt: number;
  readonly idempotencyKey: string | null;
  /** Answers to earlier ctx.input() requests, by key. */
  readonly inputResponses: Readonly<Record<string, unknown>>;
  readonly cancelReason: string | null;
  readonly idleTimeoutMs: number | null;
  readonly maxTimeoutMs: number | null;
  /** What the MCP client declared for this call, when the call carries it (inline calls). */
  readonly clientCapabilities?: Readonly<Record<string, unknown>>;
}

/** A step as the store knows it: done with its result, or an irreversible one started and not recorded. */
export type StepRecord =
  | { readonly state: 'done'; readonly result: unknown; readonly irreversible: boolean }
  | { readonly state: 'started'; readonly irreversible: true; readonly attempt: number };

/** Where a task's cancel request stands, as its row says. */
export interface RunCancelState {
  readonly attempt: number;
  readonly status: string;
  readonly cancelRequested: boolean;
  readonly cancelReason: string | null;
}

/** A terminal outcome other than a completion with effects. */
export interface RunOutcome {
  readonly status: 'completed' | 'failed' | 'cancelled';
  readonly result?: unknown;
  readonly error?: unknown;
  readonly statusMessage?: string;
  /** Why, for the history: "handler returned", "timeout:max", "cancel observed: ..." */
  readonly reason: string;
  /** The handler's last progress, when no progress write stored it: written with the outcome. */
  readonly progress?: RunProgress | undefined;
}

export interface RunProgress {
  readonly value: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

export type CommitOutcome =
  | { readonly kind: 'completed'; readonly result: ToolResult }
  | { readonly kind: 'cancel-requested'; readonly reason: string | null }
  | { readonly kind: 'superseded'; readonly status: string };

/**
 * What a ToolRun keeps its task in. A durable run's store is the task row (apps/worker): every
 * method is one guarded write or read, retried through an outage where its outcome is decided. An
 * inline run's store is memory (InlineStore): nothing durable, and nothing to commit effects in.
 * Every write is conditional on the run's attempt still holding a non-terminal task; false (or
 * `superseded`) means something else ended it first.
 */
export interface RunStore {
  /** Best effort, for checkpoints: may fail or be slow (the run waits for it only briefly). */
  peekCancelState(): Promise<RunCancelState | null>;
  /** Retried through an outage: the run's next move depends on the answer. */
  readCancelState(): Promise<RunCancelState | null>;
  /**
   * Replaceable: a lost progress write is superseded by the next one. False when it was not stored
   * (the write failed): the run's next decided write (park, complete, commit, finish) carries it.
   */
  recordProgress(progress: RunProgress): Promise<boolean>;
  readSteps(): Promise<Map<string, StepRecord>>;
  /** Writes an irreversible step's `started` row before its function runs; false: the attempt lost the task. */
  startIrreversibleStep(name: string): Promise<boolean>;
  /**
   * Records a step's result; false: the attempt no longer holds the task. An irreversible step's
   * result is recorded even then (its effect happened; reconciliation learns it).
   */
  recordStep(name: string, result: unknown, irreversible: boolean): Promise<boolean>;
  /** Moves the task to input_required with these outstanding requests. */
  park(requests: Readonly<Record<string, InputRequest>>, message: string, progress?: RunProgress): Promise<boolean>;
  /**
   * Where the client can be asked in the call itself (an inline call of a handshake revision: the
   * requests go to the client on the call's stream): the answers by key, instead of parking.
   */
  readonly ask?: (
    requests: Readonly<Record<string, InputRequest>>,
    signal: AbortSignal,
  ) => Promise<Readonly<Record<string, unknown>>>;
  /** Completes without local effects (and without an idempotency key). */
  complete(result: ToolResult, reason: string, progress?: RunProgress): Promise<boolean>;
  /** The final commit: lock, cancel check, effects, stored result and completion in one transaction. */
  commit(
    effects: (tx: CommitContext<unknown>) => Promise<ToolResult>,
    reason: string,
    progress?: RunProgress,
  ): Promise<CommitOutcome>;
  finish(outcome: RunOutcome): Promise<boolean>;
  /** Hands the task back to the queue for another attempt. */
  release(why: string): Promise<boolean>;
  recordCancelObserved(how: string): Promise<void>;
}
