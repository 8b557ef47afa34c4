import {
  type AuthProvider,
  Client as HttpClient,
  type OAuthClientProvider,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  CallToolResultSchema,
  type GetPromptResult,
  type Implementation,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  ResultSchema,
  type ServerCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { TASKS_EXTENSION } from '@taskgate/protocol';

/** An MCP server run as a subprocess speaking MCP on its stdin and stdout. */
export interface StdioTarget {
  readonly command: string;
  readonly args?: readonly string[];
  /** The child's whole environment (default: the SDK's minimal one, PATH and HOME, no secrets). */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /**
   * Where the child's stderr goes: this process's (the default), nowhere, or to a function as it
   * arrives. Never a pipe nobody reads: a child that fills one (64 KiB of logs) blocks.
   */
  readonly stderr?: 'inherit' | 'ignore' | ((text: string) => void);
  /**
   * `auto` (default): the newest revision both sides speak — 2026-07-28 when the server answers
   * `server/discover` with it, else the handshake (`initialize`, 2025-11-25 or older), as over
   * HTTP; `session`: the handshake only.
   */
  readonly revision?: 'auto' | 'session';
}

/** A Streamable HTTP endpoint (Taskgate's is `<base>/mcp`). */
export interface HttpTarget {
  readonly url: string;
  /**
   * `auto` (default): the per-request revision (2026-07-28) when the server serves it — a call's
   * cancel is the close of its own response stream — else a handshake-revision session (2025-11-25,
   * the cancel a POSTed notification); `session`: the session only.
   */
  readonly revision?: 'auto' | 'session';
  /** A static bearer token, sent on every request. */
  readonly token?: string;
  /**
   * Or the SDK's providers: an OAuth client (`OAuthClientProvider`: it obtains, refreshes and
   * sends the token) or a bare `AuthProvider` (`token()` before every request).
   */
  readonly authProvider?: OAuthClientProvider | AuthProvider;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface SdkRequestOptions {
  readonly signal: AbortSignal;
  readonly timeout: number;
  readonly onprogress: (progress: { progress: number; total?: number; message?: string }) => void;
}

/**
 * The official SDK client that speaks a target's transport, behind the few calls the client
 * makes: v2 over stdio and HTTP (2026-07-28 where the server has it, with the handshake revisions
 * as the fallback), v1 over a transport made elsewhere. Each SDK does its transport's cancel on abort.
 */
export interface SdkSession {
  connect(wrap: (transport: Transport) => Transport, timeoutMs: number): Promise<void>;
  readonly serverInfo: Implementation | undefined;
  readonly capabilities: ServerCapabilities | undefined;
  readonly protocolVersion: string | undefined;
  listTools(cursor: string | undefined, options: SdkRequestOptions): Promise<{ tools: Tool[]; nextCursor?: string }>;
  callTool(name: string, args: Record<string, unknown>, options: SdkRequestOptions): Promise<CallToolResult>;
  listPrompts(
    cursor: string | undefined,
    options: SdkRequestOptions,
  ): Promise<{ prompts: Prompt[]; nextCursor?: string }>;
  getPrompt(name: string, args: Record<string, string>, options: SdkRequestOptions): Promise<GetPromptResult>;
  listResources(
    cursor: string | undefined,
    options: SdkRequestOptions,
  ): Promise<{ resources: Resource[]; nextCursor?: string }>;
  listResourceTemplates(
    cursor: string | undefined,
    options: SdkRequestOptions,
  ): Promise<{ resourceTemplates: ResourceTemplate[]; nextCursor?: string }>;
  readResource(uri: string, options: SdkRequestOptions): Promise<ReadResourceResult>;
  request(
    method: string,
    params: Record<string, unknown>,
    options: SdkRequestOptions,
  ): Promise<Record<string, unknown>>;
  onError(handler: (error: Error) => void): void;
  /**
   * Why the connection is gone, once it is (a stdio server that exited, a closed client), so a
   * request after that fails at once saying so; null while it is up.
   */
  readonly ended: string | null;
  close(): Promise<void>;
}

export function stdioSession(target: StdioTarget, clientInfo: Implementation): SdkSession {
  const transport = new StdioClientTransport({
    command: target.command,
    args: [...(target.args ?? [])],
    ...(target.env ? { env: { ...target.env } } : {}),
    ...(target.cwd ? { cwd: target.cwd } : {}),
    stderr: typeof target.stderr === 'function' ? 'pipe' : (target.stderr ?? 'inherit'),
  });
  const onStderr = target.stderr;
  if (typeof onStderr === 'function') {
    // The transport's own PassThrough, there from construction: read from the first byte.
    transport.stderr?.on('data', (chunk: Buffer) => onStderr(chunk.toString('utf8')));
  }
  const describeEnd = () => {
    const pid = transport.pid;
    return `the stdio server ${JSON.stringify(target.command)}${pid === null ? '' : ` (pid ${pid})`} has ended`;
  };
  // The client's wrap makes the transport one the SDK does not know, so its server/discover
  // probe goes on this pipe (no second process); a server without it answers -32601 or stays
  // silent, and the handshake follows.
  return v2Session(transport as unknown as Transport, v2Client(clientInfo, target.revision, STDIO_PROBE_MS), {
    describeEnd,
    // Read before the transport forgets its child (pid is null once it has exited).
    refreshEnd: true,
  });
}

/** Over a transport made elsewhere (an in-memory pair, a socket), with the v1 client. */
export function v1Session(
  transport: Transport,
  clientInfo: Implementation,
  describeEnd: () => string = () => 'the connection to the server has ended',
): SdkSession {
  const client = new V1Client(clientInfo, { capabilities: {} });
  // The v1 client keeps the negotiated revision nowhere but in the transport's
  // setProtocolVersion, which only its HTTP transport has: a stdio connection's would be lost,
  // and with it everything that depends on the revision (2025-11-25's task-augmented calls).
  let negotiated: string | undefined;
  const carrier = transport as Transport & { setProtocolVersion?: (version: string) => void };
  if (carrier.setProtocolVersion === undefined) {
    carrier.setProtocolVersion = (version) => {
      negotiated = version;
    };
  }
  let ended: string | null = null;
  // Read before the transport forgets its child (pid is null once it has exited).
  let endLine = describeEnd();
  client.onclose = () => {
    ended = endLine;
  };
  return {
    async connect(wrap, timeoutMs) {
      await client.connect(wrap(transport), { timeout: timeoutMs });
      endLine = describeEnd();
    },
    get ended() {
      return ended;
    },
    get serverInfo() {
      return client.getServerVersion();
    },
    get capabilities() {
      return client.getServerCapabilities();
    },
    get protocolVersion() {
      return negotiated ?? (transport as { protocolVersion?: string }).protocolVersion;
    },
    listTools: (cursor, options) => client.listTools(cursor === undefined ? undefined : { cursor }, options),
    callTool: async (name, args, options) =>
      (await client.callTool({ name, arguments: args }, CallToolResultSchema, options)) as CallToolResult,
    listPrompts: (cursor, options) => client.listPrompts(cursor === undefined ? undefined : { cursor }, options),
    getPrompt: (name, args, options) => client.getPrompt({ name, arguments: args }, options),
    listResources: (cursor, options) => client.listResources(cursor === undefined ? undefined : { cursor }, options),
    listResourceTemplates: (cursor, options) =>
      client.listResourceTemplates(cursor === undefined ? undefined : { cursor }, options),
    readResource: (uri, options) => client.readResource({ uri }, options),
    request: async (method, params, options) =>
      (await client.request({ method, params } as never, ResultSchema.passthrough(), options)) as Record<
        string,
        unknown
      >,
    onError(handler) {
      client.onerror = handler;
    },
    close: () => client.close(),
  };
}

export function httpSession(target: HttpTarget, clientInfo: Implementation): SdkSession {
  const headers: Record<string, string> = { ...target.headers };
  if (target.token !== undefined) headers.Authorization = `Bearer ${target.token}`;
  const transport = new StreamableHTTPClientTransport(new URL(target.url), {
    requestInit: { headers },
    // The SDK would resume a dropped SSE stream with Last-Event-ID: this client does not rely on
    // resumption (2026-07-28 has none; a reconnect is a new request and a refetch), so none is sent.
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 1_000,
      maxReconnectionDelay: 30_000,
      reconnectionDelayGrowFactor: 2,
    },
    ...(target.authProvider ? { authProvider: target.authProvider } : {}),
  });
  return v2Session(transport as unknown as Transport, v2Client(clientInfo, target.revision), {
    describeEnd: () => `the connection to ${target.url} was closed`,
    refreshEnd: false,
  });
}

/**
 * The v2 client: the Tasks extension declared (a server may answer a tools/call with a task, which
 * the client watches), and the revision negotiated with server/discover unless `session` says
 * the handshake only.
 */
function v2Client(
  clientInfo: Implementation,
  revision: 'auto' | 'session' | undefined,
  probeTimeoutMs?: number,
): HttpClient {
  return new HttpClient(clientInfo, {
    capabilities: { extensions: { [TASKS_EXTENSION]: {} } } as never,
    versionNegotiation: {
      mode: revision === 'session' ? 'legacy' : 'auto',
      ...(probeTimeoutMs === undefined ? {} : { probe: { timeoutMs: probeTimeoutMs } }),
    },
  });
}

/**
 * A stdio server that ignores an unknown request before initialize is a handshake server (the
 * SDK falls back when its probe times out there): it is not waited for as long as a request.
 */
const STDIO_PROBE_MS = 5_000;

function v2Session(
  transport: Transport,
  client: HttpClient,
  end: { readonly describeEnd: () => string; readonly refreshEnd: boolean },
): SdkSession {
  let ended: string | null = null;
  let endLine = end.describeEnd();
  client.onclose = () => {
    ended = end.refreshEnd ? endLine : end.describeEnd();
  };
  return {
    async connect(wrap, timeoutMs) {
      await client.connect(wrap(transport) as never, { timeout: timeoutMs } as never);
      if (end.refreshEnd) endLine = end.describeEnd();
    },
    get ended() {
      return ended;
    },
    get serverInfo() {
      return client.getServerVersion() as Implementation | undefined;
    },
    get capabilities() {
      return client.getServerCapabilities() as ServerCapabilities | undefined;
    },
    get protocolVersion() {
      return client.getNegotiatedProtocolVersion();
    },
    listTools: async (cursor, options) =>
      (await client.listTools(cursor === undefined ? undefined : { cursor }, options as never)) as {
        tools: Tool[];
        nextCursor?: string;
      },
    callTool: async (name, args, options) =>
      (await client.callTool({ name, arguments: args }, options as never)) as CallToolResult,
    listPrompts: async (cursor, options) =>
      (await client.listPrompts(cursor === undefined ? undefined : { cursor }, options as never)) as {
        prompts: Prompt[];
        nextCursor?: string;
      },
    getPrompt: async (name, args, options) =>
      (await client.getPrompt({ name, arguments: args }, options as never)) as GetPromptResult,
    listResources: async (cursor, options) =>
      (await client.listResources(cursor === undefined ? undefined : { cursor }, options as never)) as {
        resources: Resource[];
        nextCursor?: string;
      },
    listResourceTemplates: async (cursor, options) =>
      (await client.listResourceTemplates(cursor === undefined ? undefined : { cursor }, options as never)) as {
        resourceTemplates: ResourceTemplate[];
        nextCursor?: string;
      },
    readResource: async (uri, options) => (await client.readResource({ uri }, options as never)) as ReadResourceResult,
    request: async (method, params, options) =>
      (await client.request({ method, params } as never, options as never)) as Record<string, unknown>,
    onError(handler) {
      client.onerror = handler;
    },
    close: () => client.close(),
  };
}
