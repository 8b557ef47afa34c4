import {
  Client as HttpClient,
  ProtocolError as HttpProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { Client as StdioClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  McpError,
  ResultSchema,
  type Tool,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { ProcessTransport } from './process-transport.ts';

/** A downstream MCP server run as a subprocess that speaks MCP on its stdin and stdout. */
export interface StdioDownstream {
  readonly command: string;
  readonly args?: readonly string[];
  /** Added to a minimal environment (PATH, HOME…), never the worker's whole one: no secrets leak. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

/** A downstream MCP server reached over Streamable HTTP. */
export interface HttpDownstream {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly bearerToken?: string;
}

export interface RequestOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  readonly onProgress?: (progress: number, total?: number, message?: string) => void;
}

/**
 * One connection to a downstream, whichever its transport: the official SDK client that speaks
 * it, behind the few calls a gateway makes. Stdio downstreams get the v1 client (the 2025
 * revisions, with their tasks) over ProcessTransport; HTTP downstreams the v2 client, which
 * speaks 2026-07-28 (a request's cancel is the close of its response stream) and falls back to
 * the 2025 revisions' sessions when the server serves no newer one.
 */
export interface DownstreamSession {
  /** How the downstream is reached, for logs: its pid or its URL. */
  readonly where: string;
  /** Whether the downstream can be asked for a task (the 2025-11-25 task-augmented request). */
  readonly tasks: boolean;
  /** The transport to connect, wrapped as the caller likes (the id map sits on it). */
  connect(
    wrap: (transport: Transport) => Transport,
    options: { signal: AbortSignal; timeoutMs: number },
  ): Promise<void>;
  listTools(options: RequestOptions): Promise<Tool[]>;
  callTool(
    name: string,
    args: Record<string, unknown>,
    meta: Record<string, unknown>,
    options: RequestOptions,
  ): Promise<CallToolResult>;
  /** Any request, its result unchecked beyond being a JSON-RPC result (tasks/get, tasks/cancel…). */
  request(method: string, params: Record<string, unknown>, options: RequestOptions): Promise<Record<string, unknown>>;
  /** The client no longer needs what it kept for a finished task (its progress handler). */
  taskEnded(taskId: string): void;
  close(): Promise<void>;
}

/** The downstream's own JSON-RPC error (its answer), as opposed to the connection failing. */
export function isProtocolError(error: unknown): boolean {
  return error instanceof McpError || error instanceof HttpProtocolError;
}

/** Ours are the task's clocks; the SDKs' 60 s default would cut long calls short. */
const NO_TIMEOUT = 2_147_483_647;

function sdkOptions(options: RequestOptions) {
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    timeout: options.timeoutMs ?? NO_TIMEOUT,
    ...(options.onProgress
      ? {
          onprogress: (progress: { progress: number; total?: number; message?: string }) =>
            options.onProgress?.(progress.progress, progress.total, progress.message),
        }
      : {}),
  };
}

const CLIENT_INFO = { name: 'taskgate-gateway', version: '0.1.0' };

export function stdioSession(
  stdio: StdioDownstream,
  environment: Record<string, string>,
  hooks: { onStderr: (text: string) => void; onToolsChanged: () => void },
): DownstreamSession & { readonly transport: ProcessTransport } {
  const transport = new ProcessTransport({
    command: stdio.command,
    args: [...(stdio.args ?? [])],
    env: { ...environment, ...stdio.env },
    cwd: stdio.cwd,
    onStderr: hooks.onStderr,
  });
  const client = new StdioClient(CLIENT_INFO, { capabilities: {} });
  return {
    transport,
    get where() {
      return `pid ${transport.pid ?? '-'}`;
    },
    get tasks() {
      return client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined;
    },
    async connect(wrap, options) {
      await client.connect(wrap(transport), { signal: options.signal, timeout: options.timeoutMs });
      client.setNotificationHandler(ToolListChangedNotificationSchema, async () => hooks.onToolsChanged());
    },
    async listTools(options) {
      return (await client.listTools(undefined, sdkOptions(options))).tools;
    },
    async callTool(name, args, meta, options) {
      return (await client.callTool(
        { name, arguments: args, _meta: meta },
        undefined,
        sdkOptions(options),
      )) as CallToolResult;
    },
    async request(method, params, options) {
      return (await client.request(
        { method, params } as never,
        ResultSchema.passthrough(),
        sdkOptions(options),
      )) as Record<string, unknown>;
    },
    taskEnded(taskId) {
      // The v1 client keeps a task's progress handler until told (protected in the SDK's Protocol):
      // without this, every task-answered call would leave one behind for the connection's life.
      (client as unknown as { _cleanupTaskProgressHandler?: (id: string) => void })._cleanupTaskProgressHandler?.(
        taskId,
      );
    },
    close: () => client.close(),
  };
}

export function httpSession(http: HttpDownstream, hooks: { onToolsChanged: () => void }): DownstreamSession {
  const headers: Record<string, string> = { ...http.headers };
  if (http.bearerToken !== undefined) headers.Authorization = `Bearer ${http.bearerToken}`;
  const transport = new StreamableHTTPClientTransport(new URL(http.url), { requestInit: { headers } });
  const client = new HttpClient(CLIENT_INFO, {
    capabilities: {},
    versionNegotiation: { mode: 'auto' },
    // The SDK re-lists (over its listen stream on 2026-07-28, from the notification on older
    // revisions); the gateway re-lists itself, so it only needs to hear of the change.
    listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => hooks.onToolsChanged() } },
  });
  return {
    where: http.url,
    // Tasks over HTTP are left to a later change: the v2 client's tasks are the extension's.
    tasks: false,
    async connect(wrap, options) {
      await client.connect(
        wrap(transport as unknown as Transport) as never,
        {
          signal: options.signal,
          timeout: options.timeoutMs,
        } as never,
      );
    },
    async listTools(options) {
      return (await client.listTools(undefined, sdkOptions(options))).tools as Tool[];
    },
    async callTool(name, args, meta, options) {
      return (await client.callTool({ name, arguments: args, _meta: meta }, sdkOptions(options))) as CallToolResult;
    },
    async request(method, params, options) {
      return (await client.request({ method, params } as never, sdkOptions(options) as never)) as Record<
        string,
        unknown
      >;
    },
    taskEnded() {},
    close: () => client.close(),
  };
}
