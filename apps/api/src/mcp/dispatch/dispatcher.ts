import {
  type Capabilities,
  checkMetaFields,
  checkRequestMetadata,
  ErrorCode,
  HANDSHAKE_VERSIONS,
  type JsonRpcId,
  LATEST_PROTOCOL_VERSION,
  type LogLevel,
  type RequestHeaders,
  type RevisionHints,
  requestRevisionKind,
} from '@taskgate/protocol';
import type { McpCore } from '../core/mcp-core.ts';
import type { MethodOutcome } from '../core/outcomes.ts';
import type { RequestContext } from '../core/request-context.ts';
import type { ServerIdentity } from '../core/server-info.ts';
import { stoppedCallError } from '../core/server-stopping.ts';
import type { ListenSink, ListenSubscription, SubscriptionSet } from '../core/subscriptions.ts';
import { batchRefusal } from './batch-answer.ts';
import { hasMetaVersion, type Initialized, initialize } from './initialize.ts';
import { type RequestScope, type RunRequest, type RunStream, runRequest } from './request-runner.ts';

/** What a connection's initialize settled, which its later requests speak (handshake revisions). */
export interface Handshake {
  readonly revision: string;
  /** What the client declared at initialize (a handshake revision declares once per connection). */
  readonly clientCapabilities?: Capabilities | undefined;
  /** logging/setLevel's level for the connection's requests; null: none set. */
  readonly logLevel: LogLevel | null;
  /** logging/setLevel: keeps the level for the connection's later requests. Absent: nowhere to keep it. */
  readonly setLogLevel?: (level: LogLevel) => Promise<void> | void;
  /** The connection's resources/subscribe set. Absent: no stream to notify on. */
  readonly resourceSubscriptions?: SubscriptionSet;
  /**
   * A -32042 of a request sent the client these URL elicitations: kept with the session, for a
   * later completion to reach it (POST /v1/elicitations/{id}/complete). Absent: nowhere to keep them.
   */
  readonly onUrlElicitations?: (elicitationIds: readonly string[]) => Promise<void>;
  /**
   * A task the connection created (a tools/call with the revision's `task` param): the connection
   * follows its status on a stream of its own (a pipe's stdout). Absent: a tasks/result that
   * waits for the task carries its status changes on its own response instead.
   */
  readonly onTaskCreated?: (taskId: string) => void;
}

/** One connection as its transport holds it: a stdio pipe, an HTTP+SSE stream, a session's POSTs, one POST. */
export interface Connection {
  readonly tenantId: string;
  /** Its requests in flight: one terminal state per id, the aborts a cancel reaches, its requests to the client. */
  readonly scope: RequestScope;
  /** What the connection says of its revision's kind: it initialized, or a session or a version header names one. */
  readonly hints: RevisionHints;
  /** The handshake it speaks; null before initialize (and for requests that carry their own revision). */
  readonly handshake: Handshake | null;
  /**
   * Keeps what an initialize settled (a pipe its revision; HTTP stores a session and names it in
   * a header) before the answer is sent; a pipe keeps it at once, so its next line speaks it.
   * Absent: initialize cannot open a connection here.
   */
  readonly open?: (opened: Initialized) => Promise<void> | void;
  /**
   * The HTTP request's headers, for 2026-07-28's checks of a request against its headers (the
   * mirrored Mcp-Method and Mcp-Name, a tool's Mcp-Param-*): as Node joins them, and each with
   * its values apart. Absent (stdio): only the per-request `_meta` fields are checked.
   */
  readonly http?: { readonly headers: RequestHeaders; readonly distinct: () => RequestHeaders };
  readonly log: (fields: Record<string, unknown>, message: string) => void;
}

/** How a request ended, as its transport writes it. */
export type RequestAnswer =
  /** Its answer; a failure's headers (Retry-After on a 503) with it, for a transport that has headers. */
  | { readonly kind: 'answer'; readonly outcome: MethodOutcome; readonly headers?: Readonly<Record<string, string>> }
  /** Cancelled by the client (notifications/cancelled, a closed stream or pipe): nothing is sent for it. */
  | { readonly kind: 'cancelled' };

/** subscriptions/listen on a request's stream: where its messages go, and its start once accepted. */
export interface ListenStream {
  readonly sink: ListenSink;
  /** The subscription was accepted: its acknowledgement and notifications follow on the stream. */
  start(subscription: ListenSubscription): void;
}

/**
 * One request's stream, as its transport writes it: the HTTP response of its POST (JSON, or SSE
 * once something goes before the answer), or the pipe, or its place in a batch's answer. What it
 * sends before its answer, and its `gone` and `stopping` signals, are the request runner's.
 */
export interface RequestStream extends RunStream {
  /** Part of a JSON-RPC batch, whose revision it speaks (initialize and per-request versions may not be in one). */
  readonly batched?: boolean;
  /**
   * The request runs (a method of its revision's, not the connection's lifecycle): a transport
   * may start what only a running request needs (HTTP's switch to SSE after a while).
   */
  running?(): void;
  end(answer: RequestAnswer): void;
  /**
   * subscriptions/listen: the stream is the subscription's from now on (`watched`: task ids in
   * its filter). Absent: the request has no stream of its own to give it (an element of a batch).
   */
  listen?(watched: number): ListenStream;
}

/**
 * The one protocol path of a request, whichever transport it came on. The transport turns bytes
 * into a message and its connection's closing into a cancel; the dispatcher decides the rest:
 * which revision the request speaks (requestRevisionKind), the lifecycle of a handshake connection
 * (initialize, ping, nothing before initialize), 2026-07-28's per-request checks, batches'
 * limits, subscriptions/listen, and the context every other method runs with through the
 * request runner (one terminal state per request: its answer or its cancel).
 */
export class McpDispatcher {
  readonly #core: McpCore;
  readonly #server: ServerIdentity;

  constructor(core: McpCore, server: ServerIdentity) {
    this.#core = core;
    this.#server = server;
  }

  /**
   * One request of `connection`. Answered synchronously where nothing need be awaited (a refusal,
   * ping, a pipe's initialize), so a client that uses the id again at once finds it settled.
   */
  request(
    id: JsonRpcId,
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    connection: Connection,
    stream: RequestStream,
  ): void {
    const { requests } = connection.scope;
    const begun = requests.begin(id, method);
    if (!begun.ok) {
      stream.end({ kind: 'answer', outcome: refused(`request id ${JSON.stringify(id)} is already in use`, 200) });
      return;
    }
    const generation = begun.generation;
    // The stream ends once, whatever else goes wrong.
    let ended = false;
    const end = (outcome: RequestAnswer) => {
      if (ended) return;
      ended = true;
      stream.end(outcome);
    };
    const answer: Answer = (outcome, headers) => {
      if (requests.complete(id, generation) === 'drop') end({ kind: 'cancelled' });
      else end(headers ? { kind: 'answer', outcome, headers } : { kind: 'answer', outcome });
    };
    // A bug of ours, not the client's (a check that threw, a stream that could not write): logged,
    // and the request still ends with an error — unanswered, it would hold its id and its stream
    // (an HTTP response hijacked already, a pipe whose end waits for it) for good.
    const failed = (error: unknown) => {
      connection.log(
        { requestId: id, method, error: error instanceof Error ? error.message : String(error) },
        'an MCP request failed outside its method',
      );
      try {
        answer(INTERNAL_ERROR);
      } catch {
        // The stream cannot write even that: it is ended (and logged) as far as it can be.
      }
    };
    try {
      this.#dispatch(id, method, params, connection, stream, { generation, answer, end, failed });
    } catch (error) {
      failed(error);
    }
  }

  #dispatch(
    id: JsonRpcId,
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    connection: Connection,
    stream: RequestStream,
    settle: {
      readonly generation: number;
      readonly answer: Answer;
      readonly end: (answer: RequestAnswer) => void;
      readonly failed: (error: unknown) => void;
    },
  ): void {
    const { answer, end, failed } = settle;
    if (stream.batched && (method === 'initialize' || hasMetaVersion(params))) {
      // The batch is its revision's; initialize must not be batched (basic/lifecycle), and a
      // request versioned by its own _meta is of a revision without batches.
      answer(
        refused(
          method === 'initialize'
            ? 'initialize must not be part of a JSON-RPC batch'
            : 'a request with a per-request protocol version cannot be part of a JSON-RPC batch',
        ),
      );
      return;
    }
    const kind = requestRevisionKind(method, params, connection.hints);
    const handshake = kind === 'handshake' ? connection.handshake : null;
    if (kind === 'handshake' && method === 'initialize') {
      this.#initialize(params, connection, stream, answer, failed);
      return;
    }
    if (kind === 'handshake' && !handshake) {
      answer(
        refused(
          connection.hints.sticky
            ? 'this connection is not initialized: send initialize first (a stream opened again is a new connection)'
            : `send initialize first, or ${LATEST_PROTOCOL_VERSION} per-request _meta`,
        ),
      );
      return;
    }
    // A handshake connection's ping (basic/utilities/ping), answered at once; 2026-07-28 has none.
    if (handshake && method === 'ping') {
      answer({ kind: 'result', result: {} });
      return;
    }
    let context: RunRequest['context'];
    let created: string | null = null;
    if (handshake) {
      context = {
        tenantId: connection.tenantId,
        revisionKind: kind,
        revision: handshake.revision,
        ...(handshake.clientCapabilities ? { clientCapabilities: handshake.clientCapabilities } : {}),
        logLevel: handshake.logLevel,
        ...(handshake.setLogLevel ? { setLogLevel: handshake.setLogLevel } : {}),
        ...(handshake.resourceSubscriptions ? { resourceSubscriptions: handshake.resourceSubscriptions } : {}),
        ...(handshake.onUrlElicitations ? { onUrlElicitations: handshake.onUrlElicitations } : {}),
        ...(handshake.onTaskCreated
          ? {
              // Followed once the answer that names it goes out, not for a request cancelled
              // meanwhile: its client never heard of the task.
              onTaskCreated: (taskId: string) => {
                created = taskId;
              },
            }
          : { onTaskStatus: (notification: Record<string, unknown>) => stream.send(notification, 'status') }),
        log: connection.log,
      };
    } else {
      const metadata = connection.http
        ? checkRequestMetadata(connection.http.headers, method, params)
        : checkMetaFields(params);
      if (!metadata.ok) {
        answer({ kind: 'error', httpStatus: metadata.httpStatus, error: metadata.error });
        return;
      }
      const { clientCapabilities, logLevel } = metadata.metadata;
      if (method === 'subscriptions/listen') {
        this.#listen(id, params, { tenantId: connection.tenantId, clientCapabilities }, stream, answer);
        return;
      }
      context = {
        tenantId: connection.tenantId,
        revisionKind: kind,
        clientCapabilities,
        logLevel: logLevel ?? null,
        headers: connection.http?.distinct,
        log: connection.log,
      };
    }
    const { scope } = connection;
    stream.running?.();
    void runRequest(id, method, params, {
      core: this.#core,
      begun: settle.generation,
      // Only a handshake revision's request asks its client on its connection (2026-07-28 asks in rounds).
      scope: handshake || !scope.clientRequests ? scope : { requests: scope.requests, controllers: scope.controllers },
      context,
      stream,
    })
      .then((ran) => {
        if (ran.kind === 'answer') {
          if (created !== null) handshake?.onTaskCreated?.(created);
          end(ran);
        } else if (ran.kind === 'stopped') {
          // Ended by the server stopping, its request-mode task cancelled: a definitive, retryable
          // answer (the client would otherwise wait on it until its own timeout).
          end({
            kind: 'answer',
            outcome: { kind: 'error', httpStatus: 503, error: stoppedCallError(method) },
            headers: { 'retry-after': '1' },
          });
        } else end({ kind: 'cancelled' });
      })
      .catch(failed);
  }

  /**
   * Why a JSON-RPC batch of `count` messages is refused as a whole on `connection`, or null: before
   * initialize (which must not be batched), or in a revision without batches. `unit` is what a
   * client sends instead ("line", "POST").
   */
  batchRefusal(connection: Connection, count: number, unit: string): string | null {
    if (!connection.handshake) return 'a JSON-RPC batch cannot come before initialize, which must not be batched';
    return batchRefusal(connection.handshake.revision, count, unit);
  }

  /**
   * initialize (basic/lifecycle "Initialization", "Version Negotiation"): the client's revision
   * when it is served, else the latest handshake revision. The connection keeps what it settled
   * before the answer goes: at once on a pipe, after the session is stored on HTTP.
   */
  #initialize(
    params: Readonly<Record<string, unknown>> | undefined,
    connection: Connection,
    stream: RequestStream,
    answer: Answer,
    failed: (error: unknown) => void,
  ): void {
    if (!connection.open) {
      answer(refused('initialize cannot open a connection here'));
      return;
    }
    const opened = initialize(params, this.#server);
    const result: MethodOutcome = { kind: 'result', result: opened.result };
    let kept: Promise<void> | void;
    try {
      kept = connection.open(opened);
    } catch (error) {
      this.#fail(error, stream, answer);
      return;
    }
    if (!(kept instanceof Promise)) {
      answer(result);
      return;
    }
    kept
      .then(
        () => answer(result),
        (error: unknown) => this.#fail(error, stream, answer),
      )
      .catch(failed);
  }

  /** The connection could not keep what initialize settled (its session store is down): the failure, as any request's. */
  #fail(error: unknown, stream: RequestStream, answer: Answer): void {
    const failure = stream.failure(error);
    answer({ kind: 'error', httpStatus: failure.status, error: failure.error }, failure.headers);
  }

  /**
   * subscriptions/listen (2026-07-28): the subscription runs on the request's stream until one
   * side ends it; a filter it cannot serve is refused as any request is.
   */
  #listen(
    id: JsonRpcId,
    params: Readonly<Record<string, unknown>> | undefined,
    context: { readonly tenantId: string; readonly clientCapabilities: Capabilities },
    stream: RequestStream,
    answer: Answer,
  ): void {
    if (!stream.listen) {
      answer(refused('subscriptions/listen needs a request of its own: its stream is the subscription'));
      return;
    }
    const taskIds = (params?.notifications as { taskIds?: unknown } | undefined)?.taskIds;
    const listening = stream.listen(Array.isArray(taskIds) ? taskIds.length : 0);
    const opened = this.#core.listen(
      params,
      { ...context, signal: new AbortController().signal } satisfies RequestContext,
      id,
      listening.sink,
    );
    if ('kind' in opened) answer(opened);
    else listening.start(opened);
  }
}

/**
 * What a POST says of its revision's kind: a session id, or the MCP-Protocol-Version header of a handshake
 * revision. On HTTP either is the request's own word, even over a per-request version in _meta.
 */
export function postedHints(sessionId: string | undefined, versionHeader: string | undefined): RevisionHints {
  const named = versionHeader !== undefined && HANDSHAKE_VERSIONS.includes(versionHeader);
  return { handshake: sessionId !== undefined || named, sticky: true, versionHeader };
}

/** Whether a request on a connection with these `hints` speaks a handshake revision (on HTTP: a session's). */
export function speaksHandshake(
  method: string,
  params: Readonly<Record<string, unknown>> | undefined,
  hints: RevisionHints,
): boolean {
  return requestRevisionKind(method, params, hints) === 'handshake';
}

/**
 * Why a batch POST is refused before its session is looked up, or null: the revision its
 * MCP-Protocol-Version names — the latest, with neither a header nor a session — has no batches.
 */
export function postedBatchRefusal(sessionId: string | undefined, versionHeader: string | undefined): string | null {
  const version = versionHeader ?? (sessionId === undefined ? LATEST_PROTOCOL_VERSION : undefined);
  if (version === undefined || HANDSHAKE_VERSIONS.includes(version)) return null;
  return `JSON-RPC batches are not part of MCP-Protocol-Version ${version}: send one message per POST`;
}

/** What a request gets when the dispatcher itself failed on it (a bug): never left unanswered. */
const INTERNAL_ERROR: MethodOutcome = {
  kind: 'error',
  httpStatus: 500,
  error: { code: ErrorCode.InternalError, message: 'internal error' },
};

/** Answers a request the dispatcher settles itself, unless a cancel won the race. */
type Answer = (outcome: MethodOutcome, headers?: Readonly<Record<string, string>>) => void;

/** A -32600 refusal (HTTP 400 unless told). */
function refused(message: string, httpStatus = 400): MethodOutcome {
  return { kind: 'error', httpStatus, error: { code: ErrorCode.InvalidRequest, message } };
}
