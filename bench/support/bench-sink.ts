// A webhook receiver on its own thread (its own event loop, so it does not share one with the relay
// being measured). It parses each body as a real receiver would, answers 200, and reports, once it
// has seen the number of requests it was told to expect, when they arrived and each one's lag
// (arrival minus the body's createdAt; both clocks are this machine's wall clock).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';

export interface SinkReport {
  readonly count: number;
  readonly firstAt: number;
  readonly lastAt: number;
  readonly lags: number[];
}

export interface BenchSink {
  readonly url: string;
  /** Resets the counters; resolves once `count` more requests have arrived. */
  expect(count: number): Promise<SinkReport>;
  stop(): Promise<void>;
}

export async function startBenchSink(): Promise<BenchSink> {
  const worker = new Worker(new URL(import.meta.url));
  const url = await new Promise<string>((resolve) =>
    worker.once('message', (message: { url: string }) => resolve(message.url)),
  );
  return {
    url,
    expect: (count) =>
      new Promise((resolve) => {
        worker.once('message', (report: SinkReport) => resolve(report));
        worker.postMessage({ expect: count });
      }),
    stop: async () => {
      await worker.terminate();
    },
  };
}

if (!isMainThread && parentPort) {
  const port = parentPort;
  let expected = Number.POSITIVE_INFINITY;
  let lags: number[] = [];
  let firstAt = 0;
  let lastAt = 0;
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(raw) as { createdAt: string };
      res.writeHead(200).end();
      if (lags.length === 0) firstAt = at;
      lastAt = at;
      lags.push(at - Date.parse(body.createdAt));
      if (lags.length === expected) {
        port.postMessage({ count: lags.length, firstAt, lastAt, lags } satisfies SinkReport);
        expected = Number.POSITIVE_INFINITY;
      }
    });
  });
  port.on('message', (message: { expect: number }) => {
    expected = message.expect;
    lags = [];
  });
  server.listen(0, '127.0.0.1', () => {
    port.postMessage({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` });
  });
}
