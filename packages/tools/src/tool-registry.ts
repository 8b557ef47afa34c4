import { type ToolDefinition, toolDefinitionProblem } from '@taskgate/sdk';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { AnyTool } from './any-tool.ts';

export interface ArgumentProblem {
  /** JSON Pointer into the arguments ("" for the arguments object itself). */
  readonly path: string;
  readonly message: string;
}

export type ArgumentCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly kind: 'unknown-tool' }
  | { readonly ok: false; readonly kind: 'invalid-arguments'; readonly problems: readonly ArgumentProblem[] };

/** The tools a server offers, with their argument validators compiled once. */
export class ToolRegistry {
  readonly #tools = new Map<string, { tool: ToolDefinition; validate: ValidateFunction }>();

  constructor(tools: readonly AnyTool[]) {
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    (addFormats as unknown as (ajv: Ajv2020) => void)(ajv);
    for (const tool of tools) {
      // A module may export plain objects that never went through defineTool.
      const problem = toolDefinitionProblem(tool);
      if (problem !== null) throw new TypeError(problem);
      if (this.#tools.has(tool.name)) throw new TypeError(`tool ${tool.name} is defined twice`);
      let validate: ValidateFunction;
      try {
        validate = ajv.compile(tool.inputSchema);
      } catch (error) {
        throw new TypeError(`tool ${tool.name}: inputSchema does not compile: ${(error as Error).message}`);
      }
      this.#tools.set(tool.name, { tool: tool as unknown as ToolDefinition, validate });
    }
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name)?.tool;
  }

  list(): ToolDefinition[] {
    return [...this.#tools.values()].map((entry) => entry.tool);
  }

  /** Checks a call before anything is created: the tool exists and the arguments fit its schema. */
  check(name: string, args: unknown): ArgumentCheck {
    const entry = this.#tools.get(name);
    if (!entry) return { ok: false, kind: 'unknown-tool' };
    if (entry.validate(args)) return { ok: true };
    return { ok: false, kind: 'invalid-arguments', problems: (entry.validate.errors ?? []).map(toProblem) };
  }
}

function toProblem(error: ErrorObject): ArgumentProblem {
  const missing = error.keyword === 'required' ? `/${String(error.params.missingProperty)}` : '';
  const extra = error.keyword === 'additionalProperties' ? `/${String(error.params.additionalProperty)}` : '';
  return { path: `${error.instancePath}${missing}${extra}`, message: error.message ?? error.keyword };
}
