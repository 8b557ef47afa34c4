import type { Timers } from './call-clocks.ts';

/** A task as tasks/get answers it (the Tasks extension's DetailedTask), fields read loosely. */
export interface TaskState {
  readonly taskId: string;
  readonly status: string;
  readonly statusMessage?: string;
  readonly lastUpdatedAt?: string;
  readonly pollIntervalMs?: number;
  /** 2025-11-25's name for it. */
  readonly pollInterval?: number;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly code: number; readonly message: string; readonly data?: unknown };
  readonly [field: string]: unknown;
}

export const TERMINAL_STATUSES: readonly string[] = ['completed', 'failed', 'cancelled'];

/** Sends one request past the SDK and resolves with its JSON-RPC response. */
export type RawRequest = (method: string, params: Record<string, unknown>) => Promise<Record<string, unknown>>;

/** Used when the server names no interval; never polled faster than the floor, whatever it says. */
const DEFAULT_POLL_MS = 1_000;
const POLL_FLOOR_MS = 50;

/** tasks/get, its error as a TaskgateError-free JSON-RPC error thrown as it came. */
export async function getTask(request: RawRequest, taskId: string): Promise<TaskState> {
  const response = await request('tasks/get', { taskId });
  if (response.error !== undefined) throw rpcError('tasks/get', response.error);
  return response.result as TaskState;
}

/**
 * Polls a task until it reaches a terminal status, waiting the `pollIntervalMs` the server last
 * named between polls (it may change over the task's life). `onUpdate` sees every answer;
 * `signal` stops the watch (rejecting with its reason).
 */
export async function watchTask(
  request: RawRequest,
  taskId: string,
  options: { readonly timers: Timers; readonly signal?: AbortSignal; readonly onUpdate?: (task: TaskState) => void },
): Promise<TaskState> {
  for (;;) {
    options.signal?.throwIfAborted();
    const task = await getTask(request, taskId);
    options.onUpdate?.(task);
    if (TERMINAL_STATUSES.includes(task.status)) return task;
    const named = task.pollIntervalMs ?? task.pollInterval;
    const wait = Math.max(POLL_FLOOR_MS, Number.isFinite(named) ? (named as number) : DEFAULT_POLL_MS);
    await sleep(options.timers, wait, options.signal);
  }
}

export function sleep(timers: Timers, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      timers.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = timers.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A JSON-RPC error the server answered, with its code and data kept. */
export class ServerError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(method: string, error: { code?: unknown; message?: unknown; data?: unknown }) {
    super(`${method}: ${typeof error.message === 'string' ? error.message : 'error'}`);
    this.name = 'ServerError';
    this.code = typeof error.code === 'number' ? error.code : -32603;
    this.data = error.data;
  }
}

function rpcError(method: string, error: unknown): ServerError {
  return new ServerError(method, (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown });
}
