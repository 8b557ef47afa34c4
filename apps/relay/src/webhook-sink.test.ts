import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClaimedOutboxEvent } from '@taskgate/db';
import { afterEach, describe, expect, it } from 'vitest';
import { WebhookSink, webhookSignature } from './webhook-sink.ts';

const SECRET = 'whsec-0123456789abcdef';
const EVENT: ClaimedOutboxEvent = {
  id: '42',
  tenantId: 'acme',
  aggregateType: 'account',
  aggregateId: 'acc-1',
  eventType: 'account.charged',
  payload: { cents: 500 },
  createdAt: new Date('2030-01-02T03:04:05.678Z'),
  attempts: 3,
};

interface Seen {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

const servers: http.Server[] = [];
const sinks: WebhookSink[] = [];
afterEach(async () => {
  for (const sink of sinks.splice(0)) sink.close();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server that answers every request with `reply` (or never, when reply is null). */
async function serve(reply: { status: number; body: string } | null, seen: Seen[] = []): Promise<string> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      seen.push({ headers: req.headers, body });
      if (reply) res.writeHead(reply.status).end(reply.body);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

function sink(url: string, timeoutMs = 2_000): WebhookSink {
  const created = new WebhookSink({ url, secret: SECRET, timeoutMs, maxSockets: 4, now: () => 1_900_000_000_999 });
  sinks.push(created);
  return created;
}

describe('WebhookSink', () => {
  it('posts the event as JSON with the outbox id as Idempotency-Key and an HMAC-SHA256 signature of "<t>.<body>"', async () => {
    const seen: Seen[] = [];
    const url = await serve({ status: 204, body: '' }, seen);
    expect(await sink(url).send(EVENT)).toEqual({ ok: true });

    const [request] = seen;
    expect(JSON.parse(request?.body ?? '')).toEqual({
      id: '42',
      tenantId: 'acme',
      aggregateType: 'account',
      aggregateId: 'acc-1',
      eventType: 'account.charged',
      payload: { cents: 500 },
      createdAt: '2030-01-02T03:04:05.678Z',
    });
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.headers['idempotency-key']).toBe('42');
    expect(request?.headers['taskgate-attempt']).toBe('3');
    // Computed here independently of webhookSignature: the receiver's side of the contract.
    const mac = createHmac('sha256', SECRET).update(`1900000000.${request?.body}`).digest('hex');
    expect(request?.headers['taskgate-signature']).toBe(`t=1900000000,v1=${mac}`);
    expect(webhookSignature(SECRET, request?.body ?? '', 1_900_000_000)).toBe(`t=1900000000,v1=${mac}`);
  });

  it('reports a non-2xx answer with its status and the start of its body, without the query string', async () => {
    const url = await serve({ status: 503, body: 'busy\n  try later' });
    const result = await sink(`${url}?token=secret-in-url`).send(EVENT);
    expect(result).toEqual({ ok: false, error: `HTTP 503: busy try later (${url})` });
  });

  it('fails an attempt that gets no answer within the timeout', async () => {
    const url = await serve(null);
    expect(await sink(url, 100).send(EVENT)).toEqual({ ok: false, error: `no response within 100 ms (${url})` });
  });

  it('fails an attempt whose connection is refused', async () => {
    const url = await serve(null);
    const server = servers.pop() as http.Server;
    await new Promise((resolve) => server.close(resolve));
    const result = await sink(url).send(EVENT);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/^request failed: .*ECONNREFUSED/);
  });

  it('stops waiting when the relay aborts', async () => {
    const url = await serve(null);
    const controller = new AbortController();
    const sending = sink(url).send(EVENT, controller.signal);
    controller.abort();
    expect(await sending).toEqual({ ok: false, error: `aborted: the relay is stopping (${url})` });
  });
});
