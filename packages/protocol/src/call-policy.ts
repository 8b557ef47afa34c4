/**
 * Taskgate's own `_meta` keys on a tools/list entry: how a tool may be retried, whether it takes an
 * `idempotencyKey` argument, and its two clocks — what annotations only hint at. The server writes
 * them (apps/api/src/mcp/methods/tools-list.ts) and @taskgate/client reads them; the `dev.taskgate/`
 * prefix is ours, as the spec asks of a `_meta` key that is not the protocol's.
 */
export const CALL_POLICY_META = {
  retry: 'dev.taskgate/retry',
  idempotencyKey: 'dev.taskgate/idempotencyKey',
  timeouts: 'dev.taskgate/timeouts',
} as const;
