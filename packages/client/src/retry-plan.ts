import { CALL_POLICY_META } from '@taskgate/protocol';
import { backoffDelay, type RetryClass } from '@taskgate/reliability';

export interface CallPolicy {
  readonly retry: RetryClass;
  /** Whether the tool takes an `idempotencyKey` argument, and must. */
  readonly idempotencyKey: 'required' | 'optional' | 'none';
  readonly timeouts?: { readonly idleMs?: number; readonly maxMs?: number };
  /** Where the policy came from: what the server published, or a guess from annotations. */
  readonly source: 'published' | 'annotations';
}

const RETRY_CLASSES: readonly string[] = ['safe', 'conditional', 'unsafe'];

/**
 * How a listed tool may be called again. Taskgate publishes it; for any other server it is read
 * off the annotations, trusting them only towards caution: read-only is safe, idempotent with an
 * `idempotencyKey` argument is conditional, anything else is unsafe (a hint never makes a call
 * more retryable than its schema can back).
 */
export function callPolicyOf(tool: {
  readonly inputSchema?: unknown;
  readonly annotations?: { readonly readOnlyHint?: boolean; readonly idempotentHint?: boolean };
  readonly _meta?: Record<string, unknown>;
}): CallPolicy {
  const meta = tool._meta ?? {};
  const published = meta[CALL_POLICY_META.retry];
  const takesKey = hasProperty(tool.inputSchema, 'idempotencyKey');
  if (typeof published === 'string' && RETRY_CLASSES.includes(published)) {
    const key = meta[CALL_POLICY_META.idempotencyKey];
    const timeouts = meta[CALL_POLICY_META.timeouts] as CallPolicy['timeouts'] | undefined;
    return {
      retry: published as RetryClass,
      idempotencyKey: key === 'required' || key === 'optional' ? key : 'none',
      ...(timeouts !== null && typeof timeouts === 'object' ? { timeouts } : {}),
      source: 'published',
    };
  }
  if (tool.annotations?.readOnlyHint === true) return { retry: 'safe', idempotencyKey: 'none', source: 'annotations' };
  if (tool.annotations?.idempotentHint === true && takesKey) {
    return { retry: 'conditional', idempotencyKey: 'optional', source: 'annotations' };
  }
  return { retry: 'unsafe', idempotencyKey: takesKey ? 'optional' : 'none', source: 'annotations' };
}

/** Why a call failed, as far as retrying it goes. */
export type FailureKind =
  /** Sent, and its answer lost (a stream or a connection ended first): it may have run. */
  | 'outcome-unknown'
  /** The server said it did nothing and to come back later (503, -31503). */
  | 'unavailable'
  /** Anything else: an answer (an error is one), a cancel, a clock that ran out. */
  | 'final';

export interface RetryOptions {
  /** Attempts in all, the first included (default 3). */
  readonly attempts?: number;
  readonly baseMs?: number;
  readonly capMs?: number;
}

export type RetryDecision =
  | { readonly retry: true; readonly delayMs: number }
  | { readonly retry: false; readonly why: 'final' | 'unsafe' | 'no-key' | 'attempts' };

/**
 * The retry matrix. A failure that says nothing ran (unavailable) may be retried by any class; one
 * whose outcome is unknown only by a safe tool (a new id, the same call) or a conditional one that
 * carries a key (the same key and arguments: the server replays the first result). An unsafe call
 * is never repeated by the client: its caller gets a handle to look it up.
 */
export function decideRetry(
  policy: Pick<CallPolicy, 'retry'>,
  failure: FailureKind,
  attempt: number,
  hasKey: boolean,
  options: RetryOptions,
  random: () => number,
): RetryDecision {
  if (failure === 'final') return { retry: false, why: 'final' };
  if (failure === 'outcome-unknown') {
    if (policy.retry === 'unsafe') return { retry: false, why: 'unsafe' };
    if (policy.retry === 'conditional' && !hasKey) return { retry: false, why: 'no-key' };
  }
  if (attempt + 1 >= (options.attempts ?? 3)) return { retry: false, why: 'attempts' };
  return {
    retry: true,
    delayMs: backoffDelay(attempt, { baseMs: options.baseMs ?? 200, capMs: options.capMs ?? 5_000 }, random),
  };
}

function hasProperty(schema: unknown, name: string): boolean {
  const properties = (schema as { properties?: unknown } | undefined)?.properties;
  return properties !== null && typeof properties === 'object' && Object.hasOwn(properties, name);
}
