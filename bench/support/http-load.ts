// A closed-loop HTTP load generator in a process of its own (as autocannon would be), so the
// server under test does not share its event loop with the client. Each connection sends the next
// call when the last one answered; `{{id}}` in the body becomes a fresh request id.
//   LOAD_REQUEST='{"headers":{…},"body":"…","expect":"…"}' node bench/support/http-load.ts <origin> <path> <connections> <seconds>
// Prints one JSON line: calls, errors, seconds, latencies' p50/p99/max in ms.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { summary } from './report.ts';

export interface LoadRequest {
  readonly headers: Record<string, string>;
  /** The JSON body, with `{{id}}` where the request id goes. */
  readonly body: string;
  /** A response counts as an answer when its status is 200 and its body contains this. */
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

async function main(origin: string, path: string, connections: number, seconds: number) {
  const request = JSON.parse(process.env.LOAD_REQUEST ?? '') as LoadRequest;
  const pool = new Pool(origin, { connections, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  let id = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const body = request.body.replace('"{{id}}"', String(id++));
        const started = performance.now();
        const response = await pool.request({ path, method: 'POST', headers: request.headers, body });
        const text = await response.body.text();
        if (response.statusCode !== 200 || !text.includes(request.expect)) errors += 1;
        else latencies.push(performance.now() - started);
      }
    }),
  );
  await pool.close();
  const s = summary(latencies);
  process.stdout.write(JSON.stringify({ calls: s.n, errors, seconds, p50: s.p50, p99: s.p99 } satisfies LoadResult));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [origin, path, connections, seconds] = process.argv.slice(2) as [string, string, string, string];
  await main(origin, path, Number(connections), Number(seconds));
}
