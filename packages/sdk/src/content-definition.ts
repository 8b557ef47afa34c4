import type { ContentAnnotations, ContentBlock, InputRequest } from './tool-context.ts';

/**
 * Resources and prompts a module serves next to its tools (MCP server/resources, server/prompts).
 * They are published through the tool catalog like tools, so every API process lists them. An
 * API process that loaded the module reads them in the request, with no task row; one that did not
 * asks a worker serving the module, as a short platform-owned task. Either way they must be quick
 * and safe to call again. A read that outlives its clock (`timeoutMs`, default 10 s) or its
 * request is aborted through `ctx.signal` and answered -32603.
 */
export interface ContentContext {
  /** The caller's tenant: a resource that shows tenant data must show only this tenant's. */
  readonly tenant: string;
  /** Aborted when the request is cancelled or the read's clock runs out. */
  readonly signal: AbortSignal;
  /**
   * Asks the client for input (MCP 2026-07-28 multi round-trip) and resolves with the answers by
   * key once the client's retry carries every one: until then the request is answered
   * `input_required` and this handler runs again from the start on the retry. In older revisions
   * the requests go to the client on the request's own stream and this waits for its answers
   * (over HTTP only in a session; without one it rejects, and the client gets -32603). Either
   * way an answer is checked against its request (an elicitation's content against its
   * requestedSchema) before the handler sees it. A handler a worker runs for an API process that
   * did not load its module asks the same way: it runs again from the start with the answers.
   */
  input(requests: Readonly<Record<string, InputRequest>>): Promise<Record<string, unknown>>;
}

/**
 * A resource's contents as a handler returns them: text, or a base64 blob; `uri` defaults to the
 * URI read, `mimeType` to the declaration's.
 */
export type ResourceContents =
  | {
      readonly uri?: string;
      readonly mimeType?: string;
      readonly text: string;
      readonly _meta?: Readonly<Record<string, unknown>>;
    }
  | {
      readonly uri?: string;
      readonly mimeType?: string;
      readonly blob: string;
      readonly _meta?: Readonly<Record<string, unknown>>;
    };

interface ContentEntry {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  /** Longest read (default 10 s); the signal aborts and the client gets -32603. */
  readonly timeoutMs?: number;
}

/**
 * Suggestions for one argument (completion/complete): at most 100 are sent, the rest counted in
 * `total`. `context.arguments` holds the arguments the client already resolved; `tenant` and
 * `signal` are a read's (the signal aborts when the request is cancelled or the clock runs out).
 */
export type Completer = (
  value: string,
  context: {
    readonly arguments: Readonly<Record<string, string>>;
    readonly tenant: string;
    readonly signal: AbortSignal;
  },
) => readonly string[] | Promise<readonly string[]>;

/** A resource at a fixed URI. */
export interface ResourceDefinition extends ContentEntry {
  readonly uri: string;
  readonly mimeType?: string;
  /** Its size in bytes, if known (for clients that show it before reading). */
  readonly size?: number;
  readonly annotations?: ContentAnnotations;
  /** Its contents, or null when it is not there (the client gets resource-not-found). */
  read(ctx: ContentContext): Promise<readonly ResourceContents[] | null> | readonly ResourceContents[] | null;
  /**
   * Its change signal, for subscribers (resources/subscribe; 2026-07-28's subscriptions/listen
   * with resourceSubscriptions): called once per subscribing connection, it calls `changed`
   * whenever the contents change and returns the function that stops watching (called when the
   * client unsubscribes or goes away). Without it a subscription is accepted and never notified.
   */
  readonly watch?: (changed: () => void, ctx: WatchContext) => () => void;
}

/** What a resource's watch is told of the subscriber. */
export interface WatchContext {
  /** The subscriber's tenant: a resource that shows tenant data signals only this tenant's changes. */
  readonly tenant: string;
}

/**
 * Resources at the URIs of an RFC 6570 template of simple `{name}` expressions (level 1): each
 * variable matches one or more unreserved or percent-encoded characters, so never a `/`, and is
 * handed to `read` decoded.
 */
export interface ResourceTemplateDefinition extends ContentEntry {
  readonly uriTemplate: string;
  readonly mimeType?: string;
  readonly annotations?: ContentAnnotations;
  /** Completion for the template's variables, by name. */
  readonly complete?: Readonly<Record<string, Completer>>;
  /** The contents at `uri`, or null when nothing is there (the client gets resource-not-found). */
  read(
    uri: string,
    variables: Readonly<Record<string, string>>,
    ctx: ContentContext,
  ): Promise<readonly ResourceContents[] | null> | readonly ResourceContents[] | null;
  /** The change signal of the resource at `uri`, as a fixed resource's `watch`. */
  readonly watch?: (
    uri: string,
    variables: Readonly<Record<string, string>>,
    changed: () => void,
    ctx: WatchContext,
  ) => () => void;
}

export interface PromptArgument {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly required?: boolean;
}

export interface PromptMessage {
  readonly role: 'user' | 'assistant';
  readonly content: ContentBlock;
}

export interface PromptResult {
  readonly description?: string;
  readonly messages: readonly PromptMessage[];
}

/** A prompt template: its arguments are strings; a required one missing is -32602 before `get` runs. */
export interface PromptDefinition extends ContentEntry {
  readonly arguments?: readonly PromptArgument[];
  /** Completion for the prompt's arguments, by name. */
  readonly complete?: Readonly<Record<string, Completer>>;
  get(args: Readonly<Record<string, string>>, ctx: ContentContext): Promise<PromptResult> | PromptResult;
}

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
/** A URI: a scheme, then anything without spaces or controls (RFC 3986's shape, not its every rule). */
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s\p{Cc}]*$/u;
const EXPRESSION = /\{([^{}]*)\}/g;
const VARIABLE = /^[A-Za-z0-9_]+$/;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function entryProblem(definition: Record<string, unknown>, kind: string, label: string): string | null {
  const problem = (text: string) => `${kind} ${label}: ${text}`;
  if (typeof definition.name !== 'string' || definition.name === '' || definition.name.length > 256) {
    return problem('name must be a string of 1-256 characters');
  }
  for (const field of ['title', 'description', 'mimeType']) {
    if (definition[field] !== undefined && typeof definition[field] !== 'string') {
      return problem(`${field} must be a string`);
    }
  }
  const timeout = definition.timeoutMs;
  // A timer's longest delay (2^31 - 1 ms, about 24.8 days): past it, Node fires at once.
  if (
    timeout !== undefined &&
    !(Number.isInteger(timeout) && (timeout as number) > 0 && (timeout as number) <= MAX_TIMER_MS)
  ) {
    return problem(`timeoutMs must be a positive integer of milliseconds, at most ${MAX_TIMER_MS}`);
  }
  if (definition.annotations !== undefined && !isRecord(definition.annotations)) {
    return problem('annotations must be an object');
  }
  if (definition.complete !== undefined) {
    if (!isRecord(definition.complete)) return problem('complete must be an object of functions by argument name');
    for (const [name, fn] of Object.entries(definition.complete)) {
      if (typeof fn !== 'function') return problem(`complete.${name} must be a function`);
    }
  }
  return null;
}

const MAX_TIMER_MS = 2_147_483_647;

/** What is wrong with a resource declaration, or null (run on every one a module exports). */
export function resourceDefinitionProblem(definition: unknown): string | null {
  if (!isRecord(definition)) return 'a resource must be an object made with defineResource';
  const uri = definition.uri;
  if (typeof uri !== 'string' || uri.length > 2048 || !URI.test(uri)) {
    return `resource uri ${JSON.stringify(uri)} must be an absolute URI (scheme:...) of at most 2048 characters`;
  }
  if (typeof definition.read !== 'function') return `resource ${uri}: read must be a function`;
  if (definition.watch !== undefined && typeof definition.watch !== 'function') {
    return `resource ${uri}: watch must be a function`;
  }
  if (definition.size !== undefined && !(Number.isSafeInteger(definition.size) && (definition.size as number) >= 0)) {
    return `resource ${uri}: size must be a whole number of bytes`;
  }
  return entryProblem(definition, 'resource', uri);
}

/** The variable names of a level-1 URI template, in order, or the problem with it. */
export function templateVariables(uriTemplate: string): readonly string[] | { readonly problem: string } {
  const names: string[] = [];
  for (const [, expression] of uriTemplate.matchAll(EXPRESSION)) {
    if (!VARIABLE.test(expression as string)) {
      return {
        problem: `{${expression}} is not a simple {name} expression (only RFC 6570 level 1: A-Z a-z 0-9 _, no operators)`,
      };
    }
    if (names.includes(expression as string)) return { problem: `{${expression}} appears twice` };
    names.push(expression as string);
  }
  const literal = uriTemplate.replace(EXPRESSION, '');
  if (literal.includes('{') || literal.includes('}')) return { problem: 'it has an unmatched { or }' };
  if (names.length === 0) return { problem: 'it has no {name} expression (use defineResource for a fixed URI)' };
  return names;
}

export function resourceTemplateDefinitionProblem(definition: unknown): string | null {
  if (!isRecord(definition)) return 'a resource template must be an object made with defineResourceTemplate';
  const template = definition.uriTemplate;
  if (typeof template !== 'string' || template.length > 2048 || !URI.test(template)) {
    return `resource template ${JSON.stringify(template)} must be an absolute URI template (scheme:...) of at most 2048 characters`;
  }
  const variables = templateVariables(template);
  if ('problem' in variables) return `resource template ${template}: ${variables.problem}`;
  if (typeof definition.read !== 'function') return `resource template ${template}: read must be a function`;
  if (definition.watch !== undefined && typeof definition.watch !== 'function') {
    return `resource template ${template}: watch must be a function`;
  }
  const problem = entryProblem(definition, 'resource template', template);
  if (problem !== null) return problem;
  for (const name of Object.keys((definition.complete ?? {}) as object)) {
    if (!variables.includes(name)) return `resource template ${template}: complete.${name} names no variable of it`;
  }
  return null;
}

export function promptDefinitionProblem(definition: unknown): string | null {
  if (!isRecord(definition)) return 'a prompt must be an object made with definePrompt';
  const name = definition.name;
  if (typeof name !== 'string' || !NAME.test(name)) {
    return `prompt name ${JSON.stringify(name)} must be 1-128 of A-Z a-z 0-9 _ . -`;
  }
  if (typeof definition.get !== 'function') return `prompt ${name}: get must be a function`;
  const problem = entryProblem(definition, 'prompt', name);
  if (problem !== null) return problem;
  const args = definition.arguments ?? [];
  if (!Array.isArray(args)) return `prompt ${name}: arguments must be an array of { name, description?, required? }`;
  const seen = new Set<string>();
  for (const arg of args) {
    if (!isRecord(arg) || typeof arg.name !== 'string' || arg.name === '') {
      return `prompt ${name}: each argument must have a name`;
    }
    if (seen.has(arg.name)) return `prompt ${name}: argument ${arg.name} appears twice`;
    seen.add(arg.name);
    if (arg.required !== undefined && typeof arg.required !== 'boolean') {
      return `prompt ${name}: argument ${arg.name}'s required must be a boolean`;
    }
    for (const field of ['title', 'description']) {
      if (arg[field] !== undefined && typeof arg[field] !== 'string') {
        return `prompt ${name}: argument ${arg.name}'s ${field} must be a string`;
      }
    }
  }
  for (const key of Object.keys((definition.complete ?? {}) as object)) {
    if (!seen.has(key)) return `prompt ${name}: complete.${key} names no argument of it`;
  }
  return null;
}

function checked<T>(definition: T, problem: string | null): T {
  if (problem !== null) throw new TypeError(problem);
  return definition;
}

/** Declares a resource at a fixed URI; a bad declaration throws at start-up, not at the first read. */
export function defineResource(definition: ResourceDefinition): ResourceDefinition {
  return checked(definition, resourceDefinitionProblem(definition));
}

/** Declares resources at the URIs of a template, e.g. `notes://{id}`. */
export function defineResourceTemplate(definition: ResourceTemplateDefinition): ResourceTemplateDefinition {
  return checked(definition, resourceTemplateDefinitionProblem(definition));
}

/** Declares a prompt template. */
export function definePrompt(definition: PromptDefinition): PromptDefinition {
  return checked(definition, promptDefinitionProblem(definition));
}
