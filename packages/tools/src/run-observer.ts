import type { CancelSignal } from '@taskgate/reliability';

/**
 * What a run tells whoever counts (the worker's and the API's metrics), so ToolRun stays free of
 * any metrics library. Every method is optional and must not throw.
 */
export interface RunObserver {
  /**
   * The handler exited after a stop, `seconds` after the stop reached this run. `signal` is null
   * for a cancel whose path this run does not know (a durable task's, learnt from its row: the
   * worker reads the path and the whole latency there, readCancelTiming).
   */
  stopped?(event: { readonly tool: string; readonly signal: CancelSignal | null; readonly seconds: number }): void;
  /**
   * +1 when a handler or a subprocess tree is still running a grace period after its stop, -1
   * when it is gone (orphaned work; expected 0).
   */
  orphan?(event: { readonly kind: 'handler' | 'subprocess'; readonly tool: string; readonly delta: 1 | -1 }): void;
  /** The run ended failed or cancelled after an irreversible step (reconciliation has an item). */
  abandoned?(event: { readonly tool: string; readonly outcome: 'effects' | 'unknown' }): void;
  /** The run wrote its task's end (completed, failed, cancelled). */
  finished?(event: { readonly tool: string; readonly status: 'completed' | 'failed' | 'cancelled' }): void;
}
