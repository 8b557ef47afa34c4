export { startWorkerRole, type WorkerRole, type WorkerRoleOptions } from './worker-role.ts';
