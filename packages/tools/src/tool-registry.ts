import { headerParametersOf } from '@taskgate/protocol';
import { type ToolCatalogEntry, toolCatalogEntry } from '@taskgate/reliability';
import { type ToolDefinition, toolDefinitionProblem } from '@taskgate/sdk';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { AnyTool } from './any-tool.ts';
import { toolResultProblem } from './result-check.ts';
import { checkWith, SchemaValidators } from './schema-validators.ts';
import type { ArgumentCheck, ToolCatalog } from './tool-catalog.ts';

interface Entry {
  readonly tool: ToolDefinition;
  readonly validate: ValidateFunction;
  /** Of the tool's outputSchema, when it has one: structuredContent must fit it (MCP's MUST). */
  readonly validateOutput: ValidateFunction | null;
  readonly catalog: ToolCatalogEntry;
}

/**
 * The tools of the modules this process loaded, with their handlers and their argument validators
 * compiled once: what a worker serves (and publishes), and a fixed ToolCatalog for tests.
 */
export class ToolRegistry implements ToolCatalog {
  readonly #tools = new Map<string, Entry>();
  readonly #list: readonly ToolDefinition[];

  constructor(tools: readonly AnyTool[]) {
    const validators = new SchemaValidators();
    for (const tool of tools) {
      // A module may export plain objects that never went through defineTool.
      const problem = toolDefinitionProblem(tool);
      if (problem !== null) throw new TypeError(problem);
      if (this.#tools.has(tool.name)) throw new TypeError(`tool ${tool.name} is defined twice`);
      // A bad x-mcp-header makes the definition one clients must drop: refused here instead.
      const headers = headerParametersOf(tool.inputSchema);
      if ('problem' in headers) throw new TypeError(`tool ${tool.name}: ${headers.problem}`);
      const catalog = toolCatalogEntry(tool as unknown as Record<string, unknown>);
      let validate: ValidateFunction;
      try {
        validate = validators.compile(catalog.fingerprint, tool.inputSchema);
      } catch (error) {
        throw new TypeError(`tool ${tool.name}: inputSchema does not compile: ${(error as Error).message}`);
      }
      let validateOutput: ValidateFunction | null = null;
      if (tool.outputSchema !== undefined) {
        try {
          validateOutput = validators.compile(`${catalog.fingerprint}:output`, tool.outputSchema);
        } catch (error) {
          throw new TypeError(`tool ${tool.name}: outputSchema does not compile: ${(error as Error).message}`);
        }
      }
      this.#tools.set(tool.name, { tool: tool as unknown as ToolDefinition, validate, validateOutput, catalog });
    }
    this.#list = Object.freeze(
      [...this.#tools.values()].map((entry) => entry.tool).sort((a, b) => (a.name < b.name ? -1 : 1)),
    );
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name)?.tool;
  }

  /** Sorted by name, as the catalog lists. */
  list(): readonly ToolDefinition[] {
    return this.#list;
  }

  /** Checks a call before anything is created: the tool exists and the arguments fit its schema. */
  check(name: string, args: unknown): ArgumentCheck {
    const entry = this.#tools.get(name);
    if (!entry) return { ok: false, kind: 'unknown-tool' };
    return checkWith(entry.validate, args);
  }

  /**
   * What is wrong with a result of the tool's handler, or null: the CallToolResult shape, and its
   * structuredContent against the tool's outputSchema.
   */
  resultProblem(name: string, result: unknown): string | null {
    const shape = toolResultProblem(result);
    if (shape !== null) return shape;
    const validateOutput = this.#tools.get(name)?.validateOutput;
    if (!validateOutput) return null;
    const structured = (result as { structuredContent?: unknown }).structuredContent;
    // An error result need not carry the declared structure (MCP: structured results are the successes').
    if ((result as { isError?: unknown }).isError === true && structured === undefined) return null;
    if (validateOutput(structured ?? null)) return null;
    const first = validateOutput.errors?.[0];
    return `its structuredContent does not match its outputSchema${first ? ` (${first.instancePath || '/'} ${first.message})` : ''}`;
  }

  fingerprint(name: string): string | undefined {
    return this.#tools.get(name)?.catalog.fingerprint;
  }

  /** Every tool here has its handler. */
  local(name: string): AnyTool | undefined {
    return this.#tools.get(name)?.tool as AnyTool | undefined;
  }

  /** What a worker publishes: each tool's definition without its handler, and its fingerprint. */
  catalogEntries(): ToolCatalogEntry[] {
    return [...this.#tools.values()].map((entry) => entry.catalog);
  }

  /** A registry never changes. */
  get version(): string {
    return 'static';
  }

  onChange(): () => void {
    return () => {};
  }
}
