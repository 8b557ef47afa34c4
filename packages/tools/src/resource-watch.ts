import type { ResolvedResource } from './content-registry.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/**
 * Starts a resolved resource's `watch` for one subscriber and returns the function that stops it
 * (always a function, safe to call twice). Where a subscription is watched — a connection here
 * (resources/subscribe) or a worker for an API that did not load the module — this is how.
 *
 * A module's watch is plain JavaScript and may not keep to its type: one that throws is logged
 * and stops nothing; one written `async` hands back a promise of its stop function, which is
 * called when it arrives (at once if the subscriber left meanwhile) so its timers do not outlive
 * the subscription; anything else it returns is ignored. `failed` hears a watch that threw or
 * rejected as it started (the caller may hand the watch to someone else).
 */
export function startResourceWatch(
  target: ResolvedResource,
  uri: string,
  changed: () => void,
  context: { readonly tenant: string },
  log: LogFn,
  failed?: (error: Error) => void,
): () => void {
  let stopped = false;
  let stop: (() => void) | undefined;
  const callStop = () => {
    const fn = stop;
    stop = undefined;
    try {
      fn?.();
    } catch (error) {
      log({ uri, error: (error as Error).message }, "a resource's watch threw as it stopped");
    }
  };
  const threw = (error: Error) => {
    if (stopped) return;
    log({ uri, error: error.message }, "a resource's watch threw; its subscribers are not notified");
    failed?.(error);
  };
  const taken = (value: unknown) => {
    if (typeof value !== 'function') return;
    stop = value as () => void;
    if (stopped) callStop();
  };
  try {
    const returned: unknown =
      target.kind === 'resource'
        ? target.definition.watch?.(changed, context)
        : target.definition.watch?.(uri, target.variables, changed, context);
    if (returned !== null && typeof (returned as { then?: unknown } | undefined)?.then === 'function') {
      (returned as PromiseLike<unknown>).then(taken, (error: unknown) =>
        threw(error instanceof Error ? error : new Error(String(error))),
      );
    } else taken(returned);
  } catch (error) {
    threw(error instanceof Error ? error : new Error(String(error)));
  }
  return () => {
    stopped = true;
    callStop();
  };
}
