import { type Database, DEFAULT_LOST_AFTER_MS, heldTaskCounts, listInstances, toolsByInstance } from '@taskgate/db';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { problemResponses } from '../http/problem.ts';

/** Instances stopped or silent this recently still show (a rolling deploy's old ones, a crash). */
const RECENT_MS = 10 * 60 * 1000;
const MAX_INSTANCES = 500;

/**
 * GET /v1/instances (admin scope): the fleet as the database sees it — every API and worker
 * instance live now or gone within ten minutes, the tools each worker published with their
 * fingerprints (two fingerprints under one name is version skew: a rolling deploy, or a stale
 * worker), and how many open tasks each worker holds. Counts only: no tenant's task shows here.
 */
export function registerInstanceRoutes(app: FastifyInstance, options: { readonly db: Kysely<Database> }): void {
  const { db } = options;
  app.get(
    '/v1/instances',
    {
      schema: {
        summary: 'The instances of this deployment: roles, tools, fingerprints, tasks held, heartbeats',
        tags: ['operations'],
        security: [{ bearer: [] }],
        response: {
          200: Type.Object({
            instances: Type.Array(
              Type.Object({
                id: Type.String(),
                kind: Type.Enum(['api', 'worker']),
                host: Type.String(),
                pid: Type.Integer(),
                state: Type.Enum(['live', 'silent', 'stopped'], {
                  description: `live: heartbeating within ${DEFAULT_LOST_AFTER_MS / 1000} s; silent: not stopped, heartbeat older (its tasks are being recovered); stopped`,
                }),
                startedAt: Type.String({ format: 'date-time' }),
                heartbeatAt: Type.String({ format: 'date-time' }),
                stoppedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
                tools: Type.Array(
                  Type.Object({
                    name: Type.String(),
                    fingerprint: Type.String(),
                    concurrency: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
                      description: "how many of the tool's tasks this worker runs at once; null from an older worker",
                    }),
                  }),
                ),
                holding: Type.Integer({ description: 'open tasks this worker holds now (its concurrency in use)' }),
              }),
            ),
            skew: Type.Array(
              Type.Object(
                { tool: Type.String(), fingerprints: Type.Array(Type.String()) },
                { description: 'a tool live instances serve under more than one definition' },
              ),
            ),
          }),
          ...problemResponses(401, 403),
        },
      },
    },
    async () => {
      const instances = await listInstances(db, {
        liveWithinMs: DEFAULT_LOST_AFTER_MS,
        recentMs: RECENT_MS,
        limit: MAX_INSTANCES,
      });
      const ids = instances.map((instance) => instance.id);
      const [tools, held] = await Promise.all([
        toolsByInstance(db, ids),
        heldTaskCounts(
          db,
          instances.filter((instance) => instance.kind === 'worker').map((instance) => instance.id),
        ),
      ]);
      const byTool = new Map<string, Set<string>>();
      for (const instance of instances) {
        if (instance.state !== 'live') continue;
        for (const tool of tools.get(instance.id) ?? []) {
          const set = byTool.get(tool.name) ?? new Set<string>();
          set.add(tool.fingerprint);
          byTool.set(tool.name, set);
        }
      }
      return {
        instances: instances.map((instance) => ({
          id: instance.id,
          kind: instance.kind,
          host: instance.host,
          pid: instance.pid,
          state: instance.state,
          startedAt: instance.startedAt.toISOString(),
          heartbeatAt: instance.heartbeatAt.toISOString(),
          stoppedAt: instance.stoppedAt?.toISOString() ?? null,
          tools: tools.get(instance.id) ?? [],
          holding: held.get(instance.id) ?? 0,
        })),
        skew: [...byTool]
          .filter(([, fingerprints]) => fingerprints.size > 1)
          .map(([tool, fingerprints]) => ({ tool, fingerprints: [...fingerprints].sort() }))
          .sort((a, b) => (a.tool < b.tool ? -1 : 1)),
      };
    },
  );
}
