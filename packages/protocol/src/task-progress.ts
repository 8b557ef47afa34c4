/**
 * The task's latest progress on a tasks/get answer, under Taskgate's own `_meta` key (the Tasks
 * extension's DetailedTask has no progress field; `_meta` is where a server adds what the spec does
 * not define). A call that became a task has no request left for notifications/progress, so a
 * client that polls the task reads its progress here.
 */
export const TASK_PROGRESS_META = 'dev.taskgate/progress';

export interface TaskProgressMeta {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** The `_meta` entry for a stored progress (the task row's value, total and message). */
export function taskProgressMeta(
  progress: { readonly value: number; readonly total: number | null; readonly message: string | null } | null,
): Record<string, TaskProgressMeta> {
  if (progress === null) return {};
  return {
    [TASK_PROGRESS_META]: {
      progress: progress.value,
      ...(progress.total === null ? {} : { total: progress.total }),
      ...(progress.message === null ? {} : { message: progress.message }),
    },
  };
}

/** The progress a tasks/get answer carries, or null (none yet, or not a number). */
export function progressOfTask(task: { readonly [field: string]: unknown }): TaskProgressMeta | null {
  const meta = task._meta;
  if (meta === null || typeof meta !== 'object') return null;
  const entry = (meta as Record<string, unknown>)[TASK_PROGRESS_META] as Record<string, unknown> | undefined;
  if (entry === null || typeof entry !== 'object' || typeof entry.progress !== 'number') return null;
  if (!Number.isFinite(entry.progress)) return null;
  return {
    progress: entry.progress,
    ...(typeof entry.total === 'number' && Number.isFinite(entry.total) ? { total: entry.total } : {}),
    ...(typeof entry.message === 'string' ? { message: entry.message } : {}),
  };
}
