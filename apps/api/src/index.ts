export { type ReadinessProbe, type ReadinessReport, registerHealthRoutes } from './health-routes.ts';
export { type ApiServerOptions, createApiServer } from './server.ts';
