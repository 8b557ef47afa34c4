import { type ToolCatalog, type ToolSpec, taskSupportOf } from '@taskgate/tools';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';

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
export function registerToolRoutes(app: FastifyInstance, options: { readonly tools: ToolCatalog }): void {
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
}
