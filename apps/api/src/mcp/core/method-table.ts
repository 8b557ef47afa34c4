import type { MethodOutcome } from './outcomes.ts';
import type { RequestContext } from './request-context.ts';

/** One method of one revision: its outcome, or null for a request cancelled before any answer. */
export type MethodHandler = (
  params: Readonly<Record<string, unknown>> | undefined,
  context: RequestContext,
) => Promise<MethodOutcome | null> | MethodOutcome | null;

/**
 * A revision's methods by name. A Map, not an object: a method named `constructor` or `__proto__`
 * must find nothing rather than Object.prototype's members.
 */
export type MethodTable = ReadonlyMap<string, MethodHandler>;
