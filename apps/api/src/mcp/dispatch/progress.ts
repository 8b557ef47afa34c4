import type { TaskProgress } from '@taskgate/db';

/** A request's progress token (basic/utilities/progress: a string or an integer), or null if it asked for none. */
export function progressTokenOf(params: Readonly<Record<string, unknown>> | undefined): string | number | null {
  const token = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : null;
}

/**
 * notifications/progress for one update, as both transports send it: `total` and `message` only
 * when known. Built at send time only, so a stalled reader's held update allocates nothing.
 */
export function progressNotification(token: string | number, progress: TaskProgress) {
  return {
    jsonrpc: '2.0',
    method: 'notifications/progress',
    params: {
      progressToken: token,
      progress: progress.value,
      ...(progress.total === null ? {} : { total: progress.total }),
      ...(progress.message === null ? {} : { message: progress.message }),
    },
  } as const;
}
