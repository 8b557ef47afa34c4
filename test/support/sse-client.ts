import http from 'node:http';
import { waitForTask } from './task-platform.ts';

export interface SseClient {
  /** The response's status, once the headers arrived. */
  readonly status: Promise<number>;
  /** Every `data:` message, parsed, in order. */
  readonly messages: Record<string, unknown>[];
  /** The same, each with its `event:` name (`message` when it has none). */
  readonly events: { readonly event: string; readonly data: Record<string, unknown> }[];
  /** Every message, once `predicate` holds for them. */
  until(
    predicate: (messages: Record<string, unknown>[]) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
  /** Resolves when the server ends the stream (or it is closed). */
  readonly ended: Promise<void>;
  /**
   * The first event id (a 2025-11-25 GET stream's priming event comes once the server has
   * attached the stream to its session): waiting for it orders a test after the attach.
   */
  readonly firstId: Promise<string>;
  close(): void;
}

/** An SSE response over a raw socket (a listen POST, a 2025-11-25 GET stream): its messages as they arrive. */
export function openSse(
  url: URL,
  request: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
): SseClient {
  const messages: Record<string, unknown>[] = [];
  const events: { event: string; data: Record<string, unknown> }[] = [];
  let text = '';
  let resolveStatus!: (status: number) => void;
  const status = new Promise<number>((resolve) => {
    resolveStatus = resolve;
  });
  let resolveFirstId!: (id: string) => void;
  const firstId = new Promise<string>((resolve) => {
    resolveFirstId = resolve;
  });
  const outgoing = http.request({
    host: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    method: request.method,
    headers: {
      ...request.headers,
      ...(request.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(request.body)) }),
    },
  });
  outgoing.on('error', () => {});
  const ended = new Promise<void>((resolve) => {
    outgoing.on('close', () => resolve());
    outgoing.on('response', (response) => {
      resolveStatus(response.statusCode ?? 0);
      response.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const frames = text.split('\n\n');
        text = frames.pop() ?? '';
        for (const frame of frames) {
          const id = frame
            .split('\n')
            .find((line) => line.startsWith('id: '))
            ?.slice(4);
          if (id !== undefined) resolveFirstId(id);
          const data = frame
            .split('\n')
            .find((line) => line.startsWith('data: '))
            ?.slice(6);
          if (data !== undefined && data !== '') {
            const parsed = JSON.parse(data);
            messages.push(parsed);
            const event = frame
              .split('\n')
              .find((line) => line.startsWith('event: '))
              ?.slice(7);
            events.push({ event: event ?? 'message', data: parsed });
          }
        }
      });
      response.on('end', () => resolve());
    });
  });
  outgoing.end(request.body);
  return {
    status,
    messages,
    events,
    ended,
    firstId,
    until: (predicate, timeoutMs = 20_000) => waitForTask(async () => messages, predicate, timeoutMs),
    close: () => outgoing.destroy(),
  };
}

/** A 2026-07-28 subscriptions/listen on `mcpUrl`, with the given notification filter. */
export function listenStream(mcpUrl: URL, id: string, notifications: Record<string, unknown>): SseClient {
  return openSse(mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: {
        notifications,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  });
}

/** A connection of the HTTP+SSE transport (2024-11-05): its stream's events, and POSTs to its endpoint. */
export interface SseConnection {
  readonly status: number;
  /** The POST URL the stream's first event named. */
  readonly endpoint: URL;
  /** Every `message` event's data, parsed, in order. */
  readonly messages: Record<string, unknown>[];
  until(
    predicate: (messages: Record<string, unknown>[]) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>[]>;
  /** POSTs one message (or any body) to the endpoint; resolves with the response. */
  post(body: unknown, headers?: Record<string, string>): Promise<{ status: number; text: string }>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens `GET sseUrl` and waits for its `endpoint` event. */
export async function openSseConnection(sseUrl: URL, headers: Record<string, string> = {}): Promise<SseConnection> {
  const abort = new AbortController();
  const response = await fetch(sseUrl, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  if (response.status !== 200) throw new Error(`GET ${sseUrl} answered ${response.status}: ${await response.text()}`);
  const messages: Record<string, unknown>[] = [];
  let resolveEndpoint!: (endpoint: URL) => void;
  const endpoint = new Promise<URL>((resolve) => {
    resolveEndpoint = resolve;
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    let text = '';
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        text += decoder.decode(chunk.value, { stream: true });
        const frames = text.split('\n\n');
        text = frames.pop() ?? '';
        for (const frame of frames) {
          const lines = frame.split('\n');
          const event = lines.find((line) => line.startsWith('event: '))?.slice(7) ?? 'message';
          const data = lines.find((line) => line.startsWith('data: '))?.slice(6);
          if (data === undefined) continue;
          if (event === 'endpoint') resolveEndpoint(new URL(data, sseUrl));
          else messages.push(JSON.parse(data));
        }
      }
    } catch {
      // Closed by the test.
    }
  })();
  const url = await endpoint;
  return {
    status: response.status,
    endpoint: url,
    messages,
    until: (predicate, timeoutMs = 20_000) => waitForTask(async () => messages, predicate, timeoutMs),
    post: async (body, postHeaders = {}) => {
      const posted = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers, ...postHeaders },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: posted.status, text: await posted.text() };
    },
    ended,
    close: () => abort.abort(),
  };
}
