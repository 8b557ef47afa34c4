import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedDelivery {
  readonly id: string;
  readonly idempotencyKey: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly eventType: string;
  readonly payload: unknown;
  readonly createdAt: string;
  readonly attempt: number;
  readonly signatureValid: boolean;
  readonly receivedAt: number;
}

/** What the receiver does with a request: answer with a status (and body), or hold it unanswered. */
export type Reply = { readonly status: number; readonly body?: string } | 'hold';
export type Behaviour = (delivery: ReceivedDelivery, receiver: WebhookReceiver) => Reply;

/**
 * A webhook endpoint for tests: records every request, checks its signature, tracks which ids are
 * in flight (to catch one event delivered twice at the same time), and applies each event's effect
 * once per Idempotency-Key, the way a real receiver deduplicates.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** Idempotency keys whose effect was applied, in the order applied. */
  readonly applied: string[] = [];
  readonly overlaps: string[] = [];
  readonly held: { delivery: ReceivedDelivery; release: (reply?: Reply) => void }[] = [];
  readonly #inFlight = new Set<string>();
  readonly #server: http.Server;
  readonly #secret: string;
  readonly #waiters = new Set<() => void>();
  behaviour: Behaviour;
  url = '';

  constructor(secret: string, behaviour: Behaviour = () => ({ status: 200 })) {
    this.#secret = secret;
    this.behaviour = behaviour;
    this.#server = http.createServer((req, res) => {
      let raw = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        raw += chunk;
      });
      req.on('end', () => this.#handle(req, res, raw));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks/outbox`;
    return this;
  }

  async stop(): Promise<void> {
    for (const entry of this.held.splice(0)) entry.release({ status: 503 });
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  /** Resolves once `predicate` holds, re-checked after every request and every reply. */
  until(predicate: (receiver: this) => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (!predicate(this)) return;
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
      check();
    });
  }

  deliveriesOf(id: string): ReceivedDelivery[] {
    return this.received.filter((delivery) => delivery.id === id);
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    const body = JSON.parse(raw) as Record<string, unknown>;
    const delivery: ReceivedDelivery = {
      id: String(body.id),
      idempotencyKey: String(req.headers['idempotency-key']),
      aggregateType: String(body.aggregateType),
      aggregateId: String(body.aggregateId),
      eventType: String(body.eventType),
      payload: body.payload,
      createdAt: String(body.createdAt),
      attempt: Number(req.headers['taskgate-attempt']),
      signatureValid: this.#verify(String(req.headers['taskgate-signature']), raw),
      receivedAt: Date.now(),
    };
    if (this.#inFlight.has(delivery.id)) this.overlaps.push(delivery.id);
    this.#inFlight.add(delivery.id);
    this.received.push(delivery);
    let answered = false;
    const answer = (reply: Reply = { status: 200 }) => {
      if (answered) return;
      answered = true;
      this.#inFlight.delete(delivery.id);
      if (reply === 'hold') return;
      if (reply.status >= 200 && reply.status < 300) this.apply(delivery.idempotencyKey);
      res.writeHead(reply.status, { 'content-type': 'text/plain' }).end(reply.body ?? '');
      this.#notify();
    };
    // A connection the relay dropped (it was killed, or it timed out) is no longer in flight.
    res.on('close', () => {
      if (!answered) {
        answered = true;
        this.#inFlight.delete(delivery.id);
        this.#notify();
      }
    });
    const reply = this.behaviour(delivery, this);
    if (reply === 'hold') this.held.push({ delivery, release: answer });
    else answer(reply);
    this.#notify();
  }

  /** The receiver's side effect, once per Idempotency-Key. */
  apply(key: string): void {
    if (!this.applied.includes(key)) this.applied.push(key);
  }

  #verify(header: string, raw: string): boolean {
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
    if (!match) return false;
    const expected = createHmac('sha256', this.#secret).update(`${match[1]}.${raw}`).digest();
    return timingSafeEqual(expected, Buffer.from(match[2] as string, 'hex'));
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter();
  }
}
