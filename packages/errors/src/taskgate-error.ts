import { type ErrorCode, type ErrorDefinition, errorRegistry } from './registry.ts';

export interface TaskgateErrorOptions {
  /** Machine-readable facts about the failure (field names, versions, ...). Never secrets. */
  readonly details?: Readonly<Record<string, unknown>>;
  readonly cause?: unknown;
}

/**
 * An expected failure with a registered code. The message is one sentence an operator can act on;
 * anything that is not a TaskgateError is a bug and is reported as TG_INTERNAL.
 */
export class TaskgateError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, options: TaskgateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TaskgateError';
    this.code = code;
    this.details = options.details ?? {};
  }

  get definition(): ErrorDefinition {
    return errorRegistry[this.code];
  }
}

export function isTaskgateError(error: unknown, code?: ErrorCode): error is TaskgateError {
  return error instanceof TaskgateError && (code === undefined || error.code === code);
}
