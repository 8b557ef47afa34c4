import type { ToolDefinition } from '@taskgate/sdk';
import type { AnyTool } from './any-tool.ts';
import type { PublishedContent } from './content-tool.ts';

/**
 * A tool as a caller sees it: its whole definition but the handler. This is what the catalog
 * stores and what an API process decides by (listing, validation, task support, required
 * capabilities, idempotency-key rules, retry class, clocks), whether or not it loaded the module.
 */
export type ToolSpec = Omit<ToolDefinition<never, unknown>, 'handler'>;

/**
 * The tools a front door (the HTTP API, MCP over stdio) can offer. An API process reads them from
 * the catalog the workers publish (CatalogTools); a test may hand it a ToolRegistry. Either way the
 * API never needs a handler, except for an inline tool whose module this process loaded (local).
 */
export interface ToolCatalog {
  /** The offered tools, sorted by name: the same array until the offer changes. */
  list(): readonly ToolSpec[];
  get(name: string): ToolSpec | undefined;
  /** Whether `args` fit the offered definition's input schema (an unknown name says so). */
  check(name: string, args: unknown): ArgumentCheck;
  /**
   * What is wrong with a result of the tool's handler run in this process (an inline tool), or
   * null: its CallToolResult shape and structuredContent against the tool's outputSchema.
   */
  resultProblem(name: string, result: unknown): string | null;
  /** toolFingerprint of the offered definition: what a task records it was accepted under. */
  fingerprint(name: string): string | undefined;
  /**
   * The definition with its handler, when this process loaded the module of the offered tool and
   * may run it itself (inline tools); undefined otherwise.
   */
  local(name: string): AnyTool | undefined;
  /** Moves exactly when list() does. */
  readonly version: string;
  /** Calls `listener` after each change of the offer; returns the unsubscribe function. */
  onChange(listener: () => void): () => void;
  /**
   * The modules' resources and prompts the catalog publishes (CatalogTools; a bare registry has
   * none): served by the workers that publish them.
   */
  content?(): readonly CatalogContent[];
  /** Calls `listener` after each change of content(). */
  onContentChange?(listener: () => void): () => void;
}

export interface ArgumentProblem {
  /** JSON Pointer into the arguments ("" for the arguments object itself). */
  readonly path: string;
  readonly message: string;
}

export type ArgumentCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly kind: 'unknown-tool' }
  | { readonly ok: false; readonly kind: 'invalid-arguments'; readonly problems: readonly ArgumentProblem[] };

/** A module's content as the catalog publishes it: served by the worker that serves `tool`. */
export interface CatalogContent {
  readonly tool: string;
  readonly fingerprint: string;
  readonly spec: ToolSpec;
  readonly content: PublishedContent;
}
