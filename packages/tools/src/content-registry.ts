import {
  type PromptDefinition,
  promptDefinitionProblem,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  resourceDefinitionProblem,
  resourceTemplateDefinitionProblem,
} from '@taskgate/sdk';
import { UriTemplate } from './uri-template.ts';

/** What one module (or the platform itself) serves besides tools. */
export interface ContentSet {
  readonly resources?: readonly ResourceDefinition[];
  readonly resourceTemplates?: readonly ResourceTemplateDefinition[];
  readonly prompts?: readonly PromptDefinition[];
}

export interface TemplateEntry {
  readonly definition: ResourceTemplateDefinition;
  readonly matcher: UriTemplate;
}

/** What a URI names: a fixed resource, or a template's resource with its variables. */
export type ResolvedResource =
  | { readonly kind: 'resource'; readonly definition: ResourceDefinition }
  | {
      readonly kind: 'template';
      readonly definition: ResourceTemplateDefinition;
      readonly variables: Readonly<Record<string, string>>;
    };

/**
 * The resources, resource templates and prompts of the modules loaded in this process, checked
 * together: each declaration as defineResource & co. check it, and no URI, template or prompt
 * name twice. Lists are sorted (by URI, template, name) so that pages are stable; the same
 * arrays are handed out until the process loads something else (never, today).
 */
export class ContentRegistry {
  readonly #resources: readonly ResourceDefinition[];
  readonly #byUri = new Map<string, ResourceDefinition>();
  readonly #templates: readonly TemplateEntry[];
  readonly #byTemplate = new Map<string, TemplateEntry>();
  readonly #prompts: readonly PromptDefinition[];
  readonly #byPrompt = new Map<string, PromptDefinition>();

  constructor(sets: readonly ContentSet[]) {
    for (const set of sets) {
      for (const resource of set.resources ?? []) {
        fail(resourceDefinitionProblem(resource));
        if (this.#byUri.has(resource.uri)) fail(`resource ${resource.uri} is defined twice`);
        this.#byUri.set(resource.uri, resource);
      }
      for (const template of set.resourceTemplates ?? []) {
        fail(resourceTemplateDefinitionProblem(template));
        if (this.#byTemplate.has(template.uriTemplate))
          fail(`resource template ${template.uriTemplate} is defined twice`);
        this.#byTemplate.set(template.uriTemplate, {
          definition: template,
          matcher: new UriTemplate(template.uriTemplate),
        });
      }
      for (const prompt of set.prompts ?? []) {
        fail(promptDefinitionProblem(prompt));
        if (this.#byPrompt.has(prompt.name)) fail(`prompt ${prompt.name} is defined twice`);
        this.#byPrompt.set(prompt.name, prompt);
      }
    }
    this.#resources = Object.freeze([...this.#byUri.values()].sort((a, b) => compare(a.uri, b.uri)));
    this.#templates = Object.freeze(
      [...this.#byTemplate.values()].sort((a, b) => compare(a.definition.uriTemplate, b.definition.uriTemplate)),
    );
    this.#prompts = Object.freeze([...this.#byPrompt.values()].sort((a, b) => compare(a.name, b.name)));
  }

  resources(): readonly ResourceDefinition[] {
    return this.#resources;
  }

  templates(): readonly TemplateEntry[] {
    return this.#templates;
  }

  prompts(): readonly PromptDefinition[] {
    return this.#prompts;
  }

  prompt(name: string): PromptDefinition | undefined {
    return this.#byPrompt.get(name);
  }

  template(uriTemplate: string): TemplateEntry | undefined {
    return this.#byTemplate.get(uriTemplate);
  }

  /** A fixed resource first; else the first template (in sorted order) whose URIs include `uri`. */
  resolve(uri: string): ResolvedResource | null {
    const fixed = this.#byUri.get(uri);
    if (fixed) return { kind: 'resource', definition: fixed };
    for (const entry of this.#templates) {
      const variables = entry.matcher.match(uri);
      if (variables) return { kind: 'template', definition: entry.definition, variables };
    }
    return null;
  }

  get empty(): boolean {
    return this.#resources.length === 0 && this.#templates.length === 0 && this.#prompts.length === 0;
  }
}

/** Code-unit order: the same on every process, whatever its locale. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function fail(problem: string | null): void {
  if (problem !== null) throw new TypeError(problem);
}
