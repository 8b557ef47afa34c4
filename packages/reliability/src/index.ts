export {
  type BackoffOptions,
  backoffCeiling,
  backoffDelay,
  deterministicJitter,
  fnv1a32,
  type Jitter,
  jitteredDelay,
} from './backoff.ts';
export { Batcher, type BatcherOptions, type RunBatch } from './batcher.ts';
export {
  BoundedBuffer,
  type BoundedBufferOptions,
  type BufferItem,
  type CoalesceMode,
  type PushResult,
} from './bounded-buffer.ts';
export {
  CANCEL_SIGNALS,
  type CancelSignal,
  cancelSignalOf,
  isCancelSignal,
  StopSignalError,
} from './cancel-signal.ts';
export { LoopSignals } from './loop-signals.ts';
export { ProgressGate, type ProgressGateOptions, type ProgressUpdate } from './progress-gate.ts';
export { ReplayLog } from './replay-log.ts';
export {
  type BeginResult,
  type CancelDecision,
  type CompleteDecision,
  RequestCoordinator,
  type RequestCoordinatorOptions,
  type RequestId,
  type RequestState,
  requestIdKey,
} from './request-coordinator.ts';
export { canonicalJson, fingerprintInput, mayRetryAutomatically, type RetryClass } from './retry-policy.ts';
export { sha256Hex } from './sha256.ts';
export { type QueueRoom, shareSlots } from './slot-shares.ts';
export {
  checkTransition,
  isTaskStatus,
  isTerminalStatus,
  TASK_STATUSES,
  type TaskStatus,
  TERMINAL_STATUSES,
  type TerminalTaskStatus,
  type TransitionCheck,
} from './task-state.ts';
export { type ToolCatalogEntry, toolCatalogEntry, toolFingerprint } from './tool-fingerprint.ts';
export {
  type DeadlineClock,
  type DeadlineExpiry,
  type DeadlineLimits,
  type NextDeadline,
  TwoClockDeadline,
} from './two-clock-deadline.ts';
