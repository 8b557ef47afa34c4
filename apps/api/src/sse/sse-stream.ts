import type { ServerResponse } from 'node:http';
import { processMetrics } from '@taskgate/metrics';
import { BoundedBuffer, type BufferItem, type CoalesceMode, type PushResult } from '@taskgate/reliability';

export interface SseEvent {
  readonly event?: string;
  /** The event's `id:`, for a resumable stream: what a client sends back as Last-Event-ID. */
  readonly id?: string;
  readonly data: unknown;
}

export interface SseStreamOptions {
  /** Events held while the client (or a proxy) is not reading; see BoundedBuffer's policy. */
  readonly capacity: number;
  readonly coalesce: CoalesceMode;
  /** A `:` comment after this long without a write, so proxies keep the connection open. */
  readonly keepaliveMs: number;
}

/**
 * One Server-Sent Events response with a bounded buffer between the producer and the socket.
 * Writes stop when the socket's buffer is full and resume on 'drain', so a client that stops
 * reading costs at most `capacity` events of memory: replaceable events coalesce or are dropped
 * (the stream is then marked for refetch), a final event is never dropped, and the response ends
 * once a final event is written.
 */
export class SseStream {
  readonly #response: ServerResponse;
  readonly #buffer: BoundedBuffer<SseEvent>;
  readonly #keepaliveMs: number;
  #keepaliveTimer: NodeJS.Timeout | undefined;
  #waitingForDrain = false;
  #closed = false;
  readonly #closeHandlers = new Set<() => void>();

  constructor(response: ServerResponse, options: SseStreamOptions) {
    this.#response = response;
    this.#buffer = new BoundedBuffer<SseEvent>({ capacity: options.capacity, coalesce: options.coalesce });
    this.#keepaliveMs = options.keepaliveMs;
    response.on('close', () => this.#onClosed());
    response.on('drain', () => {
      this.#waitingForDrain = false;
      this.#flush();
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** True while the socket is full and writes wait for 'drain' (the reader is not keeping up). */
  get backedUp(): boolean {
    return this.#waitingForDrain;
  }

  /** Sends the status line and the headers that keep proxies from buffering the stream. */
  open(extraHeaders: Record<string, string> = {}): void {
    this.#response.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
      ...extraHeaders,
    });
    this.#response.flushHeaders();
    this.#armKeepalive();
  }

  /**
   * An event with an id and no data (2025-11-25 transports, SEP-1699): it gives the client an id
   * to resume from before any message was sent. Only for clients of a revision that knows it —
   * an older client parses the empty data as a message and reports an error.
   */
  prime(id: string): void {
    if (!this.#closed) this.#write(`id: ${id}\ndata: \n\n`);
  }

  push(item: BufferItem<SseEvent>): PushResult {
    if (this.#closed) return { accepted: true };
    const droppedBefore = this.#buffer.dropped;
    const result = this.#buffer.push(item);
    // Process-wide, whichever route made the stream: a slow reader anywhere shows up.
    if (this.#buffer.dropped > droppedBefore) processMetrics().sseDrops.inc(this.#buffer.dropped - droppedBefore);
    this.#flush();
    return result;
  }

  /** True once, after events were dropped, so the producer can tell the client to refetch. */
  takeRefetchFlag(): boolean {
    const marked = this.#buffer.takeRefetchFlag();
    if (marked) processMetrics().sseRefetchMarks.inc();
    return marked;
  }

  onClose(handler: () => void): void {
    if (this.#closed) handler();
    else this.#closeHandlers.add(handler);
  }

  /**
   * Ends the response. With `retryMs`, the stream is not over, only this connection: the SSE
   * `retry:` field tells the client how long to wait before it reconnects (and resumes).
   */
  close(retryMs?: number): void {
    if (this.#closed) return;
    if (retryMs !== undefined && !this.#waitingForDrain) this.#response.write(`retry: ${Math.round(retryMs)}\n\n`);
    this.#response.end();
    this.#onClosed();
  }

  #flush(): void {
    while (!this.#closed && !this.#waitingForDrain && this.#buffer.size > 0) {
      const item = this.#buffer.shift() as BufferItem<SseEvent>;
      const writable = this.#write(format(item.value));
      if (item.kind === 'final') {
        this.close();
        return;
      }
      if (!writable) this.#waitingForDrain = true;
    }
  }

  #write(chunk: string): boolean {
    this.#armKeepalive();
    return this.#response.write(chunk);
  }

  #armKeepalive(): void {
    clearTimeout(this.#keepaliveTimer);
    if (this.#closed) return;
    this.#keepaliveTimer = setTimeout(() => {
      // A comment is not an event: clients ignore it, and it is not progress for anyone's clock.
      if (!this.#waitingForDrain && this.#write(':\n\n') === false) this.#waitingForDrain = true;
      else this.#armKeepalive();
    }, this.#keepaliveMs);
    this.#keepaliveTimer.unref();
  }

  #onClosed(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#keepaliveTimer);
    for (const handler of this.#closeHandlers) handler();
    this.#closeHandlers.clear();
  }
}

function format(event: SseEvent): string {
  const data = JSON.stringify(event.data);
  return `${event.id ? `id: ${event.id}\n` : ''}${event.event ? `event: ${event.event}\n` : ''}data: ${data}\n\n`;
}
