export { CallClocks, systemTimers, type Timers } from './call-clocks.ts';
export { callCancelled, callTimedOut } from './client-errors.ts';
export { correlatedTransport, type WireEvents, type WireRequest } from './correlated-transport.ts';
export { type CorrelationStats, CorrelationTable, type Settlement } from './correlation-table.ts';
export {
  type CallOptions,
  type ClientOptions,
  DEFAULT_IDLE_MS,
  DEFAULT_MAX_MS,
  type HttpTarget,
  type Progress,
  type StdioTarget,
  TaskgateClient,
} from './taskgate-client.ts';
export { type Interceptors, interceptTransport, type MessageHandler, type SendOptions } from './transport-proxy.ts';
