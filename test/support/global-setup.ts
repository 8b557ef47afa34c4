import type { TestProject } from 'vitest/node';
import { findPostgres } from './postgres-server.ts';
import { openTestRun } from './test-run.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: { adminUrl: string; template: string; runId: string; source: string };
  }
}

/** Finds a Postgres and migrates this run's template once; every test file clones it. */
export default async function setup(project: TestProject) {
  const server = await findPostgres(process.env);
  const run = await openTestRun(server.adminUrl);
  project.provide('postgres', {
    adminUrl: server.adminUrl,
    template: run.template,
    runId: run.runId,
    source: server.source,
  });

  return async () => {
    await run.dropDatabases();
    await server.stop();
  };
}
