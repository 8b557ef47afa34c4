export { RequestDurations } from './request-durations.ts';
export { runMetrics } from './run-metrics.ts';
export {
  type AttemptSpan,
  configureTracing,
  createTaskTracing,
  formatTraceParent,
  parseTraceParent,
  processTracing,
  setProcessTracing,
  TaskTracing,
  type TracedAttempt,
  traceCreation,
} from './task-traces.ts';
export {
  type DatabaseSnapshot,
  type DownstreamSnapshot,
  processMetrics,
  TaskgateMetrics,
} from './taskgate-metrics.ts';
