import type { Transaction } from 'kysely';

/** Hints for the client about a content block (MCP Annotations). */
export interface ContentAnnotations {
  readonly audience?: readonly ('user' | 'assistant')[];
  readonly priority?: number;
  readonly lastModified?: string;
}

interface ContentBlockBase {
  readonly annotations?: ContentAnnotations;
  readonly _meta?: Readonly<Record<string, unknown>>;
}

export interface TextContent extends ContentBlockBase {
  readonly type: 'text';
  readonly text: string;
}

/** An image: base64 `data` of the given MIME type. */
export interface ImageContent extends ContentBlockBase {
  readonly type: 'image';
  readonly data: string;
  readonly mimeType: string;
}

/** Audio: base64 `data` of the given MIME type. */
export interface AudioContent extends ContentBlockBase {
  readonly type: 'audio';
  readonly data: string;
  readonly mimeType: string;
}

/** A resource the client may read, by URI. */
export interface ResourceLink extends ContentBlockBase {
  readonly type: 'resource_link';
  readonly uri: string;
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly mimeType?: string;
  readonly size?: number;
}

/** A resource's contents, embedded: text, or a base64 blob. */
export interface EmbeddedResource extends ContentBlockBase {
  readonly type: 'resource';
  readonly resource:
    | {
        readonly uri: string;
        readonly mimeType?: string;
        readonly text: string;
        readonly _meta?: Readonly<Record<string, unknown>>;
      }
    | {
        readonly uri: string;
        readonly mimeType?: string;
        readonly blob: string;
        readonly _meta?: Readonly<Record<string, unknown>>;
      };
}

/**
 * An MCP content block: the five kinds a CallToolResult may carry. A result with any other block
 * is refused (the task fails naming the tool), since MCP clients reject it.
 */
export type ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource;

/** What a handler returns: an MCP CallToolResult. `isError: true` is a tool error, not a failure. */
export interface ToolResult {
  readonly content: readonly ContentBlock[];
  readonly structuredContent?: Readonly<Record<string, unknown>>;
  readonly isError?: boolean;
}

/**
 * A request the server makes of the client on a task's behalf (an MCP input request), e.g.
 * `{ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } }`.
 */
export interface InputRequest {
  readonly method: string;
  readonly params: Readonly<Record<string, unknown>>;
}

/** An event to deliver after the commit (by the outbox relay, at least once, in order per aggregate). */
export interface OutboxEvent {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  /** Any JSON value. */
  readonly payload: unknown;
}

/** The rows of a raw SQL statement. */
export interface QueryResult<Row> {
  readonly rows: Row[];
  readonly rowCount: number;
}

/**
 * What ctx.commit hands its effects: one Postgres transaction, the one that also stores the
 * idempotent result and completes the task. Nothing of it is visible before that commit, and
 * none of it commits if the task was cancelled first.
 */
export interface CommitContext<DB> {
  /** The transaction as Kysely, typed by the tool's own tables. */
  readonly db: Transaction<DB>;
  /** Raw SQL on the same transaction, with `$1, $2, ...` parameters. */
  query<Row = Record<string, unknown>>(text: string, values?: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Events that commit with the effects (the task's tenant is recorded with each). */
  readonly outbox: { add(event: OutboxEvent): void };
}

/** What ctx.spawn() runs a command with. */
export interface SpawnOptions {
  readonly cwd?: string;
  /** The child's whole environment (default: the worker's own). */
  readonly env?: Readonly<Record<string, string>>;
  /** Written to the child's stdin, which is then closed (default: closed at once). */
  readonly input?: string;
  /** Each piece of stdout as it arrives, decoded as UTF-8 (a character is never split). */
  readonly onStdout?: (text: string) => void;
  readonly onStderr?: (text: string) => void;
  /**
   * How long the child's process group has between SIGTERM and SIGKILL once the task must stop
   * (default: the tool's `subprocessGraceMs`, else DEFAULT_SUBPROCESS_GRACE_MS).
   */
  readonly graceMs?: number;
  /** The most of stdout, and of stderr, kept for the result (default 1 MiB each); onStdout still hears all. */
  readonly maxOutputBytes?: number;
}

/** How a ctx.spawn() child ended. A non-zero exit is a result, not an error: the handler decides. */
export interface SpawnResult {
  /** The exit code, or null when a signal ended it. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Whether stdout or stderr was cut to maxOutputBytes. */
  readonly truncated: boolean;
}

/** Between SIGTERM and SIGKILL, for a tool that sets no `subprocessGraceMs`. */
export const DEFAULT_SUBPROCESS_GRACE_MS = 5_000;

/** ctx.fetch()'s options: fetch's own, and whether the call's idempotency key goes along. */
export interface TaskFetchInit extends RequestInit {
  /**
   * Sends the call's idempotency key (ctx.idempotencyKey) downstream: `true` as the
   * `Idempotency-Key` header, a string as the header of that name. A call made without a key
   * sends none; a header the request sets itself is kept.
   */
  readonly idempotencyKey?: boolean | string;
}

/**
 * What a handler starts work with, bound to a stop: the task's own (ctx is the root scope) or a
 * branch of ctx.all()/ctx.race(), whose signal also aborts when a sibling fails or wins. Whatever
 * is started through a scope ends with it.
 */
export interface TaskScope {
  /**
   * Aborted when the task is cancelled, a clock runs out, or the worker releases the task; in a
   * branch, also when a sibling failed (the reason is its error) or won its race.
   */
  readonly signal: AbortSignal;
  /** A delay that ends early, rejecting with the stop reason, when the signal aborts. */
  sleep(ms: number): Promise<void>;
  /**
   * Runs `command` (no shell) in a process group of its own, bound to the task: when the task must
   * stop — a cancel, a clock, the worker handing it back — the whole group gets SIGTERM, then
   * SIGKILL once the grace period has passed, so a shell's children and a pipeline's die with it;
   * spawn() then rejects with the stop reason, once the group is gone or killed. When the command
   * exits by itself, what it left running in its group is killed. Resolves with the exit status
   * and the output. A process that starts a session of its own (setsid, a daemon) leaves the group
   * and is not reached; run workers under an init that reaps orphans.
   */
  spawn(command: string, args?: readonly string[], options?: SpawnOptions): Promise<SpawnResult>;
  /**
   * fetch() bound to the scope's signal: a stop aborts the request (and its body), and it rejects
   * with the stop reason, not an AbortError.
   */
  fetch(input: string | URL | Request, init?: TaskFetchInit): Promise<Response>;
  /**
   * Runs the branches side by side, each with a scope of its own, and resolves with their results
   * in order. The first to fail aborts the others (their signal's reason is its error), and all()
   * rejects with that error once every branch has settled: nothing outlives the call.
   */
  all<T>(branches: readonly ((scope: TaskScope) => Promise<T>)[]): Promise<T[]>;
  /**
   * Runs the branches side by side; the first to succeed wins, the others are aborted, and race()
   * resolves with the winner's result once every branch has settled. If all fail, it rejects with
   * the first failure.
   */
  race<T>(branches: readonly ((scope: TaskScope) => Promise<T>)[]): Promise<T>;
}

/** Options of ctx.step(). */
export interface StepOptions {
  /** The step cannot be undone: a cancel or a lost outcome after it is a reconciliation item. */
  readonly irreversible?: boolean;
}

export interface ToolContext<DB = unknown> extends TaskScope {
  readonly tenant: string;
  readonly taskId: string;
  readonly attempt: number;
  /**
   * The idempotency key the call was made with (the `Idempotency-Key` header or the
   * `idempotencyKey` argument), or null. With a key, the final commit also stores the result under
   * it, in the same transaction as the effects.
   */
  readonly idempotencyKey: string | null;
  /**
   * Throws the stop reason if the task must stop. Also re-reads the cancel flag from the database
   * at a bounded interval, so a lost wake-up delays a cancel but never loses it.
   */
  checkpoint(): Promise<void>;
  /**
   * A log message for the MCP client (notifications/message on the request's stream), at one of
   * MCP's levels: sent only to a client that asked for that level or a less severe one
   * (2026-07-28's per-request logLevel, an older session's logging/setLevel), and only while the
   * call is answered in its request. `data` is any JSON value; keep secrets out of it. At most 200
   * messages per run reach the client. A durable task's messages are kept with the task (at most
   * 1,000 over its attempts) for the request that waits for it (not once it is handed to the
   * client). Messages logged inside ctx.commit's effects are not kept: the task has ended by then.
   */
  log(
    level: 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency',
    data: unknown,
    logger?: string,
  ): void;
  /** Reports progress; only strictly increasing values count, and only they reset the idle clock. */
  progress(value: number, total?: number, message?: string): void;
  /**
   * The final commit: runs `effects` inside the transaction that completes the task, after locking
   * the task row. If a cancel was requested first, nothing of it commits and the task ends
   * cancelled (this throws TaskCancelledError). Returns the result the task completed with.
   * Runs once per task; an inline tool has no transaction and may not call it.
   */
  commit(effects: (tx: CommitContext<DB>) => Promise<ToolResult>): Promise<ToolResult>;
  /**
   * A durable step: runs `fn` once per task, whatever the number of attempts. When it returns, its
   * result (which must be JSON) is recorded before step() resolves; an attempt after a worker death
   * or a re-delivery gets the recorded result back (re-read from JSON) without running `fn`. A step
   * interrupted before its record was written runs again, so `fn` itself should be safe to repeat
   * or pass its own idempotency key to whatever it calls.
   *
   * `{ irreversible: true }` marks a step that cannot be undone or safely repeated (a payment, an
   * email). Its start is recorded before `fn` runs, and from then on:
   * - if the task ends failed or cancelled (a cancel, a clock, a crash), a reconciliation item is
   *   opened in the same transaction: `abandoned_with_effects` when the step finished,
   *   `unknown_outcome` when it started and never recorded how it went;
   * - a later attempt that finds the step started but unrecorded (its worker died mid-step, or
   *   `fn` threw) does not run it again: step() throws a ToolProtocolError (-32603,
   *   `data.code: TG_STEP_OUTCOME_UNKNOWN`) and the task fails;
   * - its result is recorded even when the task ended while `fn` ran, so the item knows it.
   * Only a task can hold one: an inline tool's irreversible step throws.
   */
  step<T>(name: string, fn: () => Promise<T>, options?: StepOptions): Promise<T>;
  /**
   * Asks the client for input and resolves with its responses by key (every key answered). Until
   * then nothing waits in memory: the task moves to `input_required` with these requests, this
   * attempt ends (input() throws TaskParkedError, which must propagate), and the worker is free.
   * When the client has answered every key, the task is queued again and the handler runs from the
   * start; this time input() returns the stored answers at once. Code before input() therefore
   * runs again: keep it repeatable, or put it in step(). Keys must be unique over the task's life.
   *
   * An inline tool called over MCP 2026-07-28 asks the same way with no task at all: the call is
   * answered `input_required` with the missing requests and a signed `requestState`, and the
   * client's retry runs the handler from the start with every answer so far (multi round-trip).
   */
  input(requests: Readonly<Record<string, InputRequest>>): Promise<Record<string, unknown>>;
  /**
   * Tells the client that the out-of-band interaction of a URL-mode elicitation has finished (the
   * user is done on its page), so it can go on without waiting for the user to say so:
   * notifications/elicitation/complete with this `elicitationId`, on the call's own stream, before
   * its response. Give the elicitation an `elicitationId` of your own (in its params, or in
   * UrlElicitationRequiredError) to have one to name here. Sent only where the revision has it
   * (2025-11-25; 2026-07-28 dropped it: its client learns the outcome by retrying), only to a
   * client that declared `elicitation.url`, and only on a call answered in its request: an inline
   * tool's at once, a durable task's through the task (kept in order with its ctx.log() messages,
   * sent by the request that waits for it). Elsewhere nothing is sent (a task handed to the
   * client has no call stream).
   */
  elicitationComplete(elicitationId: string): void;
  /**
   * What the MCP client declared it supports (its ClientCapabilities) on the call: per request in
   * MCP 2026-07-28, at initialize before it. A tool asks only for input the client can give
   * (`elicitation`, `sampling`, `roots`). A durable task keeps it from the call that created it
   * (of capabilities over 16 KiB, only which input kinds were declared). Undefined for a call that
   * carried none (REST, or a client that declared nothing).
   */
  readonly clientCapabilities?: Readonly<Record<string, unknown>>;
}
