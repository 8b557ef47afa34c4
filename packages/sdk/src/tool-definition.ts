import type { InputRequest, ToolContext, ToolResult } from './tool-context.ts';

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

export interface ToolDefinition<Input = Record<string, unknown>, DB = unknown> {
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
   * How long a ctx.spawn() child's process group has between SIGTERM and SIGKILL when the task
   * must stop (default DEFAULT_SUBPROCESS_GRACE_MS, 5 s; at most 60 s). A call's own graceMs wins.
   */
  readonly subprocessGraceMs?: number;
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
  handler(input: Input, ctx: ToolContext<DB>): Promise<ToolResult>;
}

export type TaskSupport = 'forbidden' | 'optional' | 'required';

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const RETRY_CLASSES: readonly string[] = ['safe', 'conditional', 'unsafe'];
const TASK_SUPPORT: readonly string[] = ['forbidden', 'optional', 'required'];

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What is wrong with a declaration, or null. The platform runs it on every tool a module exports,
 * whether or not it went through defineTool (a module may export plain objects).
 */
export function toolDefinitionProblem(definition: unknown): string | null {
  if (!isRecord(definition)) return 'a tool must be an object made with defineTool';
  const name = definition.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    return `tool name ${JSON.stringify(name)} must be 1-128 of A-Z a-z 0-9 _ . -`;
  }
  const problem = (text: string) => `tool ${name}: ${text}`;
  if (typeof definition.description !== 'string') return problem('description must be a string');
  if (definition.title !== undefined && typeof definition.title !== 'string') return problem('title must be a string');
  if (typeof definition.handler !== 'function') return problem('handler must be a function');
  if (!isRecord(definition.inputSchema) || definition.inputSchema.type !== 'object') {
    return problem('inputSchema must be a JSON Schema with type "object"');
  }
  if (definition.outputSchema !== undefined && !isRecord(definition.outputSchema)) {
    return problem('outputSchema must be a JSON Schema object');
  }
  if (typeof definition.retry !== 'string' || !RETRY_CLASSES.includes(definition.retry)) {
    return problem('retry must be "safe", "conditional" or "unsafe"');
  }
  if (definition.taskSupport !== undefined && !TASK_SUPPORT.includes(definition.taskSupport as string)) {
    return problem('taskSupport must be "forbidden", "optional" or "required"');
  }
  if (definition.inline !== undefined && typeof definition.inline !== 'boolean')
    return problem('inline must be a boolean');
  if (definition.inline && definition.retry !== 'safe') {
    return problem('only a safe tool may run inline (it has no durable record)');
  }
  if (definition.inline && definition.taskSupport !== undefined && definition.taskSupport !== 'forbidden') {
    return problem('an inline tool has no task row, so its taskSupport is forbidden');
  }
  if (definition.idempotencyKey !== undefined && definition.retry !== 'conditional') {
    return problem('only a conditional tool takes an idempotency key');
  }
  if (
    definition.idempotencyKey !== undefined &&
    !['required', 'optional'].includes(definition.idempotencyKey as string)
  ) {
    return problem('idempotencyKey must be "required" or "optional"');
  }
  if (definition.requiredClientCapabilities !== undefined && !isRecord(definition.requiredClientCapabilities)) {
    return problem('requiredClientCapabilities must be a capabilities object');
  }
  if (definition.annotations !== undefined && !isRecord(definition.annotations)) {
    return problem('annotations must be an object');
  }
  if (definition.askFirst !== undefined && !isRecord(definition.askFirst)) {
    return problem('askFirst must be an object of input requests by key');
  }
  if (definition.subprocessGraceMs !== undefined && !isGraceMs(definition.subprocessGraceMs)) {
    return problem(`subprocessGraceMs must be an integer of milliseconds from 0 to ${MAX_SUBPROCESS_GRACE_MS}`);
  }
  if (definition.timeouts !== undefined && !isRecord(definition.timeouts)) return problem('timeouts must be an object');
  const timeouts = (definition.timeouts ?? {}) as Record<string, unknown>;
  for (const key of ['idleMs', 'maxMs']) {
    const value = timeouts[key];
    if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
      return problem(`timeouts.${key} must be a positive integer of milliseconds`);
    }
  }
  return null;
}

/** The longest grace a subprocess group may get: a stop must end within a bound. */
export const MAX_SUBPROCESS_GRACE_MS = 60_000;

/** A grace period in milliseconds: an integer from 0 (SIGKILL at once) to MAX_SUBPROCESS_GRACE_MS. */
export function isGraceMs(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_SUBPROCESS_GRACE_MS;
}

/** Declares a tool; checks the declaration itself so a bad one fails at start-up, not at first call. */
export function defineTool<Input = Record<string, unknown>, DB = unknown>(
  definition: ToolDefinition<Input, DB>,
): ToolDefinition<Input, DB> {
  const problem = toolDefinitionProblem(definition);
  if (problem !== null) throw new TypeError(problem);
  return definition;
}
