export { runMetrics } from './run-metrics.ts';
export { type DatabaseSnapshot, processMetrics, TaskgateMetrics } from './taskgate-metrics.ts';
