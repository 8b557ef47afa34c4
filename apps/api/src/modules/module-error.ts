import type { ModuleErrorDefinition } from '@taskgate/tools';

/**
 * An error a tool module's route answers with: problem+json with the module's own code, title and
 * 4xx status (declared in the module's `errors` export; see RouteServices.problem).
 */
export class ModuleError extends Error {
  readonly code: string;
  readonly definition: ModuleErrorDefinition;
  readonly errors: readonly unknown[] | undefined;

  constructor(code: string, definition: ModuleErrorDefinition, message: string, errors?: readonly unknown[]) {
    super(message);
    this.name = 'ModuleError';
    this.code = code;
    this.definition = definition;
    this.errors = errors;
  }
}
