import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  type JSONRPCMessage,
  type Tool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { backoffDelay } from '@taskgate/reliability';
import { ProcessTransport } from './process-transport.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** A downstream MCP server run as a subprocess that speaks MCP on its stdin and stdout. */
export interface StdioDownstream {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to a minimal environment (PATH, HOME…), never the worker's whole one: no secrets leak. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

export interface DownstreamOptions {
  /** The gateway's name: in errors, logs and metrics. */
  readonly name: string;
  readonly stdio: StdioDownstream;
  /** The longest a start (spawn, initialize, tools/list) may take (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** Restarts after a crash: the first after this long, doubling up to maxDelayMs, jittered. */
  readonly restart?: { readonly firstDelayMs?: number; readonly maxDelayMs?: number };
  readonly log: { readonly info: LogFn; readonly warn: LogFn };
  /** Its tools changed (notifications/tools/list_changed): the new list. */
  readonly onToolsChanged?: (tools: readonly Tool[]) => void;
  readonly now?: () => number;
  readonly random?: () => number;
}

/** Why a downstream call failed in a way the caller's task should say plainly. */
export class DownstreamError extends Error {
  readonly code: 'TG_DOWNSTREAM_GONE' | 'TG_DOWNSTREAM_UNAVAILABLE';
  readonly server: string;
  constructor(code: DownstreamError['code'], server: string, message: string) {
    super(message);
    this.name = 'DownstreamError';
    this.code = code;
    this.server = server;
  }
}

/** Where a call came from, carried in the request's _meta so the id map can name it. */
const CALL_META = 'dev.taskgate/call';

/** What the id map holds for one downstream request while it lives. */
export interface InFlightRequest {
  readonly requestId: string | number;
  readonly label: string;
  readonly sentAt: number;
  /** Which start of the downstream sent it: a connection's end clears only its own. */
  readonly generation: number;
}

/**
 * One downstream MCP server, as a worker holds it: a client of the official SDK over a
 * subprocess's stdio (ProcessTransport: its own process group, ended by the server's exit),
 * started on demand and again after a crash (with backoff), and an id map of the requests it has
 * in flight. The map is read off the wire: a request enters when it is sent, and leaves when its
 * response arrives, when its cancel is sent (the spec's receiver does not answer a cancelled
 * request, so nothing more will come for it), when its send fails, or when the connection it went
 * out on ends.
 */
export class DownstreamConnection {
  readonly #options: DownstreamOptions;
  readonly #inFlight = new Map<string, InFlightRequest>();
  #client: Client | null = null;
  #starting: Promise<Client> | null = null;
  #failures = 0;
  #retryAt = 0;
  #stderrTail = '';
  #closed = false;
  #generation = 0;
  #lastEnd: string | null = null;
  #tools: readonly Tool[] = [];

  constructor(options: DownstreamOptions) {
    this.#options = options;
  }

  get name(): string {
    return this.#options.name;
  }

  /** The id map: one entry per downstream request that is still alive. */
  get inFlight(): readonly InFlightRequest[] {
    return [...this.#inFlight.values()];
  }

  /** The tools the downstream listed at its last start (or change). */
  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /** Starts the downstream (if it is not running) and lists its tools. */
  async start(): Promise<readonly Tool[]> {
    await this.#connected();
    return this.#tools;
  }

  /**
   * Calls a downstream tool. `signal` is the task's: its abort becomes the downstream's own
   * notifications/cancelled, with the id of the gateway's request (the SDK client's). Progress
   * comes back through `onProgress`. No timeout of its own: the task's clocks bound the call
   * (their stop aborts `signal`).
   */
  async call(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    options: {
      readonly signal: AbortSignal;
      readonly label: string;
      readonly onProgress?: (progress: number, total?: number, message?: string) => void;
    },
  ): Promise<CallToolResult> {
    options.signal.throwIfAborted();
    // A stop while the downstream starts ends the wait at once (a start may take its whole timeout).
    const client = await abortable(this.#connected(), options.signal);
    try {
      return (await client.callTool(
        { name: tool, arguments: { ...args }, _meta: { [CALL_META]: options.label } },
        undefined,
        {
          signal: options.signal,
          // Ours are the task's clocks; the SDK's own 60 s default would cut long calls short.
          timeout: 2_147_483_647,
          ...(options.onProgress
            ? {
                onprogress: (progress: { progress: number; total?: number; message?: string }) =>
                  options.onProgress?.(progress.progress, progress.total, progress.message),
              }
            : {}),
        },
      )) as CallToolResult;
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason;
      if (this.#client !== client) {
        // Its stderr is the operator's (it may hold secrets): logged when it ended, not told here.
        throw new DownstreamError(
          'TG_DOWNSTREAM_GONE',
          this.name,
          `downstream ${this.name} ${this.#lastEnd ?? 'ended'} while the call ran; whether the call took effect there is unknown (its stderr is in the worker's log)`,
        );
      }
      throw error;
    }
  }

  /** Stops the downstream (and a start under way) with its process group; calls in flight fail. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#starting?.catch(() => {});
    const client = this.#client;
    this.#client = null;
    await client?.close().catch(() => {});
  }

  #connected(): Promise<Client> {
    if (this.#closed) {
      return Promise.reject(
        new DownstreamError('TG_DOWNSTREAM_UNAVAILABLE', this.name, `downstream ${this.name} is stopped`),
      );
    }
    if (this.#client !== null) return Promise.resolve(this.#client);
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

  async #start(): Promise<Client> {
    const { stdio, log } = this.#options;
    this.#stderrTail = '';
    this.#generation += 1;
    const generation = this.#generation;
    const transport = new ProcessTransport({
      command: stdio.command,
      args: [...(stdio.args ?? [])],
      env: { ...defaultEnvironment(), ...stdio.env },
      cwd: stdio.cwd,
      onStderr: (text) => {
        this.#stderrTail = (this.#stderrTail + text).slice(-1_000);
      },
    });
    const client = new Client({ name: 'taskgate-gateway', version: '0.1.0' }, { capabilities: {} });
    const tracked = this.#tracked(transport, client, generation);
    const timeoutMs = this.#options.connectTimeoutMs ?? 10_000;
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), timeoutMs);
    try {
      await client.connect(tracked, { signal: timer.signal, timeout: timeoutMs });
      const listed = await client.listTools(undefined, { signal: timer.signal, timeout: timeoutMs });
      this.#tools = listed.tools;
    } catch (error) {
      await client.close().catch(() => {});
      this.#failed();
      log.warn({ gateway: this.name, stderr: this.#stderrTail.trim() }, 'downstream did not start');
      throw new DownstreamError(
        'TG_DOWNSTREAM_UNAVAILABLE',
        this.name,
        `downstream ${this.name} did not start (${stdio.command}): ${(error as Error).message}`,
      );
    } finally {
      clearTimeout(timeout);
    }
    if (this.#closed) {
      // Stopped while it started (close() waits for this): the new server is not kept.
      await client.close().catch(() => {});
      throw new DownstreamError('TG_DOWNSTREAM_UNAVAILABLE', this.name, `downstream ${this.name} is stopped`);
    }
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      try {
        this.#tools = (await client.listTools()).tools;
        this.#options.onToolsChanged?.(this.#tools);
      } catch (error) {
        log.warn({ gateway: this.name, error: (error as Error).message }, 'downstream tools could not be listed again');
      }
    });
    this.#failures = 0;
    this.#client = client;
    log.info({ gateway: this.name, pid: transport.pid, tools: this.#tools.length }, 'downstream started');
    return client;
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

  /**
   * The transport with the id map kept on its wire, and the connection's end noticed: whatever
   * ends it (the server exits, its output breaks the size limit), this start's entries leave the
   * map and the next call restarts the server.
   */
  #tracked(transport: ProcessTransport, client: Client, generation: number): Transport {
    const connection = this;
    const now = this.#options.now ?? Date.now;
    // Keyed as the SDK matches responses (Number(id)): "02" and 2 are one request.
    const key = (id: unknown) => `${generation}:${Number(id)}`;
    const forget = (id: unknown) => {
      if (typeof id === 'string' || typeof id === 'number') connection.#inFlight.delete(key(id));
    };
    const wrapped: Transport = {
      start: () => transport.start(),
      close: () => transport.close(),
      async send(message: JSONRPCMessage) {
        const sent = message as { id?: unknown; method?: string; params?: Record<string, unknown> };
        const isCall = sent.method === 'tools/call' && (typeof sent.id === 'string' || typeof sent.id === 'number');
        if (isCall) {
          const meta = sent.params?._meta as Record<string, unknown> | undefined;
          connection.#inFlight.set(key(sent.id), {
            requestId: sent.id as string | number,
            label: typeof meta?.[CALL_META] === 'string' ? (meta[CALL_META] as string) : '',
            sentAt: now(),
            generation,
          });
        } else if (sent.method === 'notifications/cancelled') {
          forget(sent.params?.requestId);
        }
        try {
          await transport.send(message);
        } catch (error) {
          // Never sent: nothing downstream works on it.
          if (isCall) forget(sent.id);
          throw error;
        }
      },
    };
    transport.onmessage = (message) => {
      const received = message as { id?: unknown; method?: string; result?: unknown; error?: unknown };
      if (received.method === undefined && ('result' in received || 'error' in received)) forget(received.id);
      wrapped.onmessage?.(message);
    };
    transport.onerror = (error) => wrapped.onerror?.(error);
    transport.onclose = () => {
      for (const [entry, request] of connection.#inFlight) {
        if (request.generation === generation) connection.#inFlight.delete(entry);
      }
      if (connection.#client === client) {
        connection.#client = null;
        connection.#lastEnd = transport.endReason;
        if (!connection.#closed) {
          connection.#failed();
          connection.#options.log.warn(
            { gateway: connection.name, reason: transport.endReason, stderr: connection.#stderrTail.trim() },
            'downstream ended; it restarts on the next call, after its backoff',
          );
        }
      }
      wrapped.onclose?.();
    };
    return wrapped;
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
