import { setTimeout as delay } from 'node:timers/promises';
import { RaceLostError, type SpawnOptions, type TaskFetchInit, type TaskScope } from '@taskgate/sdk';
import { runSubprocess } from './subprocess.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** What every scope of one run shares. */
export interface ScopeSettings {
  /** The tool's grace for its subprocess groups (subprocessGraceMs, or the default). */
  readonly spawnGraceMs: number;
  /** The call's idempotency key, for ctx.fetch()'s `idempotencyKey`. */
  readonly idempotencyKey: string | null;
  readonly log: LogFn;
  /** The run's subprocess trees while they live (SubprocessScope.registry), made when first asked for. */
  readonly subprocesses?: () => Set<number>;
  /** SubprocessScope.onOrphan. */
  readonly onOrphan?: (delta: 1 | -1) => void;
}

/**
 * The promise as the handler gets it, marked handled: a handler that lets one go (`void
 * ctx.spawn(...)`) and returns must not crash the worker when it rejects at the run's end. One
 * awaited still rejects as it would.
 */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * A scope bound to `signal` (the run's, for ctx itself; a branch's, for ctx.all()/ctx.race()):
 * the one implementation of TaskScope, so a branch's sleep, spawn, fetch and nested fan-out stop
 * exactly as the task's do.
 */
export function taskScope(signal: AbortSignal, settings: ScopeSettings): TaskScope {
  const scope: TaskScope = {
    signal,
    sleep: (ms) =>
      handled(
        (async () => {
          try {
            await delay(ms, undefined, { signal });
          } catch {
            throw signal.reason;
          }
        })(),
      ),
    spawn: (command: string, args?: readonly string[], options?: SpawnOptions) =>
      handled(
        runSubprocess(command, args, options, {
          signal,
          graceMs: settings.spawnGraceMs,
          log: settings.log,
          ...(settings.subprocesses ? { registry: settings.subprocesses() } : {}),
          ...(settings.onOrphan ? { onOrphan: settings.onOrphan } : {}),
        }),
      ),
    fetch: (input, init) => handled(boundFetch(input, init, signal, settings.idempotencyKey)),
    all: (branches) => fanOut(branches, signal, settings, 'all') as never,
    race: (branches) => fanOut(branches, signal, settings, 'race') as never,
  };
  return scope;
}

async function boundFetch(
  input: string | URL | Request,
  init: TaskFetchInit | undefined,
  signal: AbortSignal,
  idempotencyKey: string | null,
): Promise<Response> {
  if (init !== undefined && (typeof init !== 'object' || init === null)) {
    throw new TypeError('ctx.fetch: init must be an object');
  }
  const { idempotencyKey: forward, ...rest } = init ?? {};
  if (forward !== undefined && typeof forward !== 'boolean' && (typeof forward !== 'string' || forward === '')) {
    throw new TypeError('ctx.fetch: init.idempotencyKey must be true, false or a header name');
  }
  if (signal.aborted) throw signal.reason;
  const headers = new Headers(rest.headers ?? (input instanceof Request ? input.headers : undefined));
  const header = forward === true ? 'Idempotency-Key' : typeof forward === 'string' ? forward : null;
  if (header !== null && idempotencyKey !== null && !headers.has(header)) headers.set(header, idempotencyKey);
  const own = rest.signal ?? (input instanceof Request ? input.signal : undefined);
  try {
    return await fetch(input, { ...rest, headers, signal: own ? AbortSignal.any([signal, own]) : signal });
  } catch (error) {
    // The task's stop, said as itself (a TaskCancelledError, a clock's), not as an AbortError.
    if (signal.aborted) throw signal.reason;
    throw error;
  }
}

/**
 * ctx.all() and ctx.race(): each branch runs with a scope whose signal follows the parent's and
 * aborts on the first failure (all) or the first success (race). The answer waits for every branch
 * to settle, so nothing a branch started outlives the call.
 */
async function fanOut<T>(
  branches: readonly ((scope: TaskScope) => Promise<T>)[],
  parent: AbortSignal,
  settings: ScopeSettings,
  kind: 'all' | 'race',
): Promise<T[] | T> {
  if (!Array.isArray(branches) || branches.some((branch) => typeof branch !== 'function')) {
    throw new TypeError(`ctx.${kind}: branches must be an array of functions`);
  }
  if (kind === 'race' && branches.length === 0) throw new TypeError('ctx.race: give it at least one branch');
  if (parent.aborted) throw parent.reason;
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  const child = taskScope(AbortSignal.any([parent, controller.signal]), settings);
  let failure: { error: unknown } | null = null;
  let winner: { value: T } | null = null;
  const settled = await Promise.allSettled(
    branches.map(async (branch) => {
      try {
        const value = await branch(child);
        if (kind === 'race' && winner === null) {
          winner = { value };
          controller.abort(new RaceLostError());
        }
        return value;
      } catch (error) {
        // The first failure stops the siblings (all); in a race, failures count only if none wins.
        if (failure === null) {
          failure = { error };
          if (kind === 'all') controller.abort(error);
        }
        throw error;
      }
    }),
  );
  parent.removeEventListener('abort', onParentAbort);
  // The parent's own stop wins over what its branches said of it.
  if (parent.aborted) throw parent.reason;
  if (kind === 'race') {
    if (winner !== null) return (winner as { value: T }).value;
    throw (failure as { error: unknown } | null)?.error ?? new Error('ctx.race: no branch finished');
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<T>).value);
}
