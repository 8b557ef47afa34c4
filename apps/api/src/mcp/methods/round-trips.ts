import { randomUUID } from 'node:crypto';
import { TaskgateError } from '@taskgate/errors';
import { type Capabilities, ErrorCode, missingCapabilities } from '@taskgate/protocol';
import { canonicalJson, sha256Hex } from '@taskgate/reliability';
import type { InputRequest } from '@taskgate/sdk';
import { inputResultProblem } from '@taskgate/tools';
import { type MethodOutcome, missingCapability, refusal } from '../core/outcomes.ts';
import type { RequestContext } from '../core/request-context.ts';
import type { RequestStateSealer } from './request-state.ts';

/** Which client capability lets a server send each kind of input request (basic/patterns/mrtr). */
const CAPABILITY_OF: Readonly<Record<string, string>> = {
  'elicitation/create': 'elicitation',
  'sampling/createMessage': 'sampling',
  'roots/list': 'roots',
};

/**
 * Whether a client that declared `declared` may be sent these input requests: a method MCP does
 * not define (`unknown`), or the capabilities it would need and did not declare (`missing`).
 * Both ways of asking (input_required and requests on the connection) check this.
 */
export function inputCapabilityProblem(
  requests: readonly { readonly method: string; readonly params?: Readonly<Record<string, unknown>> }[],
  declared: Capabilities | undefined,
):
  | { readonly kind: 'unknown'; readonly method: unknown }
  | { readonly kind: 'missing'; readonly missing: Capabilities }
  | null {
  const needed: Record<string, Record<string, unknown>> = {};
  for (const request of requests) {
    const capability = CAPABILITY_OF[request?.method];
    if (capability === undefined) return { kind: 'unknown', method: request?.method };
    needed[capability] ??= {};
    if (capability === 'elicitation') {
      const mode = elicitationMode(request.params, declared?.elicitation);
      if (mode !== null) (needed.elicitation as Record<string, unknown>)[mode] = {};
    }
  }
  const missing = missingCapabilities(needed as Capabilities, declared);
  return missing ? { kind: 'missing', missing } : null;
}

/**
 * The elicitation mode a request needs declared (client/elicitation "Capabilities"), or null when
 * `elicitation` alone is enough: URL mode needs `elicitation.url`; form mode needs
 * `elicitation.form`, which an empty `elicitation: {}` means too (as 2025-06-18 declared it), but
 * a declaration naming only `url` does not.
 */
function elicitationMode(
  params: Readonly<Record<string, unknown>> | undefined,
  declared: unknown,
): 'url' | 'form' | null {
  if (params?.mode === 'url') return 'url';
  const modes = typeof declared === 'object' && declared !== null ? (declared as Record<string, unknown>) : {};
  return Object.hasOwn(modes, 'url') && !Object.hasOwn(modes, 'form') ? 'form' : null;
}

/**
 * A request as a handshake revision sends it on the connection: a URL-mode elicitation carries
 * an `elicitationId` (2025-11-25's ElicitRequestURLParams require one; the client may echo it in
 * notifications), made here when the handler gave none.
 */
function onTheWire(request: InputRequest): InputRequest {
  if (request.method !== 'elicitation/create' || request.params.mode !== 'url') return request;
  if (typeof request.params.elicitationId === 'string') return request;
  return { ...request, params: { ...request.params, elicitationId: randomUUID() } };
}

/**
 * A handler asked its client for input of a kind the client did not declare: the request is
 * answered -32021 with `data.requiredCapabilities`, as a tool that needs them is before it runs.
 */
export class ClientCapabilityMissing extends Error {
  readonly missing: Capabilities;
  constructor(message: string, missing: Capabilities) {
    super(message);
    this.name = 'ClientCapabilityMissing';
    this.missing = missing;
  }
}

/** One request of a multi round-trip exchange: what it is about, and the answers gathered so far. */
export interface Round {
  /** The method and salient params the state is bound to (a digest, made only when a state is). */
  readonly request: () => string;
  readonly answers: Readonly<Record<string, unknown>>;
  /** The durable task a retry's state names: parked for these answers, which go to it. */
  readonly task?: string;
}

/**
 * Multi round-trip requests (2026-07-28 basic/patterns/mrtr), for whatever runs in the request
 * (inline tools, prompts, resources): a handler's ctx.input() of keys not yet answered ends the
 * request with `resultType: "input_required"`, the missing requests and a signed `requestState`
 * carrying every answer so far; the client's retry (a new JSON-RPC id, the same params, the
 * state echoed, `inputResponses` added) runs the handler again from the start with them. Nothing
 * is kept on the server between rounds, so the retry may land on any instance.
 */
export class RoundTrips {
  readonly #sealer: RequestStateSealer;

  constructor(sealer: RequestStateSealer) {
    this.#sealer = sealer;
  }

  /** How long a state this server issues stays good (a task parked on one waits that long, and a grace). */
  get stateTtlMs(): number {
    return this.#sealer.ttlMs;
  }

  /**
   * The round a request starts: its answers from the state it echoes (checked: this server's,
   * unaltered, unexpired, this tenant's, this request's) and from `inputResponses` — only the keys
   * that state asked, each a result of its request's kind, so an answer given before cannot be
   * replaced; without a state there are no answers (the first round asks). A state that fails its
   * check, or inputResponses that are not results, is -32602 and nothing runs.
   */
  begin(
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
    subject: { readonly method: string; readonly name: string; readonly arguments?: unknown },
  ): Round | MethodOutcome {
    // Hashed only when a state is opened or made: most calls ask nothing and carry none.
    let digest: string | null = null;
    const request = () => {
      digest ??= sha256Hex(canonicalJson([subject.method, subject.name, subject.arguments ?? null]));
      return digest;
    };
    const given = params?.inputResponses;
    if (given !== undefined) {
      const problem = responsesProblem(given);
      if (problem !== null) return refusal(new TaskgateError('TG_INPUT_RESPONSES_INVALID', problem));
    }
    const responses = (given ?? {}) as Record<string, unknown>;
    // No state: nothing was asked yet, so nothing is an answer (the first round asks).
    if (params?.requestState === undefined) return { request, answers: {} };
    const opened = this.#sealer.open(params.requestState, { principal: context.tenantId, request: request() });
    if ('problem' in opened) {
      return refusal(
        new TaskgateError(
          'TG_REQUEST_STATE_INVALID',
          `requestState is not valid for this request (${opened.problem})`,
          {
            details: { problem: opened.problem },
          },
        ),
      );
    }
    const answers: Record<string, unknown> = { ...opened.answers };
    for (const [key, method] of Object.entries(opened.asked)) {
      if (!Object.hasOwn(responses, key)) continue;
      const problem = inputResultProblem(method, responses[key]);
      if (problem !== null) {
        return refusal(
          new TaskgateError('TG_INPUT_RESPONSES_INVALID', `inputResponses.${key} ${problem} (a ${method} result)`),
        );
      }
      answers[key] = responses[key];
    }
    return { request, answers, ...(opened.task === undefined ? {} : { task: opened.task }) };
  }

  /**
   * The input_required answer asking `requests`: each one of a kind MCP defines and the client
   * declared (else -32021 naming the capability: a server must not send what the client cannot
   * answer), with the state of this round's answers. With `task`, the requests are a durable
   * task's, parked for them: the state names it (and carries no answers: the task keeps those).
   */
  ask(
    round: Round,
    requests: Readonly<Record<string, InputRequest>>,
    context: RequestContext,
    who: string,
    task?: string,
  ): MethodOutcome {
    const problem = inputCapabilityProblem(Object.values(requests), context.clientCapabilities);
    if (problem?.kind === 'unknown') {
      return internal(
        `${who} asked for input with method ${JSON.stringify(problem.method)}, which MCP does not define`,
      );
    }
    if (problem?.kind === 'missing') {
      return missingCapability(problem.missing, `${who} needs input this request's client capabilities do not offer`);
    }
    const requestState = this.#sealer.seal({
      principal: context.tenantId,
      request: round.request(),
      answers: task === undefined ? round.answers : {},
      asked: Object.fromEntries(Object.entries(requests).map(([key, request]) => [key, request.method])),
      ...(task === undefined ? {} : { task }),
    });
    if (requestState === null) return internal(`${who}: the answers gathered are too large to carry in requestState`);
    return { kind: 'result', result: { resultType: 'input_required', inputRequests: requests, requestState } };
  }
}

/** Why `given` is not an inputResponses object (of objects), or null. */
export function responsesProblem(given: unknown): string | null {
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    return 'inputResponses must be an object of the client results by input request key';
  }
  for (const [key, value] of Object.entries(given)) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return `inputResponses.${key} must be an object (the client's result for that request)`;
    }
  }
  return null;
}

function internal(message: string): MethodOutcome {
  return { kind: 'error', httpStatus: 200, error: { code: ErrorCode.InternalError, message } };
}

/**
 * Asks the client one input request on the request's connection (a handshake revision's
 * context.askClient): only kinds the client declared at initialize (a server must not send what
 * the client cannot answer). `who` names the asker in the refusal. Undefined without a connection
 * to ask on.
 */
export function clientAsker(
  context: RequestContext,
  who: string,
): ((request: InputRequest, signal: AbortSignal) => Promise<unknown>) | undefined {
  const ask = context.askClient;
  if (!ask) return undefined;
  return (request, signal) => {
    const problem = inputCapabilityProblem([request], context.clientCapabilities);
    if (problem?.kind === 'unknown') {
      return Promise.reject(
        new Error(`${who} asked for input with method ${request.method}, which MCP does not define`),
      );
    }
    if (problem?.kind === 'missing') {
      const capability = Object.keys(problem.missing).join(', ');
      return Promise.reject(
        new ClientCapabilityMissing(
          `${who} needs ${request.method}, and the client did not declare ${capability} at initialize`,
          problem.missing,
        ),
      );
    }
    const sent = onTheWire(request);
    return ask(sent.method, sent.params, signal);
  };
}
