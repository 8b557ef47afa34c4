export { type ApiRole, type ApiRoleOptions, startApiRole } from './api-role.ts';
export { type ReadinessProbe, type ReadinessReport, registerHealthRoutes } from './health-routes.ts';
export { bearerTenants, type TenantResolver } from './http/auth.ts';
export { type Problem, problem, toProblem } from './http/problem.ts';
export { type ApiServerOptions, BODY_LIMIT_BYTES, createApiServer } from './server.ts';
export { SseStream, type SseStreamOptions } from './sse/sse-stream.ts';
export { decodeCursor, encodeCursor } from './tasks/task-cursor.ts';
export { TaskEventsHub } from './tasks/task-events-hub.ts';
export { type CreateTaskInput, type TaskListing, TaskService, type TaskServiceOptions } from './tasks/task-service.ts';
