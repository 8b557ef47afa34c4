import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  /** When its body had arrived (performance.timeOrigin + performance.now()). */
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  /** The JSON-RPC messages of a POST body (a batch flattened), as sent. */
  readonly messages: readonly Record<string, unknown>[];
  /** The client closed the connection before the upstream's response had ended. */
  clientClosedEarly: boolean;
  /** The upstream's response ended (whatever the client did). */
  upstreamEnded: boolean;
  /** The proxy read the upstream's whole answer and dropped it, cutting the client off. */
  lost: boolean;
  /** The upstream's answer as text, once it ended (an SSE stream's events as they came). */
  answer: string | null;
}

/** A request the proxy holds before the server has seen any of it (RecorderOptions.hold). */
export interface HeldRequest {
  readonly record: RecordedRequest;
  /** Forwards it now — unless the client has given up on it meanwhile, when nothing is sent. */
  release(): void;
}

export interface RecorderOptions {
  /**
   * Requests whose answer is lost: the server handles them to the end, and the client's
   * connection is then destroyed with nothing written — a proxy or a network that broke at the
   * worst moment. Decided when the request's body has arrived.
   */
  readonly lose?: (request: RecordedRequest) => boolean;
  /**
   * Requests held unanswered, not forwarded until the test releases them (`nextHeld`): the server
   * knows nothing of them meanwhile, so a test forces what happens first. Decided when the
   * request's body has arrived.
   */
  readonly hold?: (request: RecordedRequest) => boolean;
}

/**
 * A recording HTTP proxy in front of an MCP endpoint: what a client sends, header by header and
 * message by message, and whether it closed a response stream before the server ended it — the
 * 2026-07-28 cancel, which a server sees as nothing else. Streams are passed through as they
 * come (no buffering), and a client's close is passed on upstream.
 */
export async function startRecorder(
  target: string,
  options: RecorderOptions = {},
): Promise<{
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** The next request `hold` took (one already held and not yet handed out, or the next to come). */
  nextHeld(): Promise<HeldRequest>;
  close(): Promise<void>;
}> {
  const upstream = new URL(target);
  const requests: RecordedRequest[] = [];
  const held: HeldRequest[] = [];
  const waiting: ((request: HeldRequest) => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let messages: Record<string, unknown>[] = [];
      if (body.length > 0) {
        try {
          const parsed = JSON.parse(body.toString('utf8')) as unknown;
          messages = (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
        } catch {
          messages = [];
        }
      }
      const record: RecordedRequest = {
        at: performance.timeOrigin + performance.now(),
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        messages,
        clientClosedEarly: false,
        upstreamEnded: false,
        lost: false,
        answer: null,
      };
      requests.push(record);
      const lose = options.lose?.(record) === true;
      if (options.hold?.(record) === true) {
        // The client gave up on it while it was held: the server never hears of it.
        let givenUp = false;
        const onClose = () => {
          givenUp = true;
          record.clientClosedEarly = true;
        };
        res.once('close', onClose);
        const request: HeldRequest = {
          record,
          release: () => {
            res.off('close', onClose);
            if (!givenUp) pass(record, lose, body);
          },
        };
        const taker = waiting.shift();
        if (taker) taker(request);
        else held.push(request);
        return;
      }
      pass(record, lose, body);
    });

    function pass(record: RecordedRequest, lose: boolean, body: Buffer): void {
      const texts: Buffer[] = [];
      const forward = http.request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          if (lose) {
            answer.resume();
            answer.on('end', () => {
              record.upstreamEnded = true;
              record.lost = true;
              res.socket?.destroy();
            });
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.on('data', (chunk: Buffer) => {
            texts.push(chunk);
            res.write(chunk);
          });
          answer.on('end', () => {
            record.answer = Buffer.concat(texts).toString('utf8');
            record.upstreamEnded = true;
            res.end();
          });
          answer.on('error', () => res.destroy());
        },
      );
      forward.on('error', () => res.destroy());
      res.on('close', () => {
        if (!record.upstreamEnded) {
          record.clientClosedEarly = true;
          forward.destroy();
        }
      });
      forward.end(body);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    requests,
    nextHeld: () => {
      const first = held.shift();
      if (first) return Promise.resolve(first);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
