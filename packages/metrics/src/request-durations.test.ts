import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { TaskgateMetrics } from './taskgate-metrics.ts';

// Histograms' own series, each as a family (the parser folds a labelled histogram into one sample).
const flat = async (metrics: TaskgateMetrics) =>
  parsePrometheusTextFormat((await metrics.scrape()).replace(/^# TYPE (\S+) histogram$/gm, '# TYPE $1 untyped'));

describe('taskgate_http_request_duration_seconds', () => {
  it('counts requests by route template, method and status, and JSON-RPC ones by method too', async () => {
    const metrics = new TaskgateMetrics({ processMetrics: false });
    metrics.httpRequests.observe('/v1/tasks/:id', 'GET', 200, null, 0.002);
    metrics.httpRequests.observe('/v1/tasks/:id', 'GET', 200, null, 0.02);
    metrics.httpRequests.observe('/v1/tasks/:id', 'GET', 404, null, 0.001);
    metrics.httpRequests.observe('/mcp', 'POST', 200, 'tools/call', 0.0004);
    metrics.httpRequests.observe('/mcp', 'POST', 200, 'tasks/get', 0.0007);

    const families = await flat(metrics);
    // A family's series may come in several runs: one per label set.
    const samples = (name: string) => families.flatMap((family) => (family.name === name ? family.metrics : []));
    expect(samples('taskgate_http_request_duration_seconds_count')).toEqual([
      { labels: { route: '/v1/tasks/:id', method: 'GET', status_code: '200' }, value: '2' },
      { labels: { route: '/v1/tasks/:id', method: 'GET', status_code: '404' }, value: '1' },
      { labels: { route: '/mcp', method: 'POST', status_code: '200', rpc_method: 'tools/call' }, value: '1' },
      { labels: { route: '/mcp', method: 'POST', status_code: '200', rpc_method: 'tasks/get' }, value: '1' },
    ]);
    expect(samples('taskgate_http_request_duration_seconds_sum')?.[0]).toEqual({
      labels: { route: '/v1/tasks/:id', method: 'GET', status_code: '200' },
      value: '0.022',
    });
    // Cumulative buckets, each observation in the first bound that holds it, and +Inf holds all.
    const buckets = samples('taskgate_http_request_duration_seconds_bucket')
      .filter((sample) => sample.labels?.status_code === '200' && sample.labels.route === '/v1/tasks/:id')
      .map((sample) => [sample.labels?.le, sample.value]);
    expect(buckets).toContainEqual(['0.001', '0']);
    expect(buckets).toContainEqual(['0.0025', '1']);
    expect(buckets).toContainEqual(['0.01', '1']);
    expect(buckets).toContainEqual(['0.025', '2']);
    expect(buckets.at(-1)).toEqual(['+Inf', '2']);
    const exposition = await metrics.scrape();
    expect(exposition).toContain('# TYPE taskgate_http_request_duration_seconds histogram');
    // A bound is a bucket's upper limit, inclusive (Prometheus's le).
    metrics.httpRequests.observe('/healthz', 'GET', 200, null, 0.001);
    expect(await metrics.scrape()).toContain(
      'taskgate_http_request_duration_seconds_bucket{route="/healthz",method="GET",status_code="200",le="0.001"} 1',
    );
  });
});
