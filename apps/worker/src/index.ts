export { CancelWatcher, type CancelWatcherOptions } from './cancel-watcher.ts';
export {
  ContentWatchRunner,
  type ContentWatchRunnerOptions,
  DEFAULT_MIN_CHANGE_INTERVAL_MS,
} from './content-watch-runner.ts';
export { JobPump, type JobPumpOptions } from './job-pump.ts';
export { INSTANCE_RETENTION_MS, RetentionSweeper } from './retention-sweeper.ts';
export type { AttemptHooks } from './task-row-store.ts';
export { TaskRunner, type TaskRunnerOptions } from './task-runner.ts';
export { startWorkerRole, type WorkerRole, type WorkerRoleOptions } from './worker-role.ts';
