import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { RequestDurations } from './request-durations.ts';

/**
 * Every metric a Taskgate process exports, defined once, in one registry per process (a process
 * of any roles serves it on /metrics: the API on its port, a worker or relay on the health port).
 * Names follow the Prometheus conventions: base units (`_seconds`), `_total` on counters, labels
 * of bounded cardinality (tool names, signals, states — never task ids or tenants).
 */

/** Seconds: from a few milliseconds (a checkpoint that reads a NOTIFY) to a long grace period. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];

/** Database-wide figures, read when /metrics is scraped (the same on every process). */
export interface DatabaseSnapshot {
  /** Tasks not yet ended, by state and tool. */
  readonly liveTasks: readonly { readonly state: string; readonly tool: string; readonly count: number }[];
  /** Tasks waiting for a worker's first claim, by tool, and the age of the oldest. */
  readonly queued: readonly { readonly tool: string; readonly count: number; readonly oldestSeconds: number }[];
  readonly outboxPending: number;
  readonly outboxDead: number;
  readonly reconciliationOpen: readonly { readonly kind: string; readonly count: number }[];
  /** The tools the catalog lists: a per-tool gauge reports 0 for each of them that has no row. */
  readonly tools: readonly string[];
}

/**
 * The label values a database-wide gauge reports even with no row: the states the snapshot counts
 * and the kinds reconciliation_items' CHECK allows. An alert on `taskgate_queue_depth == 0` or
 * `absent(...)` then tells "nothing waits" from "nothing reported".
 */
const LIVE_STATES = ['working', 'input_required'] as const;
const RECONCILIATION_KINDS = ['unknown_outcome', 'abandoned_with_effects'] as const;

/** One gateway's downstream, as its gauges show it. */
export interface DownstreamSnapshot {
  readonly server: string;
  readonly up: boolean;
  readonly inFlight: number;
}

export class TaskgateMetrics {
  readonly registry = new Registry();

  /** Every HTTP request the API answered (http/request-log.ts records them as it logs them). */
  readonly httpRequests = new RequestDurations(this.registry);

  readonly cancelLatency = new Histogram({
    name: 'taskgate_cancel_latency_seconds',
    help: "From a stop signal's arrival (a cancel received by the server, a clock running out, a shutdown) to the handler's exit",
    labelNames: ['tool', 'signal'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly orphans = new Gauge({
    name: 'taskgate_orphaned_work',
    help: 'Handlers and subprocess trees still running a grace period after they were told to stop (expected 0)',
    labelNames: ['kind', 'tool'] as const,
    registers: [this.registry],
  });

  readonly orphansTotal = new Counter({
    name: 'taskgate_orphaned_work_total',
    help: 'Handlers and subprocess trees found still running a grace period after they were told to stop',
    labelNames: ['kind', 'tool'] as const,
    registers: [this.registry],
  });

  readonly abandonedWithEffects = new Counter({
    name: 'taskgate_abandoned_with_effects_total',
    help: 'Runs that ended failed or cancelled after an irreversible step (outcome: effects when it finished, unknown when it never recorded how it went)',
    labelNames: ['tool', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly attempts = new Counter({
    name: 'taskgate_task_attempts_total',
    help: 'Attempts this process started (a retry after a lost or handed-back attempt counts again)',
    labelNames: ['tool'] as const,
    registers: [this.registry],
  });

  readonly finished = new Counter({
    name: 'taskgate_tasks_finished_total',
    help: 'Runs this process ended, by terminal status',
    labelNames: ['tool', 'status'] as const,
    registers: [this.registry],
  });

  readonly pickupLatency = new Histogram({
    name: 'taskgate_task_pickup_latency_seconds',
    help: "From a task's creation to its first attempt's start (database clock)",
    labelNames: ['tool'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly outboxDeliveries = new Counter({
    name: 'taskgate_outbox_deliveries_total',
    help: 'Outbox delivery attempts this relay made, by outcome (delivered, failed, dead)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly outboxDeliveryLag = new Histogram({
    name: 'taskgate_outbox_delivery_lag_seconds',
    help: "From an outbox event's commit to its delivery",
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });

  readonly sseDrops = new Counter({
    name: 'taskgate_sse_buffer_drops_total',
    help: 'Replaceable events dropped from a full SSE buffer because their reader was not keeping up (a final event is never dropped)',
    registers: [this.registry],
  });

  readonly sseRefetchMarks = new Counter({
    name: 'taskgate_sse_refetch_marks_total',
    help: 'Times an SSE stream told its client to refetch because events were dropped',
    registers: [this.registry],
  });

  readonly downstreamErrors = new Counter({
    name: 'taskgate_downstream_errors_total',
    help: 'Gateway calls a downstream MCP server failed, by gateway and kind (unavailable: down or not started; gone: it exited or the connection broke under the call; task_ended: its task ended without a result; error_response: a JSON-RPC error answer)',
    labelNames: ['server', 'kind'] as const,
    registers: [this.registry],
  });

  /** The gateways this process holds, read at each scrape (watchDownstreams). */
  readonly #downstreams: (() => readonly DownstreamSnapshot[])[] = [];

  readonly #downstreamUp = new Gauge({
    name: 'taskgate_downstream_up',
    help: '1 when the downstream MCP server of a gateway this worker holds is connected; 0 while it is down or waits out its restart backoff',
    labelNames: ['server'] as const,
    registers: [this.registry],
  });

  readonly #downstreamInFlight = new Gauge({
    name: 'taskgate_downstream_requests_in_flight',
    help: "Entries of a gateway's id map: downstream requests (and tasks) alive now",
    labelNames: ['server'] as const,
    registers: [this.registry],
  });

  readonly #liveTasks = new Gauge({
    name: 'taskgate_tasks',
    help: 'Tasks not yet ended, by state and tool (database-wide: every process reports the same)',
    labelNames: ['state', 'tool'] as const,
    registers: [this.registry],
  });

  readonly #queueDepth = new Gauge({
    name: 'taskgate_queue_depth',
    help: 'Tasks waiting for their first claim, by tool (database-wide)',
    labelNames: ['tool'] as const,
    registers: [this.registry],
  });

  readonly #queueAge = new Gauge({
    name: 'taskgate_queue_oldest_age_seconds',
    help: 'Age of the oldest task waiting for its first claim, by tool (database-wide)',
    labelNames: ['tool'] as const,
    registers: [this.registry],
  });

  readonly #outbox = new Gauge({
    name: 'taskgate_outbox_events',
    help: 'Outbox events pending delivery or dead-lettered (database-wide)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  readonly #reconciliation = new Gauge({
    name: 'taskgate_reconciliation_items_open',
    help: 'Reconciliation items waiting for a decision, by kind (database-wide)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly #databaseUp = new Gauge({
    name: 'taskgate_metrics_database_up',
    help: '1 when this scrape read the database-wide figures; 0 when the database did not answer or no role here reads it (they are then absent)',
    registers: [this.registry],
  });

  /** Who can read the database-wide figures; the latest registered reads them. */
  readonly #readers: (() => Promise<DatabaseSnapshot>)[] = [];
  /** The last read, shared by the scrapes of the next second (and by concurrent ones). */
  #cached: { readonly at: number; readonly snapshot: Promise<DatabaseSnapshot | null> } | null = null;
  readonly #now: () => number;
  readonly #cacheMs: number;
  readonly #readTimeoutMs: number;

  constructor(
    options: {
      readonly processMetrics?: boolean;
      readonly now?: () => number;
      /** How long one read of the database serves scrapes (default 1 s): a flood of scrapes costs one query a second. */
      readonly cacheMs?: number;
      /** The longest a scrape waits for the database (default 3 s; the query's own timeout is 2 s). */
      readonly readTimeoutMs?: number;
    } = {},
  ) {
    this.#now = options.now ?? Date.now;
    this.#cacheMs = options.cacheMs ?? 1_000;
    this.#readTimeoutMs = options.readTimeoutMs ?? 3_000;
    // Event-loop lag, heap, CPU and file descriptors: what tells a stuck worker from a busy one.
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Where the database-wide gauges come from: the latest registered reader, until it is taken
   * back (a role that stops must not leave a closed pool to be read; the one before serves again).
   */
  watchDatabase(read: () => Promise<DatabaseSnapshot>): () => void {
    this.#readers.push(read);
    this.#cached = null;
    return () => {
      const index = this.#readers.lastIndexOf(read);
      if (index >= 0) this.#readers.splice(index, 1);
      this.#cached = null;
    };
  }

  /** Where the downstream gauges come from, until taken back (the gateways stopped). */
  watchDownstreams(read: () => readonly DownstreamSnapshot[]): () => void {
    this.#downstreams.push(read);
    return () => {
      const index = this.#downstreams.indexOf(read);
      if (index >= 0) this.#downstreams.splice(index, 1);
    };
  }

  #readDownstreams(): void {
    this.#downstreamUp.reset();
    this.#downstreamInFlight.reset();
    for (const read of this.#downstreams) {
      for (const downstream of read()) {
        this.#downstreamUp.set({ server: downstream.server }, downstream.up ? 1 : 0);
        this.#downstreamInFlight.set({ server: downstream.server }, downstream.inFlight);
      }
    }
  }

  /** One read per cache period, whoever scrapes; null when it failed or took too long. */
  #snapshot(): Promise<DatabaseSnapshot | null> {
    const read = this.#readers.at(-1);
    if (read === undefined) return Promise.resolve(null);
    const now = this.#now();
    if (this.#cached !== null && now - this.#cached.at < this.#cacheMs) return this.#cached.snapshot;
    const snapshot = Promise.race([read().catch(() => null), giveUpAfter(this.#readTimeoutMs)]);
    this.#cached = { at: now, snapshot };
    return snapshot;
  }

  /** The text exposition format (version 0.0.4), as scraped. */
  async scrape(): Promise<string> {
    this.#readDownstreams();
    await this.#readDatabase();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  async #readDatabase(): Promise<void> {
    for (const gauge of [this.#liveTasks, this.#queueDepth, this.#queueAge, this.#outbox, this.#reconciliation]) {
      gauge.reset();
    }
    const snapshot = await this.#snapshot();
    if (snapshot === null) {
      // Not read (no reader here, an outage, a slow database): the scrape still answers with the
      // process figures and counters, and says the database-wide ones are missing.
      this.#databaseUp.set(0);
      return;
    }
    this.#databaseUp.set(1);
    // Zeros first, so a label set with no row reads 0; the rows then overwrite theirs.
    for (const tool of snapshot.tools) {
      for (const state of LIVE_STATES) this.#liveTasks.set({ state, tool }, 0);
      this.#queueDepth.set({ tool }, 0);
      this.#queueAge.set({ tool }, 0);
    }
    for (const kind of RECONCILIATION_KINDS) this.#reconciliation.set({ kind }, 0);
    for (const row of snapshot.liveTasks) this.#liveTasks.set({ state: row.state, tool: row.tool }, row.count);
    for (const row of snapshot.queued) {
      this.#queueDepth.set({ tool: row.tool }, row.count);
      this.#queueAge.set({ tool: row.tool }, row.oldestSeconds);
    }
    this.#outbox.set({ state: 'pending' }, snapshot.outboxPending);
    this.#outbox.set({ state: 'dead' }, snapshot.outboxDead);
    for (const row of snapshot.reconciliationOpen) this.#reconciliation.set({ kind: row.kind }, row.count);
  }
}

/** Resolves null after `ms`: the caller stops waiting (the read itself goes on, bounded by its statement timeout). */
function giveUpAfter(ms: number): Promise<null> {
  return new Promise((resolve) => {
    setTimeout(() => resolve(null), ms).unref();
  });
}

let processWide: TaskgateMetrics | null = null;

/**
 * The process's metrics: one registry whatever roles run here, so a process of three roles
 * serves one /metrics. (Tests that need their own make a `new TaskgateMetrics()`.)
 */
export function processMetrics(): TaskgateMetrics {
  processWide ??= new TaskgateMetrics();
  return processWide;
}
