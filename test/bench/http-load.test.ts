import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type LoadRequest, loadFromChild } from '../../bench/support/http-load.ts';
import { HttpResponseReader } from '../../bench/support/http-response-reader.ts';

/** Feeds `bytes` in pieces ending at `cuts`, each copied into one reused buffer as a socket read is. */
function feed(reader: HttpResponseReader, bytes: Buffer, cuts: readonly number[]) {
  const scratch = Buffer.alloc(bytes.length);
  let start = 0;
  let result = null;
  for (const cut of [...cuts, bytes.length]) {
    if (cut <= start) continue;
    scratch.fill(0x23); // what the previous read left must not count
    bytes.copy(scratch, 0, start, cut);
    result = reader.push(scratch, cut - start);
    if (result !== null && cut < bytes.length) throw new Error(`ended early, at ${cut} of ${bytes.length}`);
    start = cut;
  }
  return result;
}

const body = `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"tool_000"},{"name":"tool_199"}]}}`;
const sized = Buffer.from(
  `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
);
// The body in three chunks, the expected name split by a chunk boundary, then a trailer.
const at = body.indexOf('tool_199') + 4;
const chunked = Buffer.from(
  `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n` +
    `${(10).toString(16)}\r\n${body.slice(0, 10)}\r\n` +
    `${(at - 10).toString(16)};ext=1\r\n${body.slice(10, at)}\r\n` +
    `${(body.length - at).toString(16)}\r\n${body.slice(at)}\r\n0\r\nx-trailer: 1\r\n\r\n`,
);

describe('HttpResponseReader', () => {
  it('finds the expected text and the end of a Content-Length response wherever a read splits it', () => {
    for (let cut = 1; cut < sized.length; cut += 1) {
      const reader = new HttpResponseReader('tool_199');
      reader.begin();
      expect(feed(reader, sized, [cut]), `split at ${cut}`).toEqual({
        status: 200,
        found: true,
        close: false,
        body: null,
      });
    }
  });

  it('reads chunked framing byte by byte, a match split by a chunk boundary included', () => {
    const reader = new HttpResponseReader('tool_199');
    reader.begin(true);
    const result = feed(
      reader,
      chunked,
      Array.from({ length: chunked.length }, (_, index) => index + 1),
    );
    expect(result).toMatchObject({ status: 200, found: true, close: true });
    expect(result?.body?.toString()).toBe(body);
  });

  it('reports text the body lacks, and the status', () => {
    const reader = new HttpResponseReader('tool_199');
    reader.begin();
    const other = Buffer.from('HTTP/1.1 503 Service Unavailable\r\ncontent-length: 8\r\n\r\ntool_198');
    expect(feed(reader, other, [other.length - 2])).toMatchObject({ status: 503, found: false });
  });

  it('is still reading a response cut short, and refuses bytes past its end', () => {
    const reader = new HttpResponseReader('tool_199');
    reader.begin();
    const cut = sized.subarray(0, sized.length - 1);
    expect(reader.push(cut, cut.length)).toBeNull();
    expect(reader.reading).toBe(true);
    reader.begin();
    const extra = Buffer.concat([sized, Buffer.from('HTTP/1.1')]);
    expect(() => reader.push(extra, extra.length)).toThrow(/past the end/);
  });

  it('refuses a response it cannot frame', () => {
    const reader = new HttpResponseReader('x');
    reader.begin();
    const unframed = Buffer.from('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nx');
    expect(() => reader.push(unframed, unframed.length)).toThrow(/neither Content-Length nor chunked/);
  });
});

describe('the load generator', () => {
  let server: http.Server | null = null;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = null;
  });

  /** A server answering each POST with `answer(id)`, sized or chunked. */
  async function serve(answer: (id: unknown, res: http.ServerResponse) => void): Promise<string> {
    server = http.createServer(async (req, res) => {
      let text = '';
      for await (const chunk of req) text += chunk;
      answer((JSON.parse(text) as { id: unknown }).id, res);
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const call: LoadRequest = {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: '{{id}}', method: 'tools/list' }),
    expect: 'tool_199',
  };
  const tools = (id: unknown) => JSON.stringify({ jsonrpc: '2.0', id, result: { tools: [{ name: 'tool_199' }] } });

  it('counts complete answers, sized or chunked, on every connection', async () => {
    const origin = await serve((id, res) => {
      const text = tools(id);
      if ((id as number) % 2 === 0) res.end(text);
      else {
        res.write(text.slice(0, 20));
        res.end(text.slice(20));
      }
    });
    const result = await loadFromChild(origin, call, { connections: 2, seconds: 0.3 });
    expect(result.errors).toBe(0);
    expect(result.calls).toBeGreaterThan(10);
  });

  it('counts an answer without the expected text as an error', async () => {
    const origin = await serve((id, res) => res.end(tools(id)));
    const result = await loadFromChild(origin, { ...call, expect: 'tool_200' }, { connections: 1, seconds: 0.3 });
    expect(result.calls).toBe(0);
    expect(result.errors).toBeGreaterThan(10);
  });

  it('parses the first answer of a connection whole: one that is not a JSON-RPC result is an error', async () => {
    let answered = 0;
    const origin = await serve((id, res) => {
      answered += 1;
      // Contains the expected name, but cut: only parsing it shows.
      res.end(answered === 1 ? tools(id).slice(0, -1) : tools(id));
    });
    const result = await loadFromChild(origin, call, { connections: 1, seconds: 0.3 });
    expect(result.errors).toBe(1);
    expect(result.calls).toBeGreaterThan(10);
  });

  it('counts a connection closed before the end of its answer as an error, and reconnects', async () => {
    let answered = 0;
    const origin = await serve((id, res) => {
      answered += 1;
      const text = tools(id);
      res.setHeader('content-length', Buffer.byteLength(text));
      if (answered % 3 === 0) {
        res.write(text.slice(0, 20));
        res.destroy();
      } else res.end(text);
    });
    const result = await loadFromChild(origin, call, { connections: 1, seconds: 0.3 });
    expect(result.errors).toBeGreaterThan(0);
    expect(result.calls).toBeGreaterThan(result.errors);
  });
});
