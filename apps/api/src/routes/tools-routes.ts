import { type Database, type EndedCounts, readToolStats } from '@taskgate/db';
import { type ToolCatalog, type ToolSpec, taskSupportOf } from '@taskgate/tools';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { type Static, Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';

/**
 * A tool as GET /v1/tools shows it: what MCP's tools/list says of it (name, schemas, annotations,
 * task support, and the call policy tools/list carries in `_meta`), as plain fields.
 */
export const ToolSchema = Type.Object(
  {
    name: Type.String(),
    title: Type.Optional(Type.String()),
    description: Type.String(),
    inputSchema: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the arguments' }),
    outputSchema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    annotations: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    taskSupport: Type.Enum(['forbidden', 'optional', 'required'], {
      description: 'whether an MCP call of it may, or must, run as a task (REST calls always do)',
    }),
    retry: Type.Enum(['safe', 'conditional', 'unsafe'], {
      description: 'safe: retry with a new call; conditional: retry with the same idempotency key; unsafe: look it up',
    }),
    idempotencyKey: Type.Optional(Type.Enum(['required', 'optional'])),
    timeouts: Type.Optional(
      Type.Object({ idleMs: Type.Optional(Type.Integer()), maxMs: Type.Optional(Type.Integer()) }),
    ),
  },
  { $id: 'Tool', additionalProperties: false },
);
export type ToolBody = Static<typeof ToolSchema>;

export const ToolListSchema = Type.Object({ tools: Type.Array(Type.Ref('Tool')) });

/** The entry of one offered tool. */
export function toolBody(tool: ToolSpec): ToolBody {
  return {
    name: tool.name,
    ...(tool.title ? { title: tool.title } : {}),
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    ...(tool.annotations ? { annotations: { ...tool.annotations } } : {}),
    taskSupport: taskSupportOf(tool),
    retry: tool.retry,
    ...(tool.retry === 'conditional' ? { idempotencyKey: tool.idempotencyKey ?? 'optional' } : {}),
    ...(tool.timeouts ? { timeouts: { ...tool.timeouts } } : {}),
  };
}

/**
 * GET /v1/tools: the tools this API offers, sorted by name — the catalog MCP's tools/list answers
 * from and POST /v1/tasks checks calls against (in a split deployment, what the workers publish;
 * the API holds no handler). One page, as tools/list is. The Tool schema is added at the root
 * (server.ts), where the OpenAPI document finds shared schemas.
 */
export function registerToolRoutes(
  app: FastifyInstance,
  options: { readonly tools: ToolCatalog; readonly db: Kysely<Database> },
): void {
  app.get(
    '/v1/tools',
    {
      schema: {
        summary: 'List the tools offered, sorted by name',
        description:
          'The tools a task may call (POST /v1/tasks): those the live workers publish to the tool catalog, as MCP tools/list offers them.',
        tags: ['tools'],
        security: [{ bearer: [] }],
        response: { 200: ToolListSchema, 401: Type.Ref('Problem'), 403: Type.Ref('Problem') },
      },
    },
    async () => ({ tools: options.tools.list().map(toolBody) }),
  );

  app.get(
    '/v1/tools/stats',
    {
      schema: {
        summary: "Per tool, the tenant's open tasks now and the tasks that ended in the last hour",
        description: `Queued (not yet started by a worker), running and waiting for input now, with the oldest queued task's creation; and of the tasks that ended since \`since\` (the start of the first of ${STATS_WINDOW.buckets} buckets of ${STATS_WINDOW.bucketMs / 60_000} minutes, the last of which is the current one): how many completed, failed and were cancelled, the p50/p99 of the run (a worker's start to the end) and of the cancel latency (the request to the cancelled end), in total and per bucket. Every tool served or with tasks is listed, sorted by name. Times are the database's.`,
        tags: ['tools'],
        security: [{ bearer: [] }],
        response: { 200: ToolStatsSchema, 401: Type.Ref('Problem'), 403: Type.Ref('Problem') },
      },
    },
    async (request) => {
      const stats = await readToolStats(options.db, tenantOf(request), STATS_WINDOW);
      const served = new Set(options.tools.list().map((tool) => tool.name));
      const open = new Map(stats.open.map((row) => [row.tool, row]));
      const ended = new Map(stats.ended.map((row) => [row.tool, row]));
      const names = [...new Set([...served, ...open.keys(), ...ended.keys()])].sort();
      const since = stats.since.getTime();
      const emptyBuckets = Array.from({ length: STATS_WINDOW.buckets }, (_, index) => ({
        start: new Date(since + index * STATS_WINDOW.bucketMs).toISOString(),
        ...countsBody(undefined),
      }));
      return {
        now: stats.now.toISOString(),
        since: stats.since.toISOString(),
        bucketMs: stats.bucketMs,
        tools: names.map((name) => {
          const now = open.get(name);
          const done = ended.get(name);
          return {
            name,
            served: served.has(name),
            queued: now?.queued ?? 0,
            running: now?.running ?? 0,
            inputRequired: now?.inputRequired ?? 0,
            oldestQueuedAt: now?.oldestQueuedAt?.toISOString() ?? null,
            ...countsBody(done),
            buckets:
              done?.buckets.map((bucket) => ({ start: bucket.start.toISOString(), ...countsBody(bucket) })) ??
              emptyBuckets,
          };
        }),
      };
    },
  );
}

/** The last hour, in 30 buckets of two minutes: enough points for a chart, few enough to read. */
const STATS_WINDOW = { bucketMs: 2 * 60_000, buckets: 30 } as const;

function countsBody(counts: EndedCounts | undefined) {
  return {
    completed: counts?.completed ?? 0,
    failed: counts?.failed ?? 0,
    cancelled: counts?.cancelled ?? 0,
    duration: counts?.duration ?? { p50Ms: null, p99Ms: null },
    cancelLatency: counts?.cancelLatency ?? { p50Ms: null, p99Ms: null },
  };
}

const Millis = Type.Union([Type.Integer(), Type.Null()]);
const Percentiles = Type.Object({ p50Ms: Millis, p99Ms: Millis }, { additionalProperties: false });
const endedFields = {
  completed: Type.Integer(),
  failed: Type.Integer(),
  cancelled: Type.Integer(),
  duration: Percentiles,
  cancelLatency: Percentiles,
};
const ToolStatsSchema = Type.Object({
  now: Type.String({ format: 'date-time' }),
  since: Type.String({ format: 'date-time' }),
  bucketMs: Type.Integer(),
  tools: Type.Array(
    Type.Object({
      name: Type.String(),
      served: Type.Boolean({ description: 'whether a live or recent worker serves it (else only its tasks remain)' }),
      queued: Type.Integer(),
      running: Type.Integer(),
      inputRequired: Type.Integer(),
      oldestQueuedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      ...endedFields,
      buckets: Type.Array(Type.Object({ start: Type.String({ format: 'date-time' }), ...endedFields })),
    }),
  ),
});
