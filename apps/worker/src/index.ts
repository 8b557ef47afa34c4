export { CancelWatcher, type CancelWatcherOptions } from './cancel-watcher.ts';
export { JobPump, type JobPumpOptions } from './job-pump.ts';
export { INSTANCE_RETENTION_MS, RetentionSweeper } from './retention-sweeper.ts';
export type { AttemptHooks } from './task-row-store.ts';
export { TaskRunner, type TaskRunnerOptions } from './task-runner.ts';
export { startWorkerRole, type WorkerRole, type WorkerRoleOptions } from './worker-role.ts';
