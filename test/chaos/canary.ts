import type { ClientRecord } from './client-record.ts';
import { type HttpClient, jsonOf } from './http-client.ts';
import { callMcp } from './mcp-client.ts';
import type { Tenant } from './workload-context.ts';

/**
 * The recovery probe after a Postgres restart: an MCP greet through every API (a request-mode task
 * a worker runs) and a REST task created through one API and seen completed. Recovery is the time
 * from Postgres accepting connections again until one whole probe succeeds.
 */
export class Canary {
  readonly #http: HttpClient;
  readonly #record: ClientRecord;
  readonly #apiUrls: readonly string[];
  readonly #tenant: Tenant;
  readonly #now: () => number;
  #serial = 0;

  constructor(http: HttpClient, record: ClientRecord, apiUrls: readonly string[], tenant: Tenant, now: () => number) {
    this.#http = http;
    this.#record = record;
    this.#apiUrls = apiUrls;
    this.#tenant = tenant;
    this.#now = now;
  }

  /** Milliseconds from `acceptingAt` (performance.now()) to the first successful probe; null past the bound. */
  async recoveryFrom(acceptingAt: number, boundMs: number): Promise<number | null> {
    while (performance.now() - acceptingAt < boundMs) {
      if (await this.probe()) return Math.round(performance.now() - acceptingAt);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return null;
  }

  async probe(): Promise<boolean> {
    const serial = ++this.#serial;
    const results = await Promise.all([
      ...this.#apiUrls.map((url) => this.#greet(url, serial)),
      this.#restTask(this.#apiUrls[serial % this.#apiUrls.length] as string, serial),
    ]);
    return results.every(Boolean);
  }

  async #greet(apiUrl: string, serial: number): Promise<boolean> {
    const { message } = await callMcp(
      this.#http,
      apiUrl,
      this.#tenant.token,
      'tools/call',
      { name: 'greet', arguments: { name: `canary-${serial}` } },
      { timeoutMs: 5_000 },
    );
    return message?.result !== undefined && message.result.isError !== true;
  }

  async #restTask(apiUrl: string, serial: number): Promise<boolean> {
    const headers = { authorization: `Bearer ${this.#tenant.token}`, 'content-type': 'application/json' };
    const created = await this.#http.send('POST', `${apiUrl}/v1/tasks`, {
      headers,
      body: JSON.stringify({ tool: 'greet', arguments: { name: `canary-rest-${serial}` } }),
      timeoutMs: 5_000,
    });
    if (created.kind !== 'response' || created.status !== 201) return false;
    const id = String(jsonOf(created).id);
    this.#record.given(id, this.#tenant.name, 'canary', this.#now());
    const deadline = performance.now() + 10_000;
    while (performance.now() < deadline) {
      const read = await this.#http.send('GET', `${apiUrl}/v1/tasks/${id}`, { headers, timeoutMs: 5_000 });
      const status = read.kind === 'response' && read.status === 200 ? jsonOf(read).status : null;
      if (status === 'completed' || status === 'failed' || status === 'cancelled') {
        this.#record.sawTerminal(id, status, 'canary');
        return status === 'completed';
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return false;
  }
}
