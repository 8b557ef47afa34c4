import type { TaskProgress } from '@taskgate/db';
import type { JsonRpcError, JsonRpcId } from '@taskgate/protocol';
import { RequestCoordinator, requestIdKey } from '@taskgate/reliability';
import type { McpCore } from '../core/mcp-core.ts';
import type { MethodOutcome } from '../core/outcomes.ts';
import type { RequestContext } from '../core/request-context.ts';
import { ServerStopping } from '../core/server-stopping.ts';
import type { ClientRequests } from './client-requests.ts';
import { progressNotification, progressTokenOf } from './progress.ts';

/**
 * Where a connection's requests live — a stdio pipe, a handshake session (or a tenant's requests
 * without one) in this process, a single 2026-07-28 POST: the coordinator that gives each id one
 * terminal state, the aborts a cancel reaches, and the requests of the server's to its client.
 */
export interface RequestScope {
  readonly requests: RequestCoordinator;
  /**
   * The aborts of its requests in flight, by requestIdKey, that a cancel naming an id reaches.
   * Absent: nothing can name its requests (a 2026-07-28 POST, cancelled by its stream's close).
   */
  readonly controllers?: Map<string, AbortController>;
  /** Requests of the server's to the client (handshake revisions); absent: the handler cannot ask. */
  readonly clientRequests?: ClientRequests;
}

/** A scope of its own for a request that is a connection of its own (a 2026-07-28 POST). */
export function newRequestScope(): RequestScope {
  return { requests: new RequestCoordinator() };
}

/**
 * What a request sends before its answer, on its own stream or the pipe: its progress, its log
 * messages, its requests to the client, and the status of the task a handshake tasks/result waits on.
 */
export type RequestMessageKind = 'progress' | 'log' | 'ask' | 'status';

export type RequestEnd =
  /** Its answer; a failure's headers (Retry-After on a 503) with it, for a transport that has headers. */
  | { readonly kind: 'answer'; readonly outcome: MethodOutcome; readonly headers?: Readonly<Record<string, string>> }
  /** Cancelled by the client (notifications/cancelled, a closed stream or pipe): nothing is sent for it. */
  | { readonly kind: 'cancelled' }
  /** Ended by the server stopping with nothing to hand over (its request-mode task cancelled). */
  | { readonly kind: 'stopped' };

/** Where a running request's messages go, and what ends it besides a cancel: its stream, as its transport writes it. */
export interface RunStream {
  /** Its progress, log messages and requests to the client. */
  send(message: Record<string, unknown>, kind: RequestMessageKind): void;
  /**
   * Progress as the task reports it, for a transport that builds the notification itself (HTTP's
   * ProgressStream keeps a stalled reader's latest update in place, allocating nothing per
   * update); absent, each update goes to `send` as its notifications/progress. Only a request
   * with a progress token has progress either way.
   */
  readonly progress?: ((progress: TaskProgress) => void) | undefined;
  /**
   * The client is gone (its stream closed, stdin ended): the request is cancelled, as by
   * notifications/cancelled. Aborted with a ServerStopping instead, it says what `stopping` says
   * (HTTP's response has one signal for both, and the first to happen is the one that counts).
   */
  readonly gone?: AbortSignal | undefined;
  /**
   * The server is stopping: the request's signal aborts with this signal's reason, without a
   * cancel, so whatever the core answers (a task to hand over, a retryable error) is sent.
   */
  readonly stopping?: AbortSignal | undefined;
  /** A failure the core threw, as the transport reports it (logged, with its HTTP status). */
  failure(error: unknown): {
    readonly status: number;
    readonly error: JsonRpcError;
    readonly headers?: Readonly<Record<string, string>>;
  };
}

export interface RunRequest {
  readonly core: McpCore;
  readonly scope: RequestScope;
  /** begin's generation of the request's id in the scope's coordinator: only this request's answer completes it. */
  readonly begun: number;
  /** The request's context but for what the runner gives it (its signal, progress, logs, asks). */
  readonly context: Omit<RequestContext, 'signal' | 'onProgress' | 'onLog' | 'askClient'>;
  readonly stream: RunStream;
}

/**
 * One request of a connection, whichever transport it came on, its id begun in the scope's
 * coordinator: a cancel reaches it through the scope's controllers, the core runs it with the
 * request's progress (when it carries a token), log messages and — where the scope can —
 * requests to the client going to its stream, and the coordinator decides the race between its
 * answer and a cancel: one terminal state.
 */
export async function runRequest(
  id: JsonRpcId,
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  run: RunRequest,
): Promise<RequestEnd> {
  const { scope, stream } = run;
  const generation = run.begun;
  const { controllers } = scope;
  const key = controllers ? requestIdKey(id) : '';
  const controller = new AbortController();
  controllers?.set(key, controller);
  const { gone, stopping } = stream;
  const onGone = () => {
    const reason = gone?.reason;
    if (reason instanceof ServerStopping) {
      controller.abort(reason);
      return;
    }
    const text = reason instanceof Error ? reason.message : 'the client went away';
    if (scope.requests.cancel(id, text).cancelled) controller.abort(reason);
  };
  const onStopping = () => controller.abort(stopping?.reason);
  if (gone?.aborted) onGone();
  else gone?.addEventListener('abort', onGone, { once: true });
  if (stopping?.aborted) onStopping();
  else stopping?.addEventListener('abort', onStopping, { once: true });
  const token = progressTokenOf(params);
  const clientRequests = scope.clientRequests;
  let outcome: MethodOutcome | null;
  let headers: Readonly<Record<string, string>> | undefined;
  try {
    // Every field named, in one order: a spread of the context costs a copy per request, and
    // contexts of one shape keep the core's property reads monomorphic.
    const given = run.context;
    outcome = await run.core.request(method, params, {
      tenantId: given.tenantId,
      signal: controller.signal,
      revisionKind: given.revisionKind,
      revision: given.revision,
      clientCapabilities: given.clientCapabilities,
      logLevel: given.logLevel,
      log: given.log,
      headers: given.headers,
      resourceSubscriptions: given.resourceSubscriptions,
      onUrlElicitations: given.onUrlElicitations,
      setLogLevel: given.setLogLevel,
      onTaskStatus: given.onTaskStatus,
      onTaskCreated: given.onTaskCreated,
      onProgress:
        token === null
          ? undefined
          : (stream.progress ??
            ((progress: TaskProgress) => stream.send(progressNotification(token, progress), 'progress'))),
      onLog: (message) => stream.send(message, 'log'),
      askClient: clientRequests
        ? (askMethod: string, askParams: Readonly<Record<string, unknown>>, signal: AbortSignal) =>
            clientRequests.ask(askMethod, askParams, (message) => stream.send(message, 'ask'), signal)
        : undefined,
    } satisfies EveryField<RequestContext>);
  } catch (error) {
    const failure = stream.failure(error);
    outcome = { kind: 'error', httpStatus: failure.status, error: failure.error };
    headers = failure.headers;
  } finally {
    gone?.removeEventListener('abort', onGone);
    stopping?.removeEventListener('abort', onStopping);
    if (controllers?.get(key) === controller) controllers.delete(key);
  }
  // One terminal state: a cancel that won drops whatever came back (and a request whose id was
  // taken again after its cancel completes nothing of the newer one's).
  if (scope.requests.complete(id, generation) === 'drop') return { kind: 'cancelled' };
  if (outcome === null) {
    const stopped = stopping?.aborted || gone?.reason instanceof ServerStopping;
    return stopped ? { kind: 'stopped' } : { kind: 'cancelled' };
  }
  return headers === undefined ? { kind: 'answer', outcome } : { kind: 'answer', outcome, headers };
}

/** `T` with every field present, undefined where it has no value: an object of one shape. */
type EveryField<T> = { readonly [Field in keyof Required<T>]: T[Field] | undefined };
