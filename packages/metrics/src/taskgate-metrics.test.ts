import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { runMetrics } from './run-metrics.ts';
import { type DatabaseSnapshot, TaskgateMetrics } from './taskgate-metrics.ts';

const snapshot: DatabaseSnapshot = {
  liveTasks: [
    { state: 'working', tool: 'sleep', count: 3 },
    { state: 'input_required', tool: 'ask', count: 1 },
  ],
  queued: [{ tool: 'sleep', count: 2, oldestSeconds: 1.5 }],
  outboxPending: 4,
  outboxDead: 1,
  reconciliationOpen: [{ kind: 'unknown_outcome', count: 2 }],
  // None listed: the gauges hold the rows' label sets only (see the test of listed tools).
  tools: [],
};

const parse = async (metrics: TaskgateMetrics) => parsePrometheusTextFormat(await metrics.scrape());
const family = (families: Awaited<ReturnType<typeof parse>>, name: string) =>
  families.find((entry) => entry.name === name);

describe('TaskgateMetrics', () => {
  it('names every metric by the Prometheus conventions', async () => {
    const metrics = new TaskgateMetrics();
    metrics.watchDatabase(async () => snapshot);
    const families = await parse(metrics);
    const ours = families.filter((entry) => entry.name.startsWith('taskgate_'));
    expect(ours.map((entry) => entry.name).sort()).toEqual([
      'taskgate_abandoned_with_effects_total',
      'taskgate_cancel_latency_seconds',
      'taskgate_downstream_errors_total',
      'taskgate_downstream_requests_in_flight',
      'taskgate_downstream_up',
      'taskgate_http_request_duration_seconds',
      'taskgate_metrics_database_up',
      'taskgate_orphaned_work',
      'taskgate_orphaned_work_total',
      'taskgate_outbox_deliveries_total',
      'taskgate_outbox_delivery_lag_seconds',
      'taskgate_outbox_events',
      'taskgate_queue_depth',
      'taskgate_queue_oldest_age_seconds',
      'taskgate_reconciliation_items_open',
      'taskgate_sse_buffer_drops_total',
      'taskgate_sse_refetch_marks_total',
      'taskgate_task_attempts_total',
      'taskgate_task_pickup_latency_seconds',
      'taskgate_tasks',
      'taskgate_tasks_finished_total',
    ]);
    for (const entry of ours) {
      expect(entry.name).toMatch(/^taskgate_[a-z]+(_[a-z]+)*$/);
      expect(entry.help.length).toBeGreaterThan(10);
      // Counters end in _total and nothing else does; durations are in seconds.
      expect(entry.name.endsWith('_total'), entry.name).toBe(entry.type === 'COUNTER');
      if (entry.type === 'HISTOGRAM') expect(entry.name).toMatch(/_seconds$/);
      expect(entry.name).not.toMatch(/_(ms|milliseconds|minutes)(_|$)/);
    }
    // The process's own figures come along (event loop, heap, CPU).
    expect(family(families, 'process_cpu_user_seconds_total')?.type).toBe('COUNTER');
    expect(family(families, 'nodejs_eventloop_lag_seconds')?.type).toBe('GAUGE');
  });

  it("reads the gateways' downstreams at each scrape, until they are taken back", async () => {
    const metrics = new TaskgateMetrics({ processMetrics: false });
    let inFlight = 2;
    const unwatch = metrics.watchDownstreams(() => [
      { server: 'everything', up: true, inFlight },
      { server: 'remote', up: false, inFlight: 0 },
    ]);
    metrics.downstreamErrors.inc({ server: 'remote', kind: 'unavailable' });
    let families = await parse(metrics);
    expect(family(families, 'taskgate_downstream_up')?.metrics).toEqual([
      { labels: { server: 'everything' }, value: '1' },
      { labels: { server: 'remote' }, value: '0' },
    ]);
    expect(family(families, 'taskgate_downstream_requests_in_flight')?.metrics).toContainEqual({
      labels: { server: 'everything' },
      value: '2',
    });
    expect(family(families, 'taskgate_downstream_errors_total')?.metrics).toEqual([
      { labels: { server: 'remote', kind: 'unavailable' }, value: '1' },
    ]);
    inFlight = 0;
    families = await parse(metrics);
    expect(family(families, 'taskgate_downstream_requests_in_flight')?.metrics).toContainEqual({
      labels: { server: 'everything' },
      value: '0',
    });
    unwatch();
    families = await parse(metrics);
    expect(family(families, 'taskgate_downstream_up')?.metrics ?? []).toEqual([]);
  });

  it('reads the database-wide gauges at each scrape', async () => {
    const metrics = new TaskgateMetrics({ processMetrics: false, cacheMs: 0 });
    let current = snapshot;
    metrics.watchDatabase(async () => current);
    let families = await parse(metrics);
    expect(family(families, 'taskgate_tasks')?.metrics).toEqual([
      { labels: { state: 'working', tool: 'sleep' }, value: '3' },
      { labels: { state: 'input_required', tool: 'ask' }, value: '1' },
    ]);
    expect(family(families, 'taskgate_queue_oldest_age_seconds')?.metrics).toEqual([
      { labels: { tool: 'sleep' }, value: '1.5' },
    ]);
    expect(family(families, 'taskgate_outbox_events')?.metrics).toEqual([
      { labels: { state: 'pending' }, value: '4' },
      { labels: { state: 'dead' }, value: '1' },
    ]);
    expect(family(families, 'taskgate_metrics_database_up')?.metrics).toEqual([{ value: '1' }]);
    // A tool whose tasks all ended is gone from the next scrape, not stuck at its last count.
    current = { ...snapshot, liveTasks: [{ state: 'working', tool: 'sleep', count: 1 }], queued: [] };
    families = await parse(metrics);
    expect(family(families, 'taskgate_tasks')?.metrics).toEqual([
      { labels: { state: 'working', tool: 'sleep' }, value: '1' },
    ]);
    expect(family(families, 'taskgate_queue_depth')?.metrics).toEqual([]);
  });

  it('reports 0, not no series, for a listed tool with no task and for every reconciliation kind', async () => {
    const metrics = new TaskgateMetrics({ processMetrics: false, cacheMs: 0 });
    metrics.watchDatabase(async () => ({
      liveTasks: [{ state: 'working', tool: 'sleep', count: 3 }],
      queued: [],
      outboxPending: 0,
      outboxDead: 0,
      reconciliationOpen: [{ kind: 'unknown_outcome', count: 2 }],
      tools: ['idle', 'sleep'],
    }));
    const families = await parse(metrics);
    expect(family(families, 'taskgate_tasks')?.metrics).toEqual([
      { labels: { state: 'working', tool: 'idle' }, value: '0' },
      { labels: { state: 'input_required', tool: 'idle' }, value: '0' },
      { labels: { state: 'working', tool: 'sleep' }, value: '3' },
      { labels: { state: 'input_required', tool: 'sleep' }, value: '0' },
    ]);
    for (const name of ['taskgate_queue_depth', 'taskgate_queue_oldest_age_seconds']) {
      expect(family(families, name)?.metrics, name).toEqual([
        { labels: { tool: 'idle' }, value: '0' },
        { labels: { tool: 'sleep' }, value: '0' },
      ]);
    }
    expect(family(families, 'taskgate_reconciliation_items_open')?.metrics).toEqual([
      { labels: { kind: 'unknown_outcome' }, value: '2' },
      { labels: { kind: 'abandoned_with_effects' }, value: '0' },
    ]);
    expect(family(families, 'taskgate_outbox_events')?.metrics).toEqual([
      { labels: { state: 'pending' }, value: '0' },
      { labels: { state: 'dead' }, value: '0' },
    ]);
  });

  it('still answers when the database does not, and says so', async () => {
    const metrics = new TaskgateMetrics({ processMetrics: false });
    metrics.watchDatabase(async () => snapshot);
    await parse(metrics);
    const unwatch = metrics.watchDatabase(async () => {
      throw new Error('connect ECONNREFUSED');
    });
    metrics.attempts.inc({ tool: 'sleep' });
    let families = await parse(metrics);
    expect(family(families, 'taskgate_metrics_database_up')?.metrics).toEqual([{ value: '0' }]);
    expect(family(families, 'taskgate_tasks')?.metrics).toEqual([]);
    expect(family(families, 'taskgate_task_attempts_total')?.metrics).toEqual([
      { labels: { tool: 'sleep' }, value: '1' },
    ]);
    // Taken back by the role that stopped: the reader before it serves again.
    unwatch();
    families = await parse(metrics);
    expect(family(families, 'taskgate_metrics_database_up')?.metrics).toEqual([{ value: '1' }]);
    // With no reader at all, nothing is read: 0, and no stale figure.
    const bare = new TaskgateMetrics({ processMetrics: false });
    const none = await parse(bare);
    expect(family(none, 'taskgate_metrics_database_up')?.metrics).toEqual([{ value: '0' }]);
    expect(family(none, 'taskgate_tasks')?.metrics).toEqual([]);
  });

  it('reads the database once a second however many scrapes come, and stops waiting for a slow one', async () => {
    let now = 0;
    let reads = 0;
    const metrics = new TaskgateMetrics({ processMetrics: false, now: () => now, readTimeoutMs: 50 });
    metrics.watchDatabase(async () => {
      reads += 1;
      return snapshot;
    });
    await Promise.all([parse(metrics), parse(metrics), parse(metrics)]);
    now += 999;
    await parse(metrics);
    expect(reads).toBe(1);
    now += 1;
    await parse(metrics);
    expect(reads).toBe(2);
    // A database that never answers: the scrape answers within the timeout, without its figures.
    const unwatch = metrics.watchDatabase(() => new Promise<DatabaseSnapshot>(() => {}));
    const started = Date.now();
    const families = await parse(metrics);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(family(families, 'taskgate_metrics_database_up')?.metrics).toEqual([{ value: '0' }]);
    expect(family(families, 'taskgate_tasks')?.metrics).toEqual([]);
    // Taken back: the reader registered before it serves again.
    unwatch();
    now += 1_000;
    expect(family(await parse(metrics), 'taskgate_metrics_database_up')?.metrics).toEqual([{ value: '1' }]);
  });

  it('counts what a run reports: stops by signal, orphans up and down, abandoned effects', async () => {
    const metrics = new TaskgateMetrics({ processMetrics: false });
    const fromRow: string[] = [];
    const observer = runMetrics(metrics, () => fromRow.push('read the row'));
    observer.stopped({ tool: 'sleep', signal: 'stream_close', seconds: 0.03 });
    observer.stopped({ tool: 'sleep', signal: null, seconds: 0.01 });
    observer.orphan({ kind: 'handler', tool: 'stubborn', delta: 1 });
    observer.orphan({ kind: 'handler', tool: 'stubborn', delta: -1 });
    observer.abandoned({ tool: 'pay', outcome: 'effects' });
    observer.finished({ tool: 'sleep', status: 'cancelled' });
    const families = await parse(metrics);
    // Read the histogram's own series (the parser folds a labelled histogram into one sample).
    const flat = parsePrometheusTextFormat(
      (await metrics.scrape()).replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped'),
    );
    expect(family(flat, 'taskgate_cancel_latency_seconds_count')?.metrics).toEqual([
      { labels: { tool: 'sleep', signal: 'stream_close' }, value: '1' },
    ]);
    expect(family(flat, 'taskgate_cancel_latency_seconds_sum')?.metrics).toEqual([
      { labels: { tool: 'sleep', signal: 'stream_close' }, value: '0.03' },
    ]);
    // The stop of a durable cancel is left to the row's figures.
    expect(fromRow).toEqual(['read the row']);
    expect(family(families, 'taskgate_orphaned_work')?.metrics).toEqual([
      { labels: { kind: 'handler', tool: 'stubborn' }, value: '0' },
    ]);
    expect(family(families, 'taskgate_orphaned_work_total')?.metrics).toEqual([
      { labels: { kind: 'handler', tool: 'stubborn' }, value: '1' },
    ]);
    expect(family(families, 'taskgate_abandoned_with_effects_total')?.metrics).toEqual([
      { labels: { tool: 'pay', outcome: 'effects' }, value: '1' },
    ]);
    expect(family(families, 'taskgate_tasks_finished_total')?.metrics).toEqual([
      { labels: { tool: 'sleep', status: 'cancelled' }, value: '1' },
    ]);
  });
});
