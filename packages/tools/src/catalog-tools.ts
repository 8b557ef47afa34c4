import { toolDefinitionProblem } from '@taskgate/sdk';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { AnyTool } from './any-tool.ts';
import { CONTENT_TOOL_PREFIX, PLATFORM_TOOL_PREFIX, readPublishedContent } from './content-tool.ts';
import { toolResultProblem } from './result-check.ts';
import { checkWith, SchemaValidators } from './schema-validators.ts';
import type { ArgumentCheck, CatalogContent, ToolCatalog, ToolSpec } from './tool-catalog.ts';
import type { ToolRegistry } from './tool-registry.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** What CatalogTools reads: packages/db's CatalogView (the API's cached copy of the catalog). */
export interface CatalogSource {
  entries(): readonly {
    readonly name: string;
    readonly fingerprint: string;
    readonly definition: Readonly<Record<string, unknown>>;
  }[];
  /** Moves exactly when the listing (names and fingerprints) does. */
  readonly version: string;
  onChange(listener: () => void): () => void;
}

interface Offered {
  readonly spec: ToolSpec;
  readonly fingerprint: string;
  readonly validate: ValidateFunction | null;
  /** Set for an inline tool of a module this process loaded: it runs here. */
  readonly local: AnyTool | null;
}

/**
 * The tools an API process offers: what the catalog lists (definitions the workers published,
 * never their handlers), plus the inline tools of modules this process loaded itself. An inline
 * tool runs only where its module is loaded, so a local inline tool is offered with this process's
 * own definition (even over a catalog entry of the same name) and run here; a catalog tool marked
 * inline that this process did not load is offered all the same, and its calls go to a worker as
 * durable tasks.
 *
 * Definitions are checked as they arrive (the same checks defineTool makes, and the schema must
 * compile): one that fails is left out of the offer and logged once, so a broken or foreign
 * publisher cannot make tools/list or a call throw. Validators are compiled once per fingerprint.
 */
export class CatalogTools implements ToolCatalog {
  readonly #source: CatalogSource;
  readonly #localInline: readonly AnyTool[];
  readonly #localRegistry: ToolRegistry | null;
  readonly #logger: { readonly warn: LogFn };
  readonly #validators = new SchemaValidators();
  readonly #listeners = new Set<() => void>();
  readonly #contentListeners = new Set<() => void>();
  /** The offer's names and fingerprints, tools and content apart, as built and as last told. */
  #toolsSignature = '';
  #contentSignature = '';
  #toldTools = '';
  #toldContent = '';
  #content: readonly CatalogContent[] = Object.freeze([]);
  /** The content entries by tool name: an unchanged version is not read again. */
  #byTool = new Map<string, CatalogContent>();
  /** Fingerprints already reported as unusable: said once, not at every refresh. */
  readonly #refused = new Set<string>();
  #builtFor: string | null = null;
  #byName = new Map<string, Offered>();
  #list: readonly ToolSpec[] = Object.freeze([]);
  readonly #unsubscribe: () => void;

  constructor(source: CatalogSource, options: { local?: ToolRegistry | null; logger: { readonly warn: LogFn } }) {
    this.#source = source;
    this.#localRegistry = options.local ?? null;
    this.#localInline = (options.local?.list() ?? []).filter((tool) => tool.inline === true) as AnyTool[];
    this.#logger = options.logger;
    this.#unsubscribe = source.onChange(() => {
      // Against what listeners were last told, not the last build: a list() between the source's
      // change and this call has rebuilt already.
      this.#current();
      if (this.#toolsSignature !== this.#toldTools) {
        this.#toldTools = this.#toolsSignature;
        this.#tell(this.#listeners, 'a tool list change listener failed');
      }
      if (this.#contentSignature !== this.#toldContent) {
        this.#toldContent = this.#contentSignature;
        this.#tell(this.#contentListeners, 'a content list change listener failed');
      }
    });
    this.#current();
    this.#toldTools = this.#toolsSignature;
    this.#toldContent = this.#contentSignature;
  }

  #tell(listeners: ReadonlySet<() => void>, failure: string): void {
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        this.#logger.warn({ error: (error as Error).message }, failure);
      }
    }
  }

  /**
   * The modules' content the catalog publishes (one entry per content tool, sorted by its name):
   * the same array until it changes. Content tools are never offered as tools.
   */
  content(): readonly CatalogContent[] {
    this.#current();
    return this.#content;
  }

  /** Calls `listener` after each change of content(); returns the unsubscribe function. */
  onContentChange(listener: () => void): () => void {
    this.#contentListeners.add(listener);
    return () => this.#contentListeners.delete(listener);
  }

  list(): readonly ToolSpec[] {
    return this.#current().list;
  }

  get(name: string): ToolSpec | undefined {
    return this.#current().byName.get(name)?.spec;
  }

  check(name: string, args: unknown): ArgumentCheck {
    const offered = this.#current().byName.get(name);
    if (!offered) return { ok: false, kind: 'unknown-tool' };
    if (offered.local) return (this.#localRegistry as ToolRegistry).check(name, args);
    return checkWith(offered.validate as ValidateFunction, args);
  }

  fingerprint(name: string): string | undefined {
    return this.#current().byName.get(name)?.fingerprint;
  }

  local(name: string): AnyTool | undefined {
    return this.#current().byName.get(name)?.local ?? undefined;
  }

  resultProblem(name: string, result: unknown): string | null {
    // Only a local tool runs here; it is checked by the registry that compiled its outputSchema.
    if (this.#current().byName.get(name)?.local)
      return (this.#localRegistry as ToolRegistry).resultProblem(name, result);
    return toolResultProblem(result);
  }

  get version(): string {
    return this.#source.version;
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops following the source (the source itself is its owner's to stop). */
  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
    this.#contentListeners.clear();
  }

  /** The offer for the source's current version, rebuilt when that moved. */
  #current(): { list: readonly ToolSpec[]; byName: ReadonlyMap<string, Offered> } {
    const version = this.#source.version;
    if (version !== this.#builtFor) this.#rebuild(version);
    return { list: this.#list, byName: this.#byName };
  }

  #rebuild(version: string): void {
    const byName = new Map<string, Offered>();
    for (const tool of this.#localInline) {
      const fingerprint = this.#localRegistry?.fingerprint(tool.name) as string;
      byName.set(tool.name, { spec: tool, fingerprint, validate: null, local: tool });
    }
    const content: CatalogContent[] = [];
    for (const entry of this.#source.entries()) {
      if (entry.name.startsWith(PLATFORM_TOOL_PREFIX)) {
        const found = this.#platformEntry(entry);
        if (found) content.push(found);
        continue;
      }
      if (byName.has(entry.name)) continue;
      const spec = entry.definition as unknown as ToolSpec;
      const validate = this.#usable(entry.name, entry.fingerprint, spec);
      if (validate) byName.set(entry.name, { spec, fingerprint: entry.fingerprint, validate, local: null });
    }
    const sorted = [...byName.values()].sort((a, b) => (a.spec.name < b.spec.name ? -1 : 1));
    content.sort((a, b) => (a.tool < b.tool ? -1 : 1));
    this.#validators.retain(new Set(sorted.map((offered) => offered.fingerprint)));
    this.#byName = new Map(sorted.map((offered) => [offered.spec.name, offered]));
    this.#list = Object.freeze(sorted.map((offered) => offered.spec));
    const contentSignature = content.map((entry) => `${entry.tool}:${entry.fingerprint}`).join('\n');
    if (contentSignature !== this.#contentSignature) {
      this.#content = Object.freeze(content);
      this.#byTool = new Map(content.map((entry) => [entry.tool, entry]));
      this.#contentSignature = contentSignature;
    }
    this.#toolsSignature = sorted.map((offered) => `${offered.spec.name}:${offered.fingerprint}`).join('\n');
    this.#builtFor = version;
  }

  /** A content tool's entry, or null (logged once) for a platform name it cannot be. */
  #platformEntry(entry: ReturnType<CatalogSource['entries']>[number]): CatalogContent | null {
    if (this.#refused.has(entry.fingerprint)) return null;
    const known = this.#byTool.get(entry.name);
    if (known?.fingerprint === entry.fingerprint) return known;
    const spec = entry.definition as unknown as ToolSpec;
    const content = entry.name.startsWith(CONTENT_TOOL_PREFIX)
      ? readPublishedContent(entry.definition)
      : 'no platform tool has that name';
    const problem =
      typeof content === 'string'
        ? content
        : toolDefinitionProblem({ ...spec, handler: async () => ({ content: [] }) });
    if (problem === null && typeof content !== 'string') {
      return { tool: entry.name, fingerprint: entry.fingerprint, spec, content };
    }
    this.#refused.add(entry.fingerprint);
    this.#logger.warn(
      { tool: entry.name, fingerprint: entry.fingerprint, problem },
      'a platform catalog entry cannot be used; its content is left out of the lists',
    );
    return null;
  }

  #usable(name: string, fingerprint: string, spec: ToolSpec): ValidateFunction | null {
    if (this.#refused.has(fingerprint)) return null;
    // defineTool's own checks; the handler is the one thing a catalog entry never has.
    let problem = toolDefinitionProblem({ ...spec, handler: async () => ({ content: [] }) });
    let validate: ValidateFunction | null = null;
    if (problem === null) {
      try {
        validate = this.#validators.compile(fingerprint, spec.inputSchema);
      } catch (error) {
        problem = `tool ${name}: inputSchema does not compile: ${(error as Error).message}`;
      }
    }
    if (problem === null) return validate;
    this.#refused.add(fingerprint);
    this.#logger.warn(
      { tool: name, fingerprint, problem },
      'a catalog definition cannot be offered; the tool is left out of tools/list',
    );
    return null;
  }
}
