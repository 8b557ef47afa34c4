import type { Histogram, Registry } from 'prom-client';

/**
 * taskgate_http_request_duration_seconds{route,method,status_code[,rpc_method]}: every HTTP request
 * the API answered, by Fastify's route template (never the raw URL: one series per task id would
 * be unbounded), and on the JSON-RPC routes by method (a bounded set, see the API's rpc-summary).
 * Its _count is the request rate.
 *
 * Not a prom-client Histogram: its observe() validates and hashes the label object on every call,
 * about 1 µs, 3% of an inline tools/call's 33 µs of CPU. Here an observation is four Map lookups
 * and a bucket's increment; the exposition is built at scrape, in the Histogram's shape
 * (its get()), so the registry formats it like any other.
 */

/** Seconds: from a sub-millisecond inline call to an SSE stream held for minutes. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** Observations per bucket (not cumulative), the last one past the largest bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

type Sample = { labels: Record<string, string | number>; value: number; metricName: string };

export class RequestDurations {
  readonly name = 'taskgate_http_request_duration_seconds';
  readonly help =
    'HTTP requests answered (their _count is the rate) and how long each took to its last byte, by route template, method and status; on the JSON-RPC routes by rpc_method too';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** By route, method, status code and rpc_method (null on the routes that are not JSON-RPC). */
  readonly #series = new Map<string, Map<string, Map<number, Map<string | null, Series>>>>();
  /** The same series, in the order they first appeared: the exposition's order. */
  readonly #all: Series[] = [];

  constructor(registry: Registry) {
    // The registry reads a metric through its name, type, aggregator, get() and reset().
    registry.registerMetric(this as unknown as Histogram);
  }

  observe(route: string, method: string, statusCode: number, rpcMethod: string | null, seconds: number): void {
    const series = this.#seriesOf(route, method, statusCode, rpcMethod);
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket += 1;
    series.counts[bucket] = (series.counts[bucket] ?? 0) + 1;
    series.sum += seconds;
    series.count += 1;
  }

  /**
   * Nested maps, not one string key: the route, method and rpc_method strings are the same few
   * objects every time (Fastify's route, Node's method, the label constants), whose hashes V8
   * keeps, where a concatenated key is a new string to build and hash per request.
   */
  #seriesOf(route: string, method: string, statusCode: number, rpcMethod: string | null): Series {
    const byMethod = entryOf(this.#series, route);
    const byStatus = entryOf(byMethod, method);
    const byRpc = entryOf(byStatus, statusCode);
    let series = byRpc.get(rpcMethod);
    if (series === undefined) {
      const labels: Record<string, string> = { route, method, status_code: String(statusCode) };
      if (rpcMethod !== null) labels.rpc_method = rpcMethod;
      series = { labels, counts: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 };
      byRpc.set(rpcMethod, series);
      this.#all.push(series);
    }
    return series;
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const series of this.#all) {
      let cumulative = 0;
      for (let bucket = 0; bucket <= BUCKETS.length; bucket += 1) {
        cumulative += series.counts[bucket] as number;
        values.push({
          labels: { ...series.labels, le: bucket < BUCKETS.length ? (BUCKETS[bucket] as number) : '+Inf' },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      }
      values.push({ labels: { ...series.labels }, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series.labels }, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#series.clear();
    this.#all.length = 0;
  }
}

/** The map under `key`, made the first time it is asked for. */
function entryOf<K, K2, V>(map: Map<K, Map<K2, V>>, key: K): Map<K2, V> {
  let found = map.get(key);
  if (found === undefined) {
    found = new Map();
    map.set(key, found);
  }
  return found;
}
