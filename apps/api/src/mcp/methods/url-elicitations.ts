import { ErrorCode, type JsonRpcError, revisionInfo } from '@taskgate/protocol';
import { type InputRequest, URL_ELICITATION_REQUIRED } from '@taskgate/sdk';
import { type MethodOutcome, missingCapability } from '../core/outcomes.ts';
import type { RequestContext } from '../core/request-context.ts';
import { inputCapabilityProblem, type Round, type RoundTrips } from './round-trips.ts';

/**
 * URL-mode elicitation beyond ctx.input() (MCP 2025-11-25 client/elicitation): the completion
 * notification of an elicitation sent on a call's stream, and a tool's URLElicitationRequiredError
 * (-32042) as each revision can carry it.
 */

/** What a client must have declared to be sent a URL elicitation, as inputCapabilityProblem reads it. */
const URL_ELICITATION: InputRequest = { method: 'elicitation/create', params: { mode: 'url' } };

function declaresUrlMode(context: RequestContext): boolean {
  return inputCapabilityProblem([URL_ELICITATION], context.clientCapabilities) === null;
}

/**
 * Where a handler's ctx.elicitationComplete() goes — an inline handler's at once, a durable
 * task's through its messages (TaskLogRelay) — in the revision that has the notification: the
 * call's own stream, which its URL elicitations went out on — the notification MUST go only to
 * the client that was sent the elicitation ("Completion Notifications for URL Mode Elicitation")
 * — and only to a client that declared `elicitation.url`, the one kind that has such elicitations.
 */
export function elicitationCompleter(context: RequestContext): ((elicitationId: string) => void) | undefined {
  const send = context.onLog;
  if (!send || context.revision === undefined) return undefined;
  if (revisionInfo(context.revision)?.elicitationCompleteNotification !== true) return undefined;
  // Checked when the handler completes one, not per call: most calls never do.
  return (elicitationId) => {
    if (!declaresUrlMode(context)) return;
    send({ jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: { elicitationId } });
  };
}

/**
 * The URL elicitations of a -32042 answer (null for any other answer), or 'malformed' when it
 * lacks them: the error MUST list the elicitations, each in URL mode with an elicitationId.
 */
function elicitationsOf(outcome: MethodOutcome | null): readonly Record<string, unknown>[] | 'malformed' | null {
  if (outcome?.kind !== 'error' || outcome.error.code !== URL_ELICITATION_REQUIRED) return null;
  const listed = (outcome.error.data as { elicitations?: unknown } | undefined)?.elicitations;
  if (!Array.isArray(listed) || listed.length === 0) return 'malformed';
  const wellFormed = listed.every((entry) => {
    const fields = entry as Record<string, unknown> | null;
    return (
      typeof fields === 'object' &&
      fields !== null &&
      fields.mode === 'url' &&
      typeof fields.url === 'string' &&
      typeof fields.message === 'string' &&
      typeof fields.elicitationId === 'string'
    );
  });
  return wellFormed ? (listed as Record<string, unknown>[]) : 'malformed';
}

/** A -32042 where it cannot go: -32603 with the original code in data, as the legacy codes travel. */
export function withoutUrlElicitationCode(error: JsonRpcError): JsonRpcError {
  if (error.code !== URL_ELICITATION_REQUIRED) return error;
  return {
    code: ErrorCode.InternalError,
    message: error.message,
    data: { ...(error.data as object), originalCode: error.code },
  };
}

function internal(outcome: MethodOutcome & { kind: 'error' }): MethodOutcome {
  return { ...outcome, error: withoutUrlElicitationCode(outcome.error) };
}

/**
 * A handshake tools/call answered URLElicitationRequiredError: unchanged (it is the revision's
 * own error, for the client to open the pages and retry) to a client that declared
 * `elicitation.url`; to one that did not, -32021 naming it, as ctx.input() of a URL elicitation
 * is answered — a server must not send a client elicitations of a mode it did not declare. The
 * elicitations sent are kept with the client's session (onUrlElicitations) before the answer
 * goes, so a completion that follows at once finds the client to tell.
 */
export async function urlElicitationRequired(
  outcome: MethodOutcome | null,
  context: RequestContext,
): Promise<MethodOutcome | null> {
  const elicitations = elicitationsOf(outcome);
  if (elicitations === null) return outcome;
  const error = outcome as MethodOutcome & { kind: 'error' };
  if (elicitations === 'malformed') return internal(error);
  if (declaresUrlMode(context)) {
    await context.onUrlElicitations?.(elicitations.map((elicitation) => elicitation.elicitationId as string));
    return outcome;
  }
  return missingCapability(
    { elicitation: { url: {} } },
    `${error.error.message} (the client did not declare elicitation.url, which URL elicitations need)`,
  );
}

/**
 * A tools/call answered URLElicitationRequiredError in a revision of multi round-trip requests,
 * which has no -32042 (2026-07-28 basic/index "Error Codes": it MUST NOT be emitted) and sends the
 * user to a page with input_required instead (client/elicitation "URL Mode Flow"): the same
 * elicitations, keyed by their elicitationId (a field the revision dropped), and the retry runs the
 * handler again from the start, which knows from its own state whether the user is done. `round`
 * is the call's; without one (a task handed to a client of the Tasks extension) it is -32603 with
 * the original code in data.
 */
export function urlElicitationsAsked(
  outcome: MethodOutcome | null,
  rounds: RoundTrips,
  round: Round | undefined,
  context: RequestContext,
  who: string,
): MethodOutcome | null {
  const elicitations = elicitationsOf(outcome);
  if (elicitations === null) return outcome;
  if (elicitations === 'malformed' || round === undefined)
    return internal(outcome as MethodOutcome & { kind: 'error' });
  const requests = Object.fromEntries(
    elicitations.map(({ elicitationId, ...params }) => [
      elicitationId as string,
      { method: 'elicitation/create', params } satisfies InputRequest,
    ]),
  );
  return rounds.ask(round, requests, context, who);
}
