import type { Readable, Writable } from 'node:stream';
import {
  type Capabilities,
  ErrorCode,
  errorResponse,
  type JsonRpcId,
  type LogLevel,
  parseJsonText,
} from '@taskgate/protocol';
import { type CancelSignal, RequestCoordinator, requestIdKey, StopSignalError } from '@taskgate/reliability';
import type { McpCore } from '../../core/mcp-core.ts';
import type { ListKind } from '../../core/request-context.ts';
import type { ServerIdentity } from '../../core/server-info.ts';
import { resultJson } from '../../core/shared-results.ts';
import type { ListenSink, ListenSubscription, ResourceSubscriptions } from '../../core/subscriptions.ts';
import { BatchAnswer } from '../../dispatch/batch-answer.ts';
import { ClientRequests } from '../../dispatch/client-requests.ts';
import { type Connection, type ListenStream, McpDispatcher, type RequestStream } from '../../dispatch/dispatcher.ts';
import { honourCancel, readMessage } from '../../dispatch/incoming.ts';
import { rpcFailure } from '../rpc-failures.ts';
import {
  invalidUtf8LineResponse,
  lineRefusal,
  oversizedLineResponse,
  readStdioLines,
  STDIO_MAX_MESSAGE_BYTES,
} from './stdio-lines.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface StreamConnectionOptions {
  readonly core: McpCore;
  /**
   * Newline-delimited messages; its end is the client's. Absent, messages come by receive() and
   * the client's going by end() (the HTTP+SSE transport: POSTed messages, a closed GET stream).
   */
  readonly input?: Readable;
  readonly output: Writable;
  /** stdio has no bearer token: the tenant of everything on this pipe. */
  readonly tenantId: string;
  readonly server: ServerIdentity;
  readonly logger: { readonly debug: LogFn; readonly warn: LogFn };
  /**
   * True once for each response a StdioFront already sent (initialize, server/discover, ping
   * answered before this server existed): the request is handled as usual, its response dropped.
   */
  readonly answered?: (id: JsonRpcId) => boolean;
  /**
   * The server is stopping: requests still in flight are ended as the HTTP transport ends them
   * (a task handed over where the client can take it, else a retryable -31503), not cancelled.
   */
  readonly stopping?: AbortSignal;
  /**
   * Every request is of the handshake revision initialize negotiated (the HTTP+SSE transport's
   * connections): a per-request _meta version does not make one 2026-07-28's.
   */
  readonly handshakeOnly?: boolean;
}

/**
 * MCP over stdio (basic/transports/stdio): newline-delimited JSON-RPC on stdin and stdout. There
 * is no stream per request, so a cancel is a `notifications/cancelled {requestId, reason}`: the
 * request is cancelled, its task too, and no response is sent for it. Malformed, unknown,
 * duplicate and already-completed cancels are ignored without a reply (logged at debug only).
 * The end of stdin cancels every request still in flight. The HTTP+SSE transport's connections
 * (transports/http/sse-transport.ts) are this server too: their messages come by receive() and their end by end().
 */
export class StreamConnection {
  readonly #options: StreamConnectionOptions;
  readonly #requests = new RequestCoordinator();
  /** The abort of each request (and listen) in flight, which a cancel or the end of stdin reaches. */
  readonly #controllers = new Map<string, AbortController>();
  /** What each request in flight settles with: the end of stdin waits for them all. */
  readonly #inFlight = new Set<Promise<void>>();
  readonly #closed: Promise<void>;
  #resolveClosed!: () => void;
  #ended = false;
  readonly #listens = new Map<ListenSubscription, () => void>();
  /** 2025-11-25 tasks this pipe created, watched for their status notifications; null until the first. */
  #statusWatch: { add(taskId: string): void; stop(): void } | null = null;
  /**
   * What initialize settled: the revision the pipe speaks (until a request carries its own in
   * _meta) and what the client declared. null before initialize.
   */
  #handshake: { readonly revision: string; readonly clientCapabilities: Capabilities | undefined } | null = null;
  /** The pipe's resources/subscribe set (handshake revisions), made on first use. */
  #resources: ResourceSubscriptions | null = null;
  /** Requests this server sent the client on this pipe, awaiting the client's responses. */
  readonly #clientRequests = new ClientRequests();
  /** The pipe's logging/setLevel (handshake revisions); null until the client sets one. */
  #logLevel: LogLevel | null = null;
  /** A 2025-11-25 client hears of tool list changes from initialize on; null until then. */
  #unsubscribeTools: (() => void) | null = null;
  /** List-changed notifications held for the pipe to drain: one per list, however many changes. */
  readonly #listsChangedPending = new Set<ListKind>();
  /** resources/updated that found stdout full, latest per URI: written once it drains. */
  readonly #heldUpdates = new Map<string, unknown>();
  /** This pipe's requests: a handshake revision's may ask the client. */
  readonly #scope = { requests: this.#requests, controllers: this.#controllers, clientRequests: this.#clientRequests };
  readonly #dispatcher: McpDispatcher;

  constructor(options: StreamConnectionOptions) {
    this.#options = options;
    this.#dispatcher = new McpDispatcher(options.core, options.server);
    this.#closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    if (options.input) {
      readStdioLines(options.input, {
        maxLineBytes: STDIO_MAX_MESSAGE_BYTES,
        onLine: (line) => this.#onLine(line),
        onOversized: () => this.#write(oversizedLineResponse()),
        onInvalidUtf8: () => this.#write(invalidUtf8LineResponse()),
        onEnd: () => this.end('stdin closed', 'stream_close'),
      });
    }
  }

  /** Resolves when stdin has ended and every request has settled (answered or cancelled). */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Resolves once every request in flight now has settled (answered, cancelled or stopped). */
  settled(): Promise<void> {
    return Promise.allSettled([...this.#inFlight]).then(() => undefined);
  }

  /**
   * A message that came other than as a line (a POST of the HTTP+SSE transport), already decoded:
   * handled as its line would be. Ignored once the client is gone.
   */
  receive(value: unknown): void {
    if (this.#ended) return;
    try {
      if (Array.isArray(value)) this.#onBatch(value);
      else this.#onMessage(value, null);
    } catch (error) {
      this.#options.logger.warn({ error: (error as Error).message }, 'an MCP message could not be handled');
    }
  }

  /**
   * The client is gone (stdin ended, its SSE stream closed): every request still in flight is
   * cancelled, its task too, and `closed` resolves once they have all settled.
   */
  end(reason: string, signal: CancelSignal = 'shutdown'): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#unsubscribeTools?.();
    this.#unsubscribeTools = null;
    const cancelled = this.#requests.cancelAll(reason);
    for (const id of cancelled) this.#controllers.get(requestIdKey(id))?.abort(new StopSignalError(signal, reason));
    void this.settled().then(() => this.#resolveClosed());
  }

  #onLine(line: string): void {
    try {
      this.#onDecodedLine(line);
    } catch (error) {
      // Whatever a client writes, the pipe serves on: a failure here is a bug to log, not an exit.
      this.#options.logger.warn({ error: (error as Error).message }, 'an MCP line could not be handled');
    }
  }

  #onDecodedLine(line: string): void {
    if (line.trim() === '' || this.#ended) return;
    // The reading a POST /mcp body gets (parseJsonText), refused as it is: no id, the line is not read.
    const parsed = parseJsonText(line);
    if (!parsed.ok) {
      this.#write(errorResponse(null, lineRefusal(parsed.problem)));
      return;
    }
    const value = parsed.value;
    if (Array.isArray(value)) this.#onBatch(value);
    else this.#onMessage(value, null);
  }

  /**
   * A batch line, where the pipe's revision has batches (after its initialize): each element is
   * handled as a line of its own would be, and the responses go out together as one array. In any
   * other revision (and before initialize, which must not be batched) the line is one -32600.
   */
  #onBatch(elements: unknown[]): void {
    const refused = this.#dispatcher.batchRefusal(this.#connection(), elements.length, 'line');
    if (refused !== null) {
      this.#write(errorResponse(null, { code: ErrorCode.InvalidRequest, message: refused }));
      return;
    }
    const batch = new BatchAnswer((line) => this.#options.output.write(`${line}\n`));
    for (const element of elements) this.#onMessage(element, batch);
    batch.seal();
  }

  /** One message, on a line of its own or in a batch (whose answer collects its response). */
  #onMessage(value: unknown, batch: BatchAnswer | null): void {
    const message = readMessage(value);
    switch (message.kind) {
      case 'invalid':
      case 'unstorable':
        // A notification has no one to answer.
        if (message.kind === 'unstorable' && message.notification) {
          this.#options.logger.debug({ code: message.error.code }, 'ignored a notification with unstorable content');
          return;
        }
        this.#send(errorResponse(message.id, message.error), batch);
        return;
      case 'response':
        // An answer to a request this server sent (elicitation/create, ...); any other is ignored.
        this.#clientRequests.answer(value as Record<string, unknown>);
        return;
      case 'notification':
        if (message.method === 'notifications/cancelled') this.#onCancelled(message.params);
        return;
      case 'request':
        this.#onRequest(message.id, message.method, message.params, batch);
    }
  }

  /** A response written now, or kept for its batch's answer. */
  #send(response: unknown, batch: BatchAnswer | null): void {
    if (batch) batch.add(JSON.stringify(response));
    else this.#write(response);
  }

  #onCancelled(params: unknown): void {
    const honoured = honourCancel(this.#scope, params);
    if (!honoured) this.#options.logger.debug({}, 'ignored a malformed notifications/cancelled');
    else if (!honoured.decision.cancelled) {
      this.#options.logger.debug(
        { requestId: honoured.cancel.requestId, why: honoured.decision.why },
        'ignored a cancellation',
      );
    }
  }

  #onRequest(
    id: JsonRpcId,
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    batch: BatchAnswer | null = null,
  ): void {
    this.#dispatcher.request(id, method, params, this.#connection(), this.#stream(id, batch));
  }

  /** The pipe as the dispatcher sees it, for one request: what its initialize settled so far. */
  #connection(): Connection {
    const handshakeOnly = this.#options.handshakeOnly === true;
    const handshake = this.#handshake;
    return {
      tenantId: this.#options.tenantId,
      scope: this.#scope,
      // One client per pipe: once it initialized, the pipe speaks that revision, except for
      // requests that carry 2026-07-28's per-request _meta (not on HTTP+SSE, handshake only).
      hints: { handshake: handshake !== null || handshakeOnly, sticky: handshakeOnly },
      handshake:
        handshake === null
          ? null
          : {
              ...handshake,
              logLevel: this.#logLevel,
              setLogLevel: (level: LogLevel) => {
                this.#logLevel = level;
              },
              resourceSubscriptions: this.#resourceSubscriptions(),
              onTaskCreated: (taskId: string) => this.#watchLegacyTask(taskId),
            },
      open: (opened) => {
        this.#handshake = { revision: opened.revision, clientCapabilities: opened.clientCapabilities };
        // stdio is one stream both ways: a handshake revision's notifications/*/list_changed go on
        // it whenever a list changes (the initialize result declares listChanged).
        this.#unsubscribeTools ??= this.#options.core.onListChanged((kind) => this.#listChanged(kind));
      },
      log: (fields, message) => this.#options.logger.warn(fields, message),
    };
  }

  /**
   * A request's place on the pipe: its progress and log messages go out unless stdout is full,
   * its requests to the client always, and its answer on a line of its own or in its batch's.
   * The end of stdin waits until it has ended.
   */
  #stream(id: JsonRpcId, batch: BatchAnswer | null): RequestStream {
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    this.#inFlight.add(settled);
    const done = () => {
      this.#inFlight.delete(settled);
      settle();
    };
    batch?.expect();
    return {
      // Progress and log messages are best effort: dropped rather than queued behind a full
      // pipe. A request to the client is always written: the handler waits for its answer.
      send: (message, kind) => (kind === 'ask' ? this.#write(message) : this.#writeProgress(message)),
      ...(this.#options.stopping ? { stopping: this.#options.stopping } : {}),
      batched: batch !== null,
      failure: (error) => {
        const failure = rpcFailure(error);
        this.#options.logger.warn(
          { requestId: id, error: error instanceof Error ? error.message : String(error), code: failure.taskgateCode },
          'an MCP request failed',
        );
        return failure;
      },
      end: (answer) => {
        done();
        // Cancelled (no answer), or answered already by a StdioFront: nothing more is written.
        if (answer.kind === 'cancelled' || this.#options.answered?.(id)) {
          batch?.settle(null);
          return;
        }
        const { outcome } = answer;
        // A shared result (tools/list) goes out as its cached JSON.
        const json =
          outcome.kind === 'result' ? resultJson(id, outcome.result) : JSON.stringify(errorResponse(id, outcome.error));
        if (batch) batch.settle(json);
        else this.#options.output.write(`${json}\n`);
      },
      listen: () => this.#listen(id, done),
    };
  }

  /**
   * subscriptions/listen on stdio: the subscription's messages share stdout with everything else,
   * each carrying its subscriptionId. `notifications/cancelled` for the listen id, or the end of
   * stdin, stops it without a reply; shutdown() ends it with its result and a
   * notifications/cancelled for the listen id.
   */
  #listen(id: JsonRpcId, done: () => void): ListenStream {
    // While stdout is full, only the newest undelivered message per key is kept.
    const held = new Map<string, Record<string, unknown>>();
    const output = this.#options.output;
    const flush = () => {
      for (const [key, message] of held) {
        if (output.writableNeedDrain) return;
        held.delete(key);
        this.#write(message);
      }
    };
    const sink: ListenSink = {
      push: (message, key) => {
        if (output.writableNeedDrain || held.size > 0) {
          held.delete(key);
          held.set(key, message);
          return;
        }
        this.#write(message);
      },
      finish: (message) => {
        flush();
        held.clear();
        if (this.#requests.complete(id) !== 'drop') this.#write(message);
        this.#write({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: id, reason: 'the server ended the subscription' },
        });
      },
    };
    const start = (opened: ListenSubscription) => {
      output.on('drain', flush);
      const controller = new AbortController();
      const stop = () => {
        opened.stop();
        output.off('drain', flush);
        this.#controllers.delete(requestIdKey(id));
        this.#listens.delete(opened);
        done();
      };
      controller.signal.addEventListener('abort', stop, { once: true });
      this.#controllers.set(requestIdKey(id), controller);
      this.#listens.set(opened, stop);
      opened.start().catch((error: unknown) => {
        const failure = rpcFailure(error);
        this.#options.logger.warn(
          { requestId: id, error: error instanceof Error ? error.message : String(error), code: failure.taskgateCode },
          'subscriptions/listen failed to start',
        );
        stop();
        // Its answer is the failure (503 in an outage), and its id is free again.
        if (this.#requests.complete(id) !== 'drop') this.#write(errorResponse(id, failure.error));
      });
    };
    return { sink, start };
  }

  /** The pipe's resources/subscribe set; notifications/resources/updated go on the pipe. Stops with it. */
  #resourceSubscriptions(): ResourceSubscriptions {
    if (!this.#resources) {
      const subscriptions = this.#options.core.resourceSubscriptions(this.#options.tenantId, (message) =>
        this.#writeUpdate(message),
      );
      this.#resources = subscriptions;
      void this.#closed.then(() => subscriptions.stop());
    }
    return this.#resources;
  }

  /**
   * notifications/tasks/status for a task this connection created with 2025-11-25's `task` param:
   * the full Task on every status change until it ends (tasks.mdx "Task Status Notification"; a
   * client must not rely on them, and polls or waits on tasks/result as well). Stops with the pipe.
   */
  #watchLegacyTask(taskId: string): void {
    if (!this.#statusWatch) {
      const revision = this.#handshake?.revision;
      if (revision === undefined) return;
      const watch = this.#options.core.watchStatus(this.#options.tenantId, revision, (notification) =>
        this.#write(notification),
      );
      if (!watch) return;
      this.#statusWatch = watch;
      void this.#closed.then(() => watch.stop());
    }
    this.#statusWatch.add(taskId);
  }

  /**
   * notifications/resources/updated: a resource that changes faster than the client reads costs
   * one held message per URI (it says "read me again"; the latest says it as well as all).
   */
  #writeUpdate(message: Record<string, unknown>): void {
    const output = this.#options.output;
    if (!output.writableNeedDrain && this.#heldUpdates.size === 0) {
      this.#write(message);
      return;
    }
    const key = String((message.params as { uri?: unknown } | undefined)?.uri);
    this.#heldUpdates.delete(key);
    this.#heldUpdates.set(key, message);
    if (this.#heldUpdates.size === 1) output.once('drain', () => this.#flushUpdates());
  }

  #flushUpdates(): void {
    const output = this.#options.output;
    for (const [key, message] of this.#heldUpdates) {
      if (output.writableNeedDrain) {
        output.once('drain', () => this.#flushUpdates());
        return;
      }
      this.#heldUpdates.delete(key);
      this.#write(message);
    }
  }

  #listChanged(kind: ListKind): void {
    const output = this.#options.output;
    if (!output.writableNeedDrain) {
      this.#write({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed` });
      return;
    }
    if (this.#listsChangedPending.has(kind)) return;
    this.#listsChangedPending.add(kind);
    output.once('drain', () => {
      this.#listsChangedPending.delete(kind);
      this.#listChanged(kind);
    });
  }

  /** Ends every subscription gracefully (its result, then notifications/cancelled), e.g. on SIGTERM. */
  shutdown(): void {
    this.#unsubscribeTools?.();
    this.#unsubscribeTools = null;
    for (const [subscription, stop] of this.#listens) {
      subscription.endGracefully();
      stop();
    }
  }

  /**
   * Progress is replaceable: while the client is not reading (stdout's buffer is full), updates
   * are dropped instead of queued, so a stalled reader costs no memory; the response is always written.
   */
  #writeProgress(notification: unknown): void {
    if (this.#options.output.writableNeedDrain) return;
    this.#write(notification);
  }

  #write(message: unknown): void {
    this.#options.output.write(`${JSON.stringify(message)}\n`);
  }
}
