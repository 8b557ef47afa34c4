import type { ClientRecord } from './client-record.ts';
import type { HttpClient } from './http-client.ts';
import type { Rng } from './rng.ts';
import { sleep, type Tenant, type WorkloadContext } from './workload-context.ts';
import { charge, reservation } from './workload-ledger.ts';
import { mcpCancel, mcpSync, mcpTask, restCancel, restTask } from './workload-tasks.ts';
import { listen, sseReader } from './workload-watchers.ts';

type Operation = (ctx: WorkloadContext, rng: Rng, tenant: Tenant) => Promise<void>;

/** The mix: how often each client picks each operation. */
const MIX = {
  restTask: 16,
  mcpSync: 14,
  mcpTask: 12,
  charge: 14,
  reservation: 12,
  restCancel: 7,
  mcpCancel: 6,
  listen: 5,
  sseReader: 6,
} as const;
const OPERATIONS: Record<keyof typeof MIX, Operation> = {
  restTask,
  mcpSync,
  mcpTask,
  charge,
  reservation,
  restCancel,
  mcpCancel,
  listen,
  sseReader,
};

/**
 * The mixed workload: `clients` loops, each with its own generator forked from the run's seed,
 * picking an operation and a tenant, doing it to the end, pausing briefly, and again, until the
 * workload winds down. wind() stops new operations; stop() also ends every wait and retry.
 */
export class Workload {
  readonly #ctx: WorkloadContext;
  readonly #winding = new AbortController();
  readonly #hardStop = new AbortController();
  readonly #loops: Promise<void>[] = [];
  #serial = 0;

  constructor(options: {
    http: HttpClient;
    record: ClientRecord;
    apiUrls: readonly string[];
    tenants: readonly Tenant[];
    waitBoundMs: number;
    maxCallMs: number;
    now: () => number;
  }) {
    this.#ctx = {
      ...options,
      winding: this.#winding.signal,
      hardStop: this.#hardStop.signal,
      recent: [],
      nextSerial: () => ++this.#serial,
    };
  }

  start(clients: number, rng: Rng): void {
    for (let client = 0; client < clients; client++) this.#loops.push(this.#loop(rng.fork()));
  }

  /** Stops new operations and resolves once those under way ended, or the bound passed. */
  async wind(boundMs: number): Promise<boolean> {
    this.#winding.abort();
    const all = Promise.all(this.#loops).then(() => true);
    const finished = await Promise.race([all, sleep(boundMs).then(() => false)]);
    return finished;
  }

  /** Ends every wait and retry now; resolves when every loop has returned. */
  async stop(): Promise<void> {
    this.#winding.abort();
    this.#hardStop.abort();
    this.#ctx.http.abortAll();
    await Promise.all(this.#loops);
  }

  async #loop(rng: Rng): Promise<void> {
    while (!this.#winding.signal.aborted) {
      const name = rng.weighted(MIX);
      const tenant = rng.pick(this.#ctx.tenants);
      try {
        await OPERATIONS[name](this.#ctx, rng, tenant);
      } catch (error) {
        this.#ctx.record.count(`${name}: threw ${error instanceof Error ? error.message.slice(0, 80) : String(error)}`);
      }
      await sleep(rng.between(20, 250), this.#winding.signal);
    }
  }
}
