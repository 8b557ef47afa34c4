import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { ClaimedOutboxEvent } from '@taskgate/db';

export type SendResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

export interface WebhookSinkOptions {
  readonly url: string;
  /** The HMAC-SHA256 key of the Taskgate-Signature header. */
  readonly secret: string;
  /** The whole request, connect to last byte of the response; past it the attempt failed. */
  readonly timeoutMs: number;
  /** Sockets kept open to this sink: as many as the relay has deliveries in flight. */
  readonly maxSockets: number;
  /** Unix milliseconds, for the signature's timestamp (injectable for tests). */
  readonly now?: () => number;
}

/** How much of a failed response's body the stored error keeps. */
const ERROR_BODY_CHARS = 200;

/** The JSON body a sink receives; `id` is also the Idempotency-Key header. */
export function webhookBody(event: ClaimedOutboxEvent): string {
  return JSON.stringify({
    id: event.id,
    tenantId: event.tenantId,
    aggregateType: event.aggregateType,
    aggregateId: event.aggregateId,
    eventType: event.eventType,
    payload: event.payload,
    createdAt: event.createdAt.toISOString(),
  });
}

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. The timestamp is signed with the body so
 * a receiver can refuse replays older than its tolerance.
 */
export function webhookSignature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${mac}`;
}

/**
 * One HTTP(S) webhook endpoint. A 2xx answer means the sink has the event; any other status, a
 * network error or the timeout is a failed attempt, described in one short line for last_error.
 */
export class WebhookSink {
  readonly #options: WebhookSinkOptions;
  readonly #request: typeof http.request;
  /** Parsed once: a URL per request costs more than the rest of building it. */
  readonly #target: http.RequestOptions;
  /** Origin and path only: a query string may carry a credential and must not reach logs or rows. */
  readonly label: string;

  constructor(options: WebhookSinkOptions) {
    const url = new URL(options.url);
    const secure = url.protocol === 'https:';
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets };
    this.#options = options;
    this.#request = secure ? https.request : http.request;
    this.#target = {
      protocol: url.protocol,
      // URL keeps IPv6 literals bracketed; the socket layer wants them bare.
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions),
      ...(url.username ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
    };
    this.label = `${url.origin}${url.pathname}`;
  }

  send(event: ClaimedOutboxEvent, signal?: AbortSignal): Promise<SendResult> {
    const text = webhookBody(event);
    const body = Buffer.from(text);
    const seconds = Math.floor((this.#options.now ?? Date.now)() / 1000);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(result);
      };
      const fail = (reason: string) => finish({ ok: false, error: `${reason} (${this.label})` });
      const req = this.#request({
        ...this.#target,
        headers: {
          'content-type': 'application/json',
          'content-length': body.length,
          'idempotency-key': event.id,
          'taskgate-signature': webhookSignature(this.#options.secret, text, seconds),
          'taskgate-attempt': String(event.attempts),
          'user-agent': 'taskgate-relay',
        },
      });
      const timer = setTimeout(() => {
        fail(`no response within ${this.#options.timeoutMs} ms`);
        req.destroy();
      }, this.#options.timeoutMs);
      const onAbort = () => {
        fail('aborted: the relay is stopping');
        req.destroy();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (error) => fail(`request failed: ${error.message}`));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        let text = '';
        res.setEncoding('utf8');
        // Read to the end even on success, so the socket goes back to the pool for the next event.
        res.on('data', (chunk: string) => {
          if (text.length < ERROR_BODY_CHARS) text += chunk;
        });
        res.on('error', (error) => fail(`response failed: ${error.message}`));
        res.on('end', () => {
          if (status >= 200 && status < 300) finish({ ok: true });
          else fail(`HTTP ${status}${text ? `: ${text.slice(0, ERROR_BODY_CHARS).replace(/\s+/g, ' ').trim()}` : ''}`);
        });
      });
      req.end(body);
    });
  }

  close(): void {
    (this.#target.agent as http.Agent).destroy();
  }
}
