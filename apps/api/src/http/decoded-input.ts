import { TaskgateError } from '@taskgate/errors';
import { checkJsonValue, type JsonValueProblem } from '@taskgate/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Runs the one decoded-input check (packages/protocol checkJsonValue: depth, NUL, unpaired
 * surrogates, non-finite numbers) over everything of a request that may reach Postgres — body,
 * path parameters, query string and the Idempotency-Key header — after the body is parsed and
 * before the schema sees it (preValidation), so the schema and the handlers only meet values that
 * can be stored.
 */
export function checkDecodedInput(scope: FastifyInstance): void {
  scope.addHook('preValidation', async (request) => {
    for (const [location, value] of partsOf(request)) {
      const found = checkJsonValue(value);
      if (found) throw inputRefusal(found, location);
    }
  });
}

function partsOf(request: FastifyRequest): [string, unknown][] {
  return [
    ['body', request.body],
    ['params', request.params],
    ['querystring', request.query],
    ['headers', { 'idempotency-key': request.headers['idempotency-key'] }],
  ];
}

/** A found problem as the TaskgateError of its code, located like a schema error. */
export function inputRefusal(found: JsonValueProblem, location: string): TaskgateError {
  return new TaskgateError(found.code, `${location}: ${found.message}`, {
    details: { errors: [{ location, path: found.path, message: found.message }] },
  });
}
