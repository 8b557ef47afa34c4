import type { Database } from '@taskgate/db';
import type { Transaction } from 'kysely';

/** An MCP content block (text, image, resource link, ...); the protocol package narrows it. */
export interface ContentBlock {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** What a handler returns: an MCP CallToolResult. `isError: true` is a tool error, not a failure. */
export interface ToolResult {
  readonly content: readonly ContentBlock[];
  readonly structuredContent?: Readonly<Record<string, unknown>>;
  readonly isError?: boolean;
}

/**
 * How the server may retry a call on its own (after a worker death, say):
 * safe: read-only, retry freely; conditional: a mutation, retried only with an idempotency key;
 * unsafe: never retried automatically — a lost outcome is reconciled, not replayed.
 */
export type RetryClass = 'safe' | 'conditional' | 'unsafe';

/** MCP tool annotations: hints for clients, never proof of anything. */
export interface ToolAnnotations {
  readonly title?: string;
  readonly readOnlyHint?: boolean;
  readonly destructiveHint?: boolean;
  readonly idempotentHint?: boolean;
  readonly openWorldHint?: boolean;
}

export interface ToolTimeouts {
  /** Longest stretch without progress. */
  readonly idleMs?: number;
  /** Longest run from the first start, across attempts; nothing extends it. */
  readonly maxMs?: number;
}

/**
 * A request the server makes of the client on a task's behalf (an MCP input request), e.g.
 * `{ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema } }`.
 */
export interface InputRequest {
  readonly method: string;
  readonly params: Readonly<Record<string, unknown>>;
}

export interface ToolContext {
  /** Aborted when the task is cancelled, a clock runs out, or the worker releases the task. */
  readonly signal: AbortSignal;
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
  /** Reports progress; only strictly increasing values count, and only they reset the idle clock. */
  progress(value: number, total?: number, message?: string): void;
  /**
   * The final commit: runs `effects` inside the transaction that completes the task, after locking
   * the task row. If a cancel was requested first, nothing of it commits and the task ends
   * cancelled (this throws TaskCancelledError). Returns the result the task completed with.
   */
  commit(effects: (trx: Transaction<Database>) => Promise<ToolResult>): Promise<ToolResult>;
  /**
   * A durable step: runs `fn` once per task, whatever the number of attempts. When it returns, its
   * result (which must be JSON) is recorded before step() resolves; an attempt after a worker death
   * or a re-delivery gets the recorded result back (re-read from JSON) without running `fn`. A step
   * interrupted before its record was written runs again, so `fn` itself should be safe to repeat
   * or pass its own idempotency key to whatever it calls.
   */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** A delay that ends early, rejecting with the stop reason, when the signal aborts. */
  sleep(ms: number): Promise<void>;
  /**
   * Asks the client for input and resolves with its responses by key (every key answered). Until
   * then nothing waits in memory: the task moves to `input_required` with these requests, this
   * attempt ends (input() throws TaskParkedError, which must propagate), and the worker is free.
   * When the client has answered every key (tasks/update, through any API instance), the task is
   * queued again and the handler runs from the start; this time input() returns the stored answers
   * at once. Code before input() therefore runs again: keep it repeatable, or put it in step().
   * Keys must be unique over the task's life (the Tasks extension never reuses one).
   */
  input(requests: Readonly<Record<string, InputRequest>>): Promise<Record<string, unknown>>;
}

export interface ToolDefinition<Input = Record<string, unknown>> {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  /** JSON Schema (2020-12) of the arguments; checked before a task is created. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly outputSchema?: Readonly<Record<string, unknown>>;
  readonly annotations?: ToolAnnotations;
  readonly retry: RetryClass;
  /**
   * Whether a call must carry an idempotency key (`required`: a call without one is refused) or
   * may (`optional`, the default for conditional tools: without a key it is never retried
   * automatically). Tools of other retry classes take no key.
   */
  readonly idempotencyKey?: 'required' | 'optional';
  readonly timeouts?: ToolTimeouts;
  /**
   * A safe tool may run inline: an MCP tools/call then runs it in the API process with no task row
   * (cancellation, the two clocks and progress still apply). Nothing is durable, which is why only
   * safe tools may: a lost inline call is simply called again. REST tasks always run on workers.
   */
  readonly inline?: boolean;
  /**
   * Client capabilities a call needs (MCP ClientCapabilities shape, e.g. `{ elicitation: {} }`).
   * A call from a client that did not declare them is refused before anything runs (MCP -32021,
   * `data.requiredCapabilities` naming what is missing). REST calls have no client capabilities and
   * are not checked.
   */
  readonly requiredClientCapabilities?: Readonly<Record<string, unknown>>;
  /**
   * Whether an MCP call may be answered with a task (the Tasks extension's CreateTaskResult) for a
   * client that declared the extension: `forbidden` (always answered in the call), `optional` (a
   * task when the call outlives the server's threshold; the default), or `required` (always a task;
   * a client without the extension gets -32021). Inline tools are always `forbidden`.
   */
  readonly taskSupport?: TaskSupport;
  /**
   * Input asked in the call itself, before a task exists (MCP multi round-trip: the call is answered
   * with `resultType: "input_required"` until the client sends `inputResponses` for every key). The
   * answers are stored with the task, so the handler's ctx.input() of the same keys returns them.
   */
  readonly askFirst?: Readonly<Record<string, InputRequest>>;
  handler(input: Input, ctx: ToolContext): Promise<ToolResult>;
}

export type TaskSupport = 'forbidden' | 'optional' | 'required';

/** A tool's task support with its default: optional, except inline tools, which have no task row. */
export function taskSupportOf(tool: Pick<ToolDefinition<never>, 'taskSupport' | 'inline'>): TaskSupport {
  return tool.inline ? 'forbidden' : (tool.taskSupport ?? 'optional');
}

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** Declares a tool; checks the declaration itself so a bad one fails at start-up, not at first call. */
export function defineTool<Input = Record<string, unknown>>(definition: ToolDefinition<Input>): ToolDefinition<Input> {
  if (!NAME.test(definition.name)) {
    throw new TypeError(`tool name ${JSON.stringify(definition.name)} must be 1-128 of A-Z a-z 0-9 _ . -`);
  }
  if (definition.inputSchema.type !== 'object') {
    throw new TypeError(`tool ${definition.name}: inputSchema must be a JSON Schema with type "object"`);
  }
  if (definition.inline && definition.retry !== 'safe') {
    throw new TypeError(`tool ${definition.name}: only a safe tool may run inline (it has no durable record)`);
  }
  if (definition.inline && definition.taskSupport !== undefined && definition.taskSupport !== 'forbidden') {
    throw new TypeError(`tool ${definition.name}: an inline tool has no task row, so its taskSupport is forbidden`);
  }
  if (definition.idempotencyKey !== undefined && definition.retry !== 'conditional') {
    throw new TypeError(`tool ${definition.name}: only a conditional tool takes an idempotency key`);
  }
  const required = definition.requiredClientCapabilities;
  if (required !== undefined && (typeof required !== 'object' || required === null || Array.isArray(required))) {
    throw new TypeError(`tool ${definition.name}: requiredClientCapabilities must be a capabilities object`);
  }
  for (const key of ['idleMs', 'maxMs'] as const) {
    const value = definition.timeouts?.[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) {
      throw new TypeError(`tool ${definition.name}: timeouts.${key} must be a positive integer of milliseconds`);
    }
  }
  return definition;
}
