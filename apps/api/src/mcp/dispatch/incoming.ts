import {
  type CancelledParams,
  checkJsonValue,
  classifyMessage,
  invalidJsonValueError,
  type JsonRpcError,
  type JsonRpcId,
  parseCancelledParams,
} from '@taskgate/protocol';
import { type CancelDecision, requestIdKey, StopSignalError } from '@taskgate/reliability';
import type { RequestScope } from './request-runner.ts';

/** One decoded JSON-RPC message as every transport reads it. */
export type IncomingMessage =
  /** A request, a notification, a response, or not a JSON-RPC message (answered with its error). */
  | ReturnType<typeof classifyMessage>
  /**
   * A request or notification holding a value Postgres cannot store (NUL, an unpaired surrogate),
   * a non-finite number or nesting past MAX_JSON_DEPTH: -32602 before any method sees it (the
   * check REST runs too). A notification has no id to answer (`id` null).
   */
  | {
      readonly kind: 'unstorable';
      readonly id: JsonRpcId | null;
      readonly notification: boolean;
      readonly error: JsonRpcError;
    };

/** What a transport decoded, as a message: its kind, and whether its content can be taken in. */
export function readMessage(value: unknown): IncomingMessage {
  const message = classifyMessage(value);
  if (message.kind !== 'request' && message.kind !== 'notification') return message;
  const unstorable = checkJsonValue(value);
  if (!unstorable) return message;
  return {
    kind: 'unstorable',
    id: message.kind === 'request' ? message.id : null,
    notification: message.kind === 'notification',
    error: invalidJsonValueError(unstorable),
  };
}

/**
 * A request of the scope is cancelled (notifications/cancelled, or its relay from another
 * instance): through the coordinator, which decides the race with its answer, then its abort.
 */
export function cancelRequest(scope: RequestScope, requestId: JsonRpcId, reason: string | null): CancelDecision {
  const decision = scope.requests.cancel(requestId, reason ?? undefined);
  if (decision.cancelled) {
    scope.controllers
      ?.get(requestIdKey(requestId))
      ?.abort(new StopSignalError('notification', reason ?? 'cancelled by the client'));
  }
  return decision;
}

/**
 * notifications/cancelled (basic/utilities/cancellation) in a connection's scope: the request it
 * names is cancelled, its task too, and nothing is sent for it. Malformed, unknown, duplicate and
 * already-completed cancels change nothing (null: malformed); the transport logs or passes them on.
 */
export function honourCancel(
  scope: RequestScope,
  params: unknown,
): { readonly cancel: CancelledParams; readonly decision: CancelDecision } | null {
  const cancel = parseCancelledParams(params);
  if (!cancel) return null;
  return { cancel, decision: cancelRequest(scope, cancel.requestId, cancel.reason) };
}
