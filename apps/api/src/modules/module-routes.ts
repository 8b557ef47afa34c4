import type { Database } from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { ModuleErrorDefinition, ToolModule } from '@taskgate/tools';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { tenantOf } from '../http/auth.ts';
import { idempotencyKeyOf, sendSubmission, submitWithKey } from '../routes/idempotent-submit.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { IdempotentMutation, type MutationDefinition, type MutationOutcome } from './idempotent-mutation.ts';
import { ModuleError } from './module-error.ts';

/**
 * What a tool module's routes get besides the Fastify instance. Routes run under /v1's guards: the
 * tenant is authenticated before the route runs, bodies are checked strictly, and failures are
 * problem+json.
 */
export interface RouteServices<DB = unknown> {
  /** The API's pool, for the module's own tables (its migrations made them). */
  readonly db: Kysely<DB>;
  /** The authenticated tenant of the request: every read and write of a module is scoped by it. */
  tenantOf(request: FastifyRequest): string;
  /**
   * Creates a task of a tool under the request's Idempotency-Key and answers as POST /v1/tasks
   * does: 201 with the task, a replay 200 with Idempotent-Replayed, a key still running 409 with
   * Retry-After, a key reused for another payload 422.
   */
  submitTask(
    request: FastifyRequest,
    reply: FastifyReply,
    call: { tool: string; arguments: Record<string, unknown> },
  ): Promise<FastifyReply>;
  /**
   * A mutation the route commits itself, once per Idempotency-Key (required: a call without one is
   * 400): key, effects, outbox events and stored result in one transaction; concurrent calls group
   * commit. Make it once, at registration, and call run() per request.
   */
  mutation<Input>(definition: MutationDefinition<Input, DB>): {
    run(request: FastifyRequest, input: Input): Promise<MutationOutcome>;
  };
  /** An error the module declared in its `errors` export, to throw from a route. */
  problem(code: string, message: string, errors?: readonly unknown[]): Error;
}

export interface ModuleRoutesOptions {
  readonly db: Kysely<Database>;
  readonly service: TaskService;
  /** How long idempotency keys are remembered after their call committed. */
  readonly retentionMs: number;
}

/** Registers each loaded module's routes in the scope given (the /v1 scope, with its guards). */
export async function registerModuleRoutes(
  scope: FastifyInstance,
  modules: readonly ToolModule[],
  options: ModuleRoutesOptions,
): Promise<void> {
  for (const module of modules) {
    if (!module.routes) continue;
    const services = routeServices(module, options);
    // Each module in its own encapsulated context: its hooks and decorators stay its own.
    try {
      await scope.register(async (moduleScope) => {
        await (module.routes as (app: FastifyInstance, services: RouteServices) => Promise<void> | void)(
          moduleScope,
          services,
        );
      });
    } catch (error) {
      // A route that throws or collides with another (the platform's own included) is the
      // module's fault: said as a bad module, naming its file, not as an internal error.
      throw new TaskgateError(
        'TG_TOOL_MODULE_INVALID',
        `tool module ${module.file}: its routes did not register: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }
}

function routeServices(module: ToolModule, options: ModuleRoutesOptions): RouteServices {
  const errors: Readonly<Record<string, ModuleErrorDefinition>> = module.errors;
  return {
    db: options.db as unknown as Kysely<unknown>,
    tenantOf,
    submitTask: async (request, reply, call) =>
      sendSubmission(reply, await submitWithKey(options.service, reply, tenantOf(request), request, call)),
    mutation: (definition) => {
      const mutation = new IdempotentMutation(options.db, definition, { retentionMs: options.retentionMs });
      return {
        run: (request, input) => {
          const key = idempotencyKeyOf(request);
          if (key === undefined) {
            throw new TaskgateError(
              'TG_IDEMPOTENCY_KEY_MISSING',
              `${definition.operation} requires an Idempotency-Key header`,
            );
          }
          return mutation.run({ tenantId: tenantOf(request), key, input });
        },
      };
    },
    problem: (code, message, details) => {
      const definition = errors[code];
      // A code the module never declared is its bug, not the caller's: a 500 that names it.
      if (!definition) return new Error(`tool module ${module.name} threw undeclared error code ${code}: ${message}`);
      return new ModuleError(code, definition, message, details);
    },
  };
}
