import { readFileSync } from 'node:fs';
import path from 'node:path';
import { TaskgateMetrics } from '@taskgate/metrics';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli.ts';

const reference = readFileSync(path.join(REPO_ROOT, 'docs/reference/metrics.md'), 'utf8');

describe('docs/reference/metrics.md', () => {
  it("names every metric Taskgate registers (Node's own process metrics aside)", () => {
    const names = new TaskgateMetrics({ processMetrics: false }).registry
      .getMetricsAsArray()
      .map((metric) => metric.name);
    expect(names).toEqual(
      expect.arrayContaining(['taskgate_cancel_latency_seconds', 'taskgate_http_request_duration_seconds']),
    );
    expect(names.filter((name) => !reference.includes(`\`${name}\``))).toEqual([]);
  });
});
