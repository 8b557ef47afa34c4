import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/**
 * The OpenAPI document is generated from the same schemas Fastify validates with, so it cannot
 * drift from what the API accepts. Served as /openapi.json, and browsable at /docs.
 */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  await app.register(swagger, {
    // Shared schemas keep their $id as their name in components.schemas (Task, Problem).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Taskgate',
        version,
        description:
          'Durable tasks for MCP tool calls. Errors are RFC 9457 problem+json with a stable `code` (docs/errors.md).',
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description:
              'a token from TASKGATE_TOKENS, or an OAuth access token from TASKGATE_OAUTH_ISSUER (docs/oauth.md)',
          },
        },
      },
      tags: [
        { name: 'tasks', description: 'Tool calls as durable tasks' },
        { name: 'tools', description: 'The tools offered: the catalog the workers publish' },
        {
          name: 'elicitations',
          description: "URL elicitations: telling an MCP client the user is done on the server's page",
        },
      ],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
