import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { tenantOf } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';

export interface ElicitationRoutesOptions {
  /**
   * Tells each live session of the tenant whose client was sent the URL elicitation in a -32042
   * (HandshakeSessions.completeElicitation); how many were told.
   */
  readonly complete: (tenantId: string, elicitationId: string) => Promise<number>;
}

/**
 * POST /v1/elicitations/:elicitationId/complete: the operator's page (a connect or payment page the
 * user was sent to by a URL elicitation) says the user is done there. The call that asked ended
 * with -32042, so no handler is left to say it: the client that was sent the elicitation gets
 * notifications/elicitation/complete on its session's GET stream (MCP 2025-11-25
 * client/elicitation), and may retry the call at once. Admin scope: it speaks for the server.
 */
export function registerElicitationRoutes(app: FastifyInstance, options: ElicitationRoutesOptions): void {
  app.post(
    '/v1/elicitations/:elicitationId/complete',
    {
      schema: {
        summary: 'Tell the client a URL elicitation sent in a URLElicitationRequiredError is complete',
        description:
          "Sends notifications/elicitation/complete to each MCP session (Streamable HTTP, of the revision that has the notification) of your tenant whose client was sent this elicitationId in a -32042 answer, on its GET stream, once. The session's client must have its GET stream open (or resume it within two minutes) to hear it.",
        tags: ['elicitations'],
        security: [{ bearer: [] }],
        // Fastify's maxParamLength (100) answers a longer path parameter 414 before the schema runs.
        params: Type.Object({ elicitationId: Type.String({ minLength: 1, maxLength: 100 }) }),
        response: {
          202: Type.Object(
            { sessions: Type.Integer({ description: 'how many sessions were told' }) },
            { additionalProperties: false },
          ),
          ...problemResponses(401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const { elicitationId } = request.params as { elicitationId: string };
      const sessions = await options.complete(tenantOf(request), elicitationId);
      if (sessions === 0) {
        throw new TaskgateError(
          'TG_ELICITATION_NOT_FOUND',
          'no live MCP session of this tenant was sent this elicitation in a -32042, or each was told already',
          { details: { elicitationId } },
        );
      }
      return reply.code(202).send({ sessions });
    },
  );
}
