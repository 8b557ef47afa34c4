export { requestTimeoutMs, retryDelay } from './delivery-schedule.ts';
export { OutboxRelay, type OutboxRelayOptions } from './outbox-relay.ts';
export { type RelayRole, type RelayRoleOptions, startRelayRole } from './relay-role.ts';
export {
  type SendResult,
  WebhookSink,
  type WebhookSinkOptions,
  webhookBody,
  webhookSignature,
} from './webhook-sink.ts';
