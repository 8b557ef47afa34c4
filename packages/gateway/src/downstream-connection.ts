import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { backoffDelay } from '@taskgate/reliability';
import {
  type DownstreamSession,
  type HttpDownstream,
  httpSession,
  isProtocolError,
  type StdioDownstream,
  stdioSession,
} from './downstream-session.ts';
import { callAsTask } from './downstream-task.ts';
import { trackedTransport } from './wire-tracking.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export type { HttpDownstream, StdioDownstream };

export interface DownstreamOptions {
  /** The gateway's name: in errors, logs and metrics. */
  readonly name: string;
  /** Exactly one of the two: a subprocess speaking MCP on stdio, or a Streamable HTTP server. */
  readonly stdio?: StdioDownstream;
  readonly http?: HttpDownstream;
  /** The longest a start (spawn or connect, initialize, tools/list) may take (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Restarts after a crash: the first after this long, doubling up to maxDelayMs, jittered. */
  readonly restart?: { readonly firstDelayMs?: number; readonly maxDelayMs?: number };
  /** How long a downstream task may take to end after its tasks/cancel (default 5 s). */
  readonly taskCancelGraceMs?: number;
  readonly log: { readonly info: LogFn; readonly warn: LogFn };
  /** Its tools changed (notifications/tools/list_changed): the new list. */
  readonly onToolsChanged?: (tools: readonly Tool[]) => void;
  /**
   * Downstream work still running a grace period after its cancel (+1), and its end (-1): a task
   * the downstream had not ended `taskCancelGraceMs` after its tasks/cancel, watched until it does.
   */
  readonly onOrphan?: (event: { readonly tool: string; readonly label: string; readonly delta: 1 | -1 }) => void;
  /** A call failed for a reason of the downstream's (for the errors counter). */
  readonly onError?: (kind: DownstreamErrorKind) => void;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** How a downstream failed a call, as `taskgate_downstream_errors_total{kind}` counts it. */
export type DownstreamErrorKind = 'unavailable' | 'gone' | 'task_ended' | 'error_response';

/** Why a downstream call failed in a way the caller's task should say plainly. */
export class DownstreamError extends Error {
  readonly code: 'TG_DOWNSTREAM_GONE' | 'TG_DOWNSTREAM_UNAVAILABLE' | 'TG_DOWNSTREAM_TASK_ENDED';
  readonly server: string;
  /** The downstream's task, when the call was answered with one. */
  readonly taskId: string | undefined;
  constructor(code: DownstreamError['code'], server: string, message: string, taskId?: string) {
    super(message);
    this.name = 'DownstreamError';
    this.code = code;
    this.server = server;
    this.taskId = taskId;
  }
}

/** Where a call came from, carried in the request's _meta so the id map can name it. */
const CALL_META = 'dev.taskgate/call';
/** Which call of this connection a request is (the task's label may repeat). */
const REQUEST_META = 'dev.taskgate/request';

/** What the id map holds for one downstream request (or task) while it lives. */
export interface InFlightRequest {
  /** The JSON-RPC id of the gateway's tools/call, or the downstream's task id for a task. */
  readonly requestId: string | number;
  readonly kind: 'request' | 'task';
  readonly label: string;
  readonly sentAt: number;
  /** Which start of the downstream sent it: a connection's end clears only its own. */
  readonly generation: number;
  /** Which call of the connection sent it (absent for a task's entry). */
  readonly sequence?: number;
}

/**
 * One downstream MCP server, as a worker holds it: a client of the official SDK over a
 * subprocess's stdio (ProcessTransport: its own process group, ended by the server's exit) or over
 * Streamable HTTP, started on demand and again after a crash or a broken connection (with
 * backoff), and an id map of the requests it has in flight. The map is read off the wire
 * (trackedTransport): a request enters when it is sent, and leaves when its response arrives,
 * when its cancel is sent or its request stream aborted, when its send fails, or when the
 * connection it went out on ends. A call the downstream answered with a task stays in the map as
 * that task until the task ends there.
 */
export class DownstreamConnection {
  readonly #options: DownstreamOptions;
  readonly #inFlight = new Map<string, InFlightRequest>();
  #session: DownstreamSession | null = null;
  #starting: Promise<DownstreamSession> | null = null;
  #failures = 0;
  #retryAt = 0;
  #stderrTail = '';
  #closed = false;
  #generation = 0;
  #lastEnd: string | null = null;
  #tools: readonly Tool[] = [];
  #sequence = 0;
  #listing = 0;
  /** The signal of each call in flight, by its sequence number (REQUEST_META). */
  readonly #calls = new Map<number, AbortController>();
  readonly #generationOf = new WeakMap<DownstreamSession, number>();
  readonly #changedWhileStarting = new WeakSet<DownstreamSession>();

  constructor(options: DownstreamOptions) {
    if ((options.stdio === undefined) === (options.http === undefined)) {
      throw new TypeError(`downstream ${options.name}: give exactly one of stdio and http`);
    }
    this.#options = options;
  }

  get name(): string {
    return this.#options.name;
  }

  /** The id map: one entry per downstream request (or task) that is still alive. */
  get inFlight(): readonly InFlightRequest[] {
    return [...this.#inFlight.values()];
  }

  /** The tools the downstream listed at its last start (or change). */
  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /** Whether the downstream is connected now (a /readyz check): not down, not waiting to restart. */
  get connected(): boolean {
    return this.#session !== null;
  }

  /** Starts the downstream (if it is not running) and lists its tools. */
  async start(): Promise<readonly Tool[]> {
    await this.#connected();
    return this.#tools;
  }

  /**
   * Calls a downstream tool. `signal` is the task's: its abort becomes the downstream's own
   * signal: notifications/cancelled with the id of the gateway's request (stdio, 2025-era HTTP),
   * the close of the request's stream (2026-07-28 HTTP), or tasks/cancel for a call the
   * downstream answered with a task (asked for when the downstream's tool declares task support
   * and `asTask` is set). Progress comes back through `onProgress`. No timeout of its own: the
   * task's clocks bound the call (their stop aborts `signal`).
   */
  async call(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    options: {
      readonly signal: AbortSignal;
      readonly label: string;
      readonly asTask?: boolean;
      readonly onProgress?: (progress: number, total?: number, message?: string) => void;
    },
  ): Promise<CallToolResult> {
    options.signal.throwIfAborted();
    // A stop while the downstream starts ends the wait at once (a start may take its whole timeout).
    let session: DownstreamSession;
    try {
      session = await abortable(this.#connected(), options.signal);
    } catch (error) {
      if (error instanceof DownstreamError) this.#options.onError?.('unavailable');
      throw error;
    }
    this.#sequence += 1;
    const sequence = this.#sequence;
    const meta = { [CALL_META]: options.label, [REQUEST_META]: String(sequence) };
    const generation = this.#generationOf.get(session) ?? this.#generation;
    // The call's own signal: the task's stop aborts it, and so does a response stream that ended
    // without the response. Unlinked when the call returns, so a task's signal (aborted when its
    // run ends, whatever ended it) sends nothing for a call that was already answered.
    const call = new AbortController();
    const stop = () => call.abort(options.signal.reason);
    options.signal.addEventListener('abort', stop, { once: true });
    // A stop between the connection's resolve and the listener above would be missed otherwise.
    if (options.signal.aborted) stop();
    this.#calls.set(sequence, call);
    try {
      if (options.asTask === true && session.tasks) {
        return await callAsTask(session, tool, { ...args }, meta, {
          signal: call.signal,
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          cancelGraceMs: this.#options.taskCancelGraceMs ?? 5_000,
          onTask: (taskId) =>
            this.#inFlight.set(`${generation}:task:${taskId}`, {
              requestId: taskId,
              kind: 'task',
              label: options.label,
              sentAt: (this.#options.now ?? Date.now)(),
              generation,
            }),
          onTaskEnd: (taskId) => this.#inFlight.delete(`${generation}:task:${taskId}`),
          onOrphan: (_taskId, delta) => this.#options.onOrphan?.({ tool, label: options.label, delta }),
          // Over HTTP the server lives on whatever became of this connection: only stdio's end is its end.
          connected: () => this.#session === session || this.#options.http !== undefined,
          ended: (taskId, status, message) =>
            new DownstreamError(
              'TG_DOWNSTREAM_TASK_ENDED',
              this.name,
              `downstream ${this.name} ended its task ${taskId} ${status} without a result${message ? `: ${message}` : ''}`,
              taskId,
            ),
        });
      }
      return await session.callTool(tool, { ...args }, meta, {
        signal: call.signal,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      const reason = call.signal.aborted ? call.signal.reason : error;
      if (reason instanceof DownstreamError) {
        this.#options.onError?.(reason.code === 'TG_DOWNSTREAM_TASK_ENDED' ? 'task_ended' : 'gone');
        throw reason;
      }
      if (this.#session !== session) {
        this.#options.onError?.('gone');
        // Its stderr is the operator's (it may hold secrets): logged when it ended, not told here.
        throw new DownstreamError(
          'TG_DOWNSTREAM_GONE',
          this.name,
          `downstream ${this.name} ${this.#lastEnd ?? 'ended'} while the call ran; whether the call took effect there is unknown${this.#options.stdio ? " (its stderr is in the worker's log)" : ''}`,
        );
      }
      const failure = this.#options.http === undefined ? null : httpFailure(error);
      if (failure !== null) {
        this.#options.onError?.('gone');
        if (failure.connection) {
          // Refused, unreachable, or no longer ours (credentials, session): connected again,
          // after the backoff, for the next call. Its details go to the log, not to the caller.
          this.#broken(session, (error as Error).message);
        }
        throw new DownstreamError(
          'TG_DOWNSTREAM_GONE',
          this.name,
          `downstream ${this.name} ${failure.said}; whether the call took effect there is unknown`,
        );
      }
      this.#options.onError?.('error_response');
      throw error;
    } finally {
      options.signal.removeEventListener('abort', stop);
      this.#calls.delete(sequence);
    }
  }

  /**
   * Resolves once the downstream is connected (starting it when it is not, within its backoff
   * rules); throws TG_DOWNSTREAM_UNAVAILABLE as a call would, with nothing sent.
   */
  async ready(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    try {
      await abortable(this.#connected(), signal);
    } catch (error) {
      if (error instanceof DownstreamError) this.#options.onError?.('unavailable');
      throw error;
    }
  }

  /** Whether calls may be made as tasks (a downstream tool that requires one needs this). */
  get taskCalls(): boolean {
    return this.#session?.tasks ?? this.#options.stdio !== undefined;
  }

  /** Stops the downstream (and a start under way) with its process group; calls in flight fail. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#starting?.catch(() => {});
    const session = this.#session;
    this.#session = null;
    await session?.close().catch(() => {});
  }

  #connected(): Promise<DownstreamSession> {
    if (this.#closed) {
      return Promise.reject(
        new DownstreamError('TG_DOWNSTREAM_UNAVAILABLE', this.name, `downstream ${this.name} is stopped`),
      );
    }
    if (this.#session !== null) return Promise.resolve(this.#session);
    const now = (this.#options.now ?? Date.now)();
    if (this.#starting === null && now < this.#retryAt) {
      const seconds = Math.ceil((this.#retryAt - now) / 1_000);
      return Promise.reject(
        new DownstreamError(
          'TG_DOWNSTREAM_UNAVAILABLE',
          this.name,
          `downstream ${this.name} is down and restarts in ${seconds} s (${this.#failures} failure(s) in a row)`,
        ),
      );
    }
    this.#starting ??= this.#start().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  async #start(): Promise<DownstreamSession> {
    const { stdio, http, log } = this.#options;
    this.#stderrTail = '';
    this.#generation += 1;
    const generation = this.#generation;
    const hooks = { onToolsChanged: () => this.#toolsChanged(session) };
    let endReason: () => string | null = () => null;
    let session: DownstreamSession;
    if (stdio !== undefined) {
      const started = stdioSession(stdio, defaultEnvironment(), {
        ...hooks,
        onStderr: (text) => {
          this.#stderrTail = (this.#stderrTail + text).slice(-1_000);
        },
      });
      endReason = () => started.transport.endReason;
      session = started;
    } else {
      session = httpSession(http as HttpDownstream, hooks);
    }
    const timeoutMs = this.#options.connectTimeoutMs ?? 10_000;
    let changedOnRestart = false;
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), timeoutMs);
    try {
      await session.connect((transport) => this.#tracked(transport, session, generation, endReason), {
        signal: timer.signal,
        timeoutMs,
      });
      const before = this.#tools;
      this.#tools = await session.listTools({ signal: timer.signal, timeoutMs });
      // A downstream restarted (or reconnected) with other tools than it had: as a list_changed.
      if (generation > 1 && JSON.stringify(before) !== JSON.stringify(this.#tools)) changedOnRestart = true;
    } catch (error) {
      await session.close().catch(() => {});
      this.#failed();
      log.warn({ gateway: this.name, stderr: this.#stderrTail.trim() }, 'downstream did not start');
      // An HTTP server's answer may echo what it was sent: callers get what it means, the log the rest.
      const said =
        http === undefined ? (error as Error).message : (httpFailure(error)?.said ?? (error as Error).message);
      log.warn({ gateway: this.name, error: (error as Error).message }, 'downstream start failed');
      throw new DownstreamError(
        'TG_DOWNSTREAM_UNAVAILABLE',
        this.name,
        `downstream ${this.name} did not start (${stdio?.command ?? withoutQuery(http?.url ?? '')}): ${said}`,
      );
    } finally {
      clearTimeout(timeout);
    }
    if (this.#closed) {
      // Stopped while it started (close() waits for this): the new server is not kept.
      await session.close().catch(() => {});
      throw new DownstreamError('TG_DOWNSTREAM_UNAVAILABLE', this.name, `downstream ${this.name} is stopped`);
    }
    this.#failures = 0;
    this.#generationOf.set(session, generation);
    this.#session = session;
    log.info({ gateway: this.name, at: session.where, tools: this.#tools.length }, 'downstream started');
    if (changedOnRestart) this.#options.onToolsChanged?.(this.#tools);
    if (this.#changedWhileStarting.delete(session)) void this.#toolsChanged(session);
    return session;
  }

  /** notifications/tools/list_changed: listed again, and said to whoever publishes the tools. */
  async #toolsChanged(session: DownstreamSession): Promise<void> {
    // Listings may answer out of order (each is its own POST over HTTP): only the latest counts.
    this.#listing += 1;
    const listing = this.#listing;
    if (this.#session !== session) {
      // Said while the session starts (between its initialize and its first listing being kept):
      // listed again once it has started, not lost.
      this.#changedWhileStarting.add(session);
      return;
    }
    try {
      const listed = await session.listTools({ timeoutMs: this.#options.connectTimeoutMs ?? 10_000 });
      if (this.#session !== session || listing !== this.#listing) return;
      // A server may say its list changed when it did not (server-everything does, after start).
      if (JSON.stringify(listed) === JSON.stringify(this.#tools)) return;
      this.#tools = listed;
      this.#options.onToolsChanged?.(listed);
    } catch (error) {
      this.#options.log.warn(
        { gateway: this.name, error: (error as Error).message },
        'downstream tools could not be listed again',
      );
    }
  }

  /** A crash or a failed start: the next start waits its backoff. */
  #failed(): void {
    this.#failures += 1;
    const delay = backoffDelay(
      this.#failures - 1,
      { baseMs: this.#options.restart?.firstDelayMs ?? 1_000, capMs: this.#options.restart?.maxDelayMs ?? 30_000 },
      this.#options.random ?? Math.random,
    );
    this.#retryAt = (this.#options.now ?? Date.now)() + delay;
  }

  /** A connection that failed under a call: dropped (its entries with it), restarted after the backoff. */
  #broken(session: DownstreamSession, reason: string): void {
    if (this.#session !== session) return;
    this.#session = null;
    this.#lastEnd = 'broke off';
    this.#failed();
    this.#options.log.warn(
      { gateway: this.name, reason },
      'downstream connection broke; it is started again on the next call, after its backoff',
    );
    // Closing ends the transport, whose close clears this connection's entries from the map.
    session.close().catch(() => {});
  }

  /**
   * The transport with the id map kept on its wire, and the connection's end noticed: whatever
   * ends it (the server exits, its output breaks the size limit, the gateway closes it), this
   * start's entries leave the map and the next call starts the downstream again.
   */
  #tracked(
    transport: Transport,
    session: DownstreamSession,
    generation: number,
    endReason: () => string | null,
  ): Transport {
    const now = this.#options.now ?? Date.now;
    // Keyed as the SDK matches responses (Number(id)): "02" and 2 are one request.
    const key = (id: string | number) => `${generation}:${Number(id)}`;
    return trackedTransport(transport, {
      sent: (id, meta) =>
        this.#inFlight.set(key(id), {
          requestId: id,
          kind: 'request',
          label: typeof meta?.[CALL_META] === 'string' ? (meta[CALL_META] as string) : '',
          sentAt: now(),
          generation,
          sequence: Number(meta?.[REQUEST_META]),
        }),
      settled: (id) => this.#inFlight.delete(key(id)),
      streamEnded: (id) => {
        const entry = this.#inFlight.get(key(id));
        if (entry === undefined) return;
        // Its stream is gone and its response never came: nothing more will. The call fails
        // alone; the connection serves the others.
        this.#inFlight.delete(key(id));
        this.#calls
          .get(entry.sequence ?? Number.NaN)
          ?.abort(
            new DownstreamError(
              'TG_DOWNSTREAM_GONE',
              this.name,
              `downstream ${this.name} ended the call's response stream before its response; whether the call took effect there is unknown`,
            ),
          );
      },
      closed: () => {
        for (const [entry, request] of this.#inFlight) {
          if (request.generation === generation) this.#inFlight.delete(entry);
        }
        if (this.#session === session) {
          this.#session = null;
          this.#lastEnd = endReason();
          if (!this.#closed) {
            this.#failed();
            this.#options.log.warn(
              { gateway: this.name, reason: this.#lastEnd, stderr: this.#stderrTail.trim() },
              'downstream ended; it restarts on the next call, after its backoff',
            );
          }
        }
      },
    });
  }
}

/**
 * What an HTTP downstream's failure says, when the failure is not the downstream's JSON-RPC
 * answer: `connection` when the connection itself is no longer good (unreachable, refused, the
 * credentials or the session no longer accepted), else the call alone failed (an HTTP error
 * status, a proxy's 502). Null for anything else (a result the SDK found malformed, an abort).
 */
function httpFailure(error: unknown): { readonly connection: boolean; readonly said: string } | null {
  if (isProtocolError(error)) return null;
  if (error instanceof TypeError) return { connection: true, said: 'could not be reached' };
  const code = (error as { code?: unknown }).code;
  const status = (error as { data?: { status?: unknown } }).data?.status;
  if (typeof status === 'number') {
    if (status === 401 || status === 403)
      return { connection: true, said: `refused the gateway's credentials (HTTP ${status})` };
    if (status === 404)
      return { connection: true, said: "no longer knows the gateway's session or endpoint (HTTP 404)" };
    return { connection: false, said: `answered the call with HTTP ${status}` };
  }
  if (code === 'CONNECTION_CLOSED' || code === 'SEND_FAILED' || code === 'NOT_CONNECTED') {
    return { connection: true, said: 'broke the connection off' };
  }
  return null;
}

/** A URL as errors may show it: no query (it may carry a key) and no fragment. */
function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(the url)';
  }
}

/** `promise`, or the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** What a downstream subprocess gets of the worker's environment: enough to run, no secrets. */
function defaultEnvironment(): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TMPDIR', 'TERM', 'USER', 'SHELL', 'LOGNAME']) {
    const value = process.env[name];
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}
