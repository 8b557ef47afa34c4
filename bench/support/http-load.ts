// A closed-loop HTTP/1.1 load generator in a process of its own (as autocannon would be), so the
// server under test does not share its event loop with the client. Each connection sends the next
// call when the last one answered; `{{id}}` in the body becomes a fresh request id. A call's time
// runs from writing the request to reading the last byte of its answer.
//
// The connections are plain sockets whose reads land in one buffer each (net's `onread`), read by
// HttpResponseReader, which checks each answer without building its body. With undici and
// `body.text()`, a 104 KB tools/list answer cost the generator a string and fresh socket buffers
// per call: ~10 mark-compact collections a second, pauses up to 15 ms, under way during 75-90% of
// the slowest 1% of calls. That was the p99 it reported, for every server alike: the floor row of
// bench/tools-list.ts (a bare route) measured 6-10 ms p99 at 0.6-0.8 ms p50.
//   LOAD_REQUEST='{"headers":{…},"body":"…","expect":"…"}' node bench/support/http-load.ts <origin> <path> <connections> <seconds>
// Prints one JSON line: calls, errors, seconds, latencies' p50/p99 in ms.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { HttpResponseReader, type ReadResponse } from './http-response-reader.ts';
import { summary } from './report.ts';

export interface LoadRequest {
  readonly headers: Record<string, string>;
  /** The JSON body, with `{{id}}` where the request id goes. */
  readonly body: string;
  /**
   * A response counts as an answer when its status is 200, its body is complete (as long as its
   * Content-Length, or chunked to the last chunk) and contains this. The first answer on each
   * connection is also parsed whole: it must be a JSON-RPC result.
   */
  readonly expect: string;
}

export interface LoadResult {
  readonly calls: number;
  readonly errors: number;
  readonly seconds: number;
  readonly p50: number;
  readonly p99: number;
}

/** A 2026-07-28 tools/call of `tool` greeting "bench" (greet and its variants), as the load sends it. */
export function greetCall(tool: string): LoadRequest {
  return {
    expect: 'Hello',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': tool,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: '{{id}}',
      method: 'tools/call',
      params: {
        name: tool,
        arguments: { name: 'bench' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    }),
  };
}

/** Runs the generator as a child process and resolves with its result. */
export function loadFromChild(
  origin: string,
  request: LoadRequest,
  options: { connections: number; seconds: number },
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), origin, '/mcp', String(options.connections), String(options.seconds)],
      { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOAD_REQUEST: JSON.stringify(request) } },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`the load generator exited with ${code}`));
      else resolve(JSON.parse(output) as LoadResult);
    });
  });
}

/** One keep-alive connection, reopened after the server closes it or a response cannot be read. */
class Connection {
  readonly #url: URL;
  readonly #reader: HttpResponseReader;
  /** Where the socket's reads land, reused by every read: the reader copies nothing out of it. */
  readonly #buffer = Buffer.allocUnsafe(256 * 1024);
  #socket: net.Socket | null = null;
  #pending: { resolve: (answer: Answer) => void; reject: (error: Error) => void } | null = null;
  /** Whether the next response is the first on this socket (it is kept whole and parsed). */
  #fresh = true;

  constructor(url: URL, expect: string) {
    this.#url = url;
    this.#reader = new HttpResponseReader(expect);
  }

  /** Connects unless connected: outside the timed part of a call. */
  async open(): Promise<void> {
    if (this.#socket !== null) return;
    const socket = net.connect({
      host: this.#url.hostname,
      port: Number(this.#url.port || 80),
      noDelay: true,
      onread: { buffer: this.#buffer, callback: (length: number) => this.#read(length) },
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    // Only the current socket's end fails the call in flight (an old one's close comes later).
    socket.on('error', (error) => this.#socket === socket && this.#fail(error));
    socket.on('close', () => this.#socket === socket && this.#fail(new Error('the server closed the connection')));
    this.#socket = socket;
    this.#fresh = true;
  }

  /** Writes one request and resolves with its response and when its last byte was read. */
  exchange(request: string): Promise<Answer> {
    const socket = this.#socket as net.Socket;
    this.#reader.begin(this.#fresh);
    this.#fresh = false;
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
      socket.write(request);
    });
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = null;
  }

  #read(length: number): boolean {
    let response: ReadResponse | null;
    try {
      response = this.#reader.push(this.#buffer, length);
    } catch (error) {
      this.#fail(error as Error);
      return false;
    }
    if (response !== null) {
      const at = performance.now();
      const pending = this.#pending;
      this.#pending = null;
      if (response.close) this.close();
      pending?.resolve({ response, at });
    }
    return true;
  }

  #fail(error: Error): void {
    this.close();
    const pending = this.#pending;
    this.#pending = null;
    pending?.reject(error);
  }
}

interface Answer {
  readonly response: ReadResponse;
  /** performance.now() when its last byte was read. */
  readonly at: number;
}

async function main(origin: string, path: string, connections: number, seconds: number) {
  const request = JSON.parse(process.env.LOAD_REQUEST ?? '') as LoadRequest;
  const url = new URL(origin);
  const head = [
    `POST ${path} HTTP/1.1`,
    `host: ${url.host}`,
    ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
  ].join('\r\n');
  const latencies: number[] = [];
  let errors = 0;
  let id = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const connection = new Connection(url, request.expect);
      while (performance.now() < until) {
        const body = request.body.replace('"{{id}}"', String(id++));
        const message = `${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
        await connection.open();
        const started = performance.now();
        let answer: Answer;
        try {
          answer = await connection.exchange(message);
        } catch {
          errors += 1;
          continue;
        }
        const { response } = answer;
        if (response.status !== 200 || !response.found || !wholeAnswer(response)) errors += 1;
        else latencies.push(answer.at - started);
      }
      connection.close();
    }),
  );
  const s = summary(latencies);
  process.stdout.write(JSON.stringify({ calls: s.n, errors, seconds, p50: s.p50, p99: s.p99 } satisfies LoadResult));
}

/**
 * A kept body (a connection's first answer) is a JSON-RPC result; the others were checked as they
 * were read. Its id is not compared: the floor row of bench/tools-list.ts sends fixed bytes.
 */
function wholeAnswer(response: ReadResponse): boolean {
  if (response.body === null) return true;
  try {
    const message = JSON.parse(response.body.toString('utf8')) as { jsonrpc?: unknown; result?: unknown };
    return message.jsonrpc === '2.0' && typeof message.result === 'object' && message.result !== null;
  } catch {
    return false;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [origin, path, connections, seconds] = process.argv.slice(2) as [string, string, string, string];
  await main(origin, path, Number(connections), Number(seconds));
}
