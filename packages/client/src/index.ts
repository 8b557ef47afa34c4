export { CallClocks, systemTimers, type Timers } from './call-clocks.ts';
export { type CallHandle, callCancelled, callOutcomeUnknown, callTimedOut } from './client-errors.ts';
export {
  type CorrelatedTransport,
  correlatedTransport,
  type HeldCall,
  STREAM_ENDED,
  type WireEvents,
  type WireRequest,
} from './correlated-transport.ts';
export { type CorrelationStats, CorrelationTable, type Settlement } from './correlation-table.ts';
export { failureKind } from './failure-kind.ts';
export { type ReconnectOptions, ReconnectSchedule } from './reconnect-schedule.ts';
export {
  type KeyRecord,
  REST_ROUTES,
  RestClient,
  type RestClientOptions,
  type RestReconciliationItem,
  type RestTask,
  type RestTool,
} from './rest-client.ts';
export {
  type CallPolicy,
  callPolicyOf,
  decideRetry,
  type FailureKind,
  type RetryDecision,
  type RetryOptions,
} from './retry-plan.ts';
export { SUBSCRIPTION_ID, type SubscriptionWire, subscribeTasks, type TaskSubscription } from './task-subscription.ts';
export { getTask, ServerError, type TaskState, TERMINAL_STATUSES, watchTask } from './task-watch.ts';
export {
  type CallOptions,
  type CallToolOptions,
  type ClientOptions,
  DEFAULT_IDLE_MS,
  DEFAULT_MAX_MS,
  type HttpTarget,
  type Progress,
  type StdioTarget,
  TaskgateClient,
} from './taskgate-client.ts';
export { type Interceptors, interceptTransport, type MessageHandler, type SendOptions } from './transport-proxy.ts';
