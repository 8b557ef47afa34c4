import { type Database, listTaskTenants } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import { callerOf } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';
import { TENANT_PATTERN } from '../http/tenant-name.ts';

/**
 * GET /v1/tenants (operator tokens only): the tenants that have tasks, in order, paged — what an
 * operator picks the tenant to act for from (then names it with X-Taskgate-Tenant or ?tenant=).
 * A tenant configured but without a task yet is not listed: the list is read from the tasks.
 */
export function registerTenantRoutes(app: FastifyInstance, options: { readonly db: Kysely<Database> }): void {
  app.get(
    '/v1/tenants',
    {
      schema: {
        summary: 'The tenants that have tasks, in order (operator tokens only)',
        tags: ['operations'],
        security: [{ bearer: [] }],
        querystring: Type.Object(
          {
            after: Type.Optional(
              Type.String({ pattern: TENANT_PATTERN.source, description: 'the last tenant of the page before' }),
            ),
            // A string, as every query value arrives: never coerced (a "1e3" is not a limit).
            limit: Type.Optional(
              Type.String({
                pattern: '^(?:[1-9][0-9]{0,2}|1000)$',
                description: 'page size: a decimal integer from 1 to 1000 (default 200)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            tenants: Type.Array(Type.String()),
            next: Type.Union([Type.String(), Type.Null()], { description: 'the `after` of the next page; null: none' }),
          }),
          ...problemResponses(400, 401, 403),
        },
      },
    },
    async (request) => {
      if (callerOf(request).operator !== true) {
        throw new TaskgateError(
          'TG_OPERATOR_ONLY',
          'only an operator token (TASKGATE_OPERATOR_TOKENS) lists the tenants',
        );
      }
      const query = request.query as { after?: string; limit?: string };
      const limit = query.limit === undefined ? 200 : Number.parseInt(query.limit, 10);
      // One more than the page, to know whether another follows.
      const tenants = await listTaskTenants(options.db, { after: query.after ?? null, limit: limit + 1 });
      const page = tenants.slice(0, limit);
      return { tenants: page, next: tenants.length > limit ? (page[page.length - 1] ?? null) : null };
    },
  );
}
