import type { GatewayDefinition } from '@taskgate/sdk';
import type { AnyTool } from './any-tool.ts';
import type { ContentSet } from './content-registry.ts';

/**
 * Extra HTTP routes a module adds to the API processes that load it: a Fastify plugin (called with
 * the Fastify instance, under the API's authentication and error handling) and the services
 * routes may use. Typed loosely here so that the tool runtime does not depend on Fastify.
 */
export type ModuleRoutes = (app: never, services: never) => Promise<void> | void;

/** A tool module as loaded: what it serves and brings, and where it came from. */
export interface ToolModule {
  /** The module's name: its `name` export, else its package's name, else its file's. */
  readonly name: string;
  /** The file that was imported (for messages). */
  readonly file: string;
  readonly tools: readonly AnyTool[];
  /** Its resources, resource templates and prompts (each list possibly empty). */
  readonly content?: ContentSet;
  /** The folder of its own SQL migrations, or null. */
  readonly migrationsDir: string | null;
  readonly routes: ModuleRoutes | null;
  /** The error codes its routes answer with, by code. */
  readonly errors: Readonly<Record<string, ModuleErrorDefinition>>;
  /** Downstream MCP servers whose tools it publishes (a worker connects them; packages/gateway). */
  readonly gateways?: readonly GatewayDefinition[];
}

/**
 * An error a module's routes answer with (problem+json with this code, title and status). Codes are
 * the module's own: upper case, never `TG_` (the platform's), unique across the loaded modules.
 */
export interface ModuleErrorDefinition {
  readonly title: string;
  readonly httpStatus: number;
}

/** What a module may export, by name or as the fields of its default export. */
export const MODULE_EXPORTS = [
  'name',
  'tools',
  'resources',
  'resourceTemplates',
  'prompts',
  'migrations',
  'routes',
  'errors',
  'gateways',
] as const;
