import type { TaskgateMetrics } from './taskgate-metrics.ts';

/**
 * A tool run's observer (packages/tools RunObserver, matched by shape) that counts into `metrics`.
 * A stop whose signal the run does not know (a durable cancel, learnt from its row) is handed to
 * `cancelFromRow`, which reads the path and the whole latency from the row once the run is over.
 */
export function runMetrics(metrics: TaskgateMetrics, cancelFromRow: () => void = () => {}) {
  return {
    stopped: (event: { readonly tool: string; readonly signal: string | null; readonly seconds: number }) => {
      if (event.signal === null) cancelFromRow();
      else metrics.cancelLatency.observe({ tool: event.tool, signal: event.signal }, event.seconds);
    },
    orphan: (event: { readonly kind: string; readonly tool: string; readonly delta: 1 | -1 }) => {
      metrics.orphans.inc({ kind: event.kind, tool: event.tool }, event.delta);
      if (event.delta > 0) metrics.orphansTotal.inc({ kind: event.kind, tool: event.tool });
    },
    abandoned: (event: { readonly tool: string; readonly outcome: string }) =>
      metrics.abandonedWithEffects.inc({ tool: event.tool, outcome: event.outcome }),
    finished: (event: { readonly tool: string; readonly status: string }) =>
      metrics.finished.inc({ tool: event.tool, status: event.status }),
  };
}
