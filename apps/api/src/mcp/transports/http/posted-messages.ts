import type { SessionSignals } from '@taskgate/db';
import { honourCancel } from '../../dispatch/incoming.ts';
import type { CallScope } from './handshake-sessions.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** Where a POSTed message of a handshake-revision client came from, and who else may hold its request. */
export interface PostedFrom {
  readonly tenantId: string;
  /** undefined: sent without a session (its requests are matched in the tenant's scope here only). */
  readonly sessionId: string | undefined;
  readonly signals?: SessionSignals | undefined;
  readonly debug: LogFn;
}

/**
 * A POSTed `notifications/cancelled` (what 2025-11-25 clients send): the request is cancelled in
 * its scope, through the coordinator; a request this process does not hold is passed on to the
 * instance that does (a session's only: ids are unique per client).
 */
export function honourPostedCancel(scope: CallScope, params: unknown, from: PostedFrom): void {
  const honoured = honourCancel(scope, params);
  if (!honoured || honoured.decision.cancelled) return;
  const { cancel, decision } = honoured;
  if (decision.why === 'unknown' && from.sessionId !== undefined && from.signals) {
    from.signals.send({
      kind: 'cancel',
      tenantId: from.tenantId,
      sessionId: from.sessionId,
      requestId: cancel.requestId,
      reason: cancel.reason ?? null,
    });
  } else from.debug({ requestId: cancel.requestId, why: decision.why }, 'ignored a cancellation');
}

/**
 * A POSTed response to a request of the server's (elicitation/create, ...): it answers the request
 * waiting here, or is passed on to the instance holding the call that asked.
 */
export function honourPostedResponse(scope: CallScope, message: Readonly<Record<string, unknown>>, from: PostedFrom) {
  if (scope.clientRequests.answer(message)) return;
  from.debug({ id: message.id }, 'a response answered no request waiting in this process');
  if (from.sessionId !== undefined && from.signals) {
    from.signals.send({ kind: 'response', tenantId: from.tenantId, sessionId: from.sessionId, message });
  }
}
