import { canonicalJson, sha256Hex } from '@taskgate/reliability';
import type {
  Completer,
  ContentContext,
  InputRequest,
  PromptDefinition,
  PromptResult,
  ResourceDefinition,
  ResourceTemplateDefinition,
  ToolResult,
} from '@taskgate/sdk';
import type { AnyTool } from './any-tool.ts';
import { ContentRegistry, type ContentSet } from './content-registry.ts';
import {
  ContentInputAsked,
  ContentRunError,
  complete,
  DEFAULT_CONTENT_TIMEOUT_MS,
  getPrompt,
  promptArguments,
  REMOTE_COMPLETION,
  type ReadContents,
  readResource,
} from './content-run.ts';
import { definedFields, LISTED_FIELDS } from './listed-fields.ts';

/**
 * A module's resources, resource templates and prompts published through the tool catalog: each
 * module with content is served by one platform tool, `taskgate.content.<module>`, whose
 * definition carries the content's declarations (what every API lists from) and whose handler
 * reads, gets and completes them (what an API that did not load the module asks a worker to run,
 * as a durable request-mode task). One catalog, one queue per tool, one task runtime: a rolling
 * deploy, a worker's death, a cancel and a clock treat a remote read as they treat a tool call.
 * The tool is never offered as a tool (CatalogTools keeps the prefix apart).
 */
export const PLATFORM_TOOL_PREFIX = 'taskgate.';
export const CONTENT_TOOL_PREFIX = 'taskgate.content.';

/** Above the longest content clock: the task's max clock ends a handler its own clock did not. */
const TASK_CLOCK_MARGIN_MS = 5_000;

/**
 * The tool name of one version of a module's content: readable where the module name allows,
 * unique by a hash of the name and the published declarations. Each version is its own tool, so
 * its own queue: during a rolling deploy a read goes to a worker of the version it was listed
 * from, and two unrelated modules that happen to share a name (two files called tools.ts) are two
 * tools rather than one whose versions take turns.
 */
export function contentToolName(moduleName: string, content: PublishedContent): string {
  const readable = moduleName.replace(/[^A-Za-z0-9_.-]+/g, '_').slice(0, 80);
  return `${CONTENT_TOOL_PREFIX}${readable}.${sha256Hex(canonicalJson({ moduleName, content })).slice(0, 16)}`;
}

export interface PublishedResource {
  readonly uri: string;
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly mimeType?: string;
  readonly size?: number;
  readonly annotations?: Readonly<Record<string, unknown>>;
  readonly timeoutMs?: number;
  /** It has a `watch`: a subscription to it is watched by a worker serving the module. */
  readonly watches?: true;
}

export interface PublishedTemplate {
  readonly uriTemplate: string;
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly mimeType?: string;
  readonly annotations?: Readonly<Record<string, unknown>>;
  readonly timeoutMs?: number;
  /** The variables it completes (completion/complete). */
  readonly completes: readonly string[];
  readonly watches?: true;
}

export interface PublishedPrompt {
  readonly name: string;
  readonly title?: string;
  readonly description?: string;
  readonly arguments?: readonly Readonly<Record<string, unknown>>[];
  readonly timeoutMs?: number;
  /** The arguments it completes. */
  readonly completes: readonly string[];
}

/** The `content` field of a content tool's definition: the declarations without their functions. */
export interface PublishedContent {
  readonly module: string;
  readonly resources: readonly PublishedResource[];
  readonly resourceTemplates: readonly PublishedTemplate[];
  readonly prompts: readonly PublishedPrompt[];
}

/**
 * What an API asks of a content tool (the task's arguments). `answers`: the client's answers to
 * what the handler asked with ctx.input() so far (the handler runs again from the start with them,
 * as a multi round-trip retry runs it).
 */
export type ContentRequest = (
  | { readonly op: 'read'; readonly uri: string }
  | { readonly op: 'get'; readonly name: string; readonly arguments: Readonly<Record<string, string>> }
  | {
      readonly op: 'complete';
      readonly ref:
        | { readonly type: 'ref/prompt'; readonly name: string }
        | { readonly type: 'ref/resource'; readonly uri: string };
      readonly argument: { readonly name: string; readonly value: string };
      readonly arguments: Readonly<Record<string, string>>;
    }
) & { readonly answers?: Readonly<Record<string, unknown>> };

/** What a content tool answers (its result's structuredContent). */
export type ContentAnswer =
  | { readonly outcome: 'contents'; readonly contents: ReadContents }
  | { readonly outcome: 'not-found' }
  | { readonly outcome: 'prompt'; readonly result: PromptResult }
  | { readonly outcome: 'completion'; readonly completion: { values: string[]; total: number; hasMore: boolean } }
  /** The handler asked for input it has no answer to: asked of the client, then run again. */
  | { readonly outcome: 'input'; readonly requests: Readonly<Record<string, InputRequest>> }
  | {
      readonly outcome: 'error';
      readonly kind: ContentRunError['kind'];
      readonly message: string;
      /** What the handler threw, for the API's log. */
      readonly cause?: string;
    };

const STRINGS = { type: 'object', additionalProperties: { type: 'string' } } as const;
const ANSWERS = { type: 'object' } as const;

const INPUT_SCHEMA = {
  type: 'object',
  oneOf: [
    {
      properties: { op: { const: 'read' }, uri: { type: 'string', minLength: 1 }, answers: ANSWERS },
      required: ['op', 'uri'],
      additionalProperties: false,
    },
    {
      properties: {
        op: { const: 'get' },
        name: { type: 'string', minLength: 1 },
        arguments: STRINGS,
        answers: ANSWERS,
      },
      required: ['op', 'name', 'arguments'],
      additionalProperties: false,
    },
    {
      properties: {
        op: { const: 'complete' },
        ref: { type: 'object' },
        argument: { type: 'object' },
        arguments: STRINGS,
        answers: ANSWERS,
      },
      required: ['op', 'ref', 'argument', 'arguments'],
      additionalProperties: false,
    },
  ],
} as const;

/** Each content tool's own registry: what a worker watches with (content-watch runner). */
const registries = new WeakMap<object, ContentRegistry>();

/**
 * The module's definitions behind a content tool this process made, for a worker to run their
 * `watch`es; undefined for any other tool.
 */
export function contentRegistryOfTool(tool: object): ContentRegistry | undefined {
  return registries.get(tool);
}

/** The platform tool that serves one module's content; null for a module that has none. */
export function contentTool(moduleName: string, set: ContentSet): AnyTool | null {
  const published = publishedContent(moduleName, set);
  const count = published.resources.length + published.resourceTemplates.length + published.prompts.length;
  if (count === 0) return null;
  const registry = new ContentRegistry([set]);
  const clocks = [...(set.resources ?? []), ...(set.resourceTemplates ?? []), ...(set.prompts ?? [])].map(
    (entry) => entry.timeoutMs ?? DEFAULT_CONTENT_TIMEOUT_MS,
  );
  const tool = {
    name: contentToolName(moduleName, published),
    description: `The resources, resource templates and prompts of tool module ${moduleName}, read for the platform's API processes (never offered as a tool).`,
    inputSchema: INPUT_SCHEMA,
    retry: 'safe',
    taskSupport: 'forbidden',
    timeouts: { maxMs: Math.max(...clocks) + TASK_CLOCK_MARGIN_MS },
    content: published,
    handler: async (input: ContentRequest, ctx: { tenant: string; signal: AbortSignal }): Promise<ToolResult> => ({
      content: [],
      structuredContent: (await answer(registry, input, ctx)) as unknown as Record<string, unknown>,
    }),
  };
  registries.set(tool, registry);
  return tool as unknown as AnyTool;
}

/** Runs one request against the module's own definitions, as an in-process read would. */
async function answer(
  registry: ContentRegistry,
  request: ContentRequest,
  ctx: { tenant: string; signal: AbortSignal },
): Promise<ContentAnswer> {
  // With answers (none yet, or the client's so far), a ctx.input() of a key not answered throws
  // ContentInputAsked: said back as `input`, for the API to ask the client the way its request can.
  const context = { tenant: ctx.tenant, signal: ctx.signal, answers: request.answers ?? {} };
  try {
    if (request.op === 'read') {
      const target = registry.resolve(request.uri);
      const contents = target ? await readResource(target, request.uri, context) : null;
      return contents === null ? { outcome: 'not-found' } : { outcome: 'contents', contents };
    }
    if (request.op === 'get') {
      const prompt = registry.prompt(request.name);
      if (!prompt) return { outcome: 'not-found' };
      // Checked by the API against the declaration it listed: a problem here is version skew.
      const args = promptArguments(prompt, request.arguments);
      if ('problem' in args)
        return { outcome: 'error', kind: 'failed', message: `prompt ${prompt.name}: ${args.problem}` };
      return { outcome: 'prompt', result: await getPrompt(prompt, args.values, context) };
    }
    const target = completerOf(registry, request);
    if (!target) return { outcome: 'not-found' };
    const completion = await complete(
      target.label,
      target.completer,
      request.argument.value,
      request.arguments,
      context,
      target.timeoutMs,
    );
    return { outcome: 'completion', completion };
  } catch (error) {
    if (error instanceof ContentInputAsked) return { outcome: 'input', requests: error.requests };
    // Said as an in-process read says it. The thrown error's own text goes as `cause`, for the
    // API's log only (it never reaches a client): the worker has no log of a handler's own.
    if (error instanceof ContentRunError) {
      const cause = error.cause instanceof Error ? error.cause.message : undefined;
      return { outcome: 'error', kind: error.kind, message: error.message, ...(cause === undefined ? {} : { cause }) };
    }
    throw error;
  }
}

function completerOf(
  registry: ContentRegistry,
  request: Extract<ContentRequest, { op: 'complete' }>,
): { label: string; completer: Completer; timeoutMs: number | undefined } | null {
  const { ref, argument } = request;
  if (ref.type === 'ref/prompt') {
    const prompt = registry.prompt(ref.name);
    const completer = prompt?.complete?.[argument.name];
    if (!prompt || !completer) return null;
    return { label: `prompt ${prompt.name} argument ${argument.name}`, completer, timeoutMs: prompt.timeoutMs };
  }
  const entry = registry.template(ref.uri);
  const completer = entry?.definition.complete?.[argument.name];
  if (!entry || !completer) return null;
  return {
    label: `resource template ${entry.definition.uriTemplate} variable ${argument.name}`,
    completer,
    timeoutMs: entry.definition.timeoutMs,
  };
}

/** The declarations as JSON, in the registry's order (so the fingerprint does not move with export order). */
export function publishedContent(moduleName: string, set: ContentSet): PublishedContent {
  const registry = new ContentRegistry([set]);
  return {
    module: moduleName,
    resources: registry.resources().map((resource) => ({
      uri: resource.uri,
      name: resource.name,
      ...definedFields(resource, [...LISTED_FIELDS.resource, 'timeoutMs']),
      ...(resource.watch ? { watches: true as const } : {}),
    })),
    resourceTemplates: registry.templates().map(({ definition }) => ({
      uriTemplate: definition.uriTemplate,
      name: definition.name,
      ...definedFields(definition, [...LISTED_FIELDS.template, 'timeoutMs']),
      completes: Object.keys(definition.complete ?? {}).sort(),
      ...(definition.watch ? { watches: true as const } : {}),
    })),
    prompts: registry.prompts().map((prompt) => ({
      name: prompt.name,
      ...definedFields(prompt, [...LISTED_FIELDS.prompt, 'timeoutMs']),
      ...(prompt.arguments ? { arguments: prompt.arguments.map((arg) => ({ ...arg })) } : {}),
      completes: Object.keys(prompt.complete ?? {}).sort(),
    })),
  };
}

/**
 * Runs a content request on whichever worker serves the content tool and resolves with its answer;
 * rejects (ContentRunError `cancelled`) when `signal` aborts, after cancelling the work.
 */
export type RemoteContentCall = (
  request: ContentRequest,
  ctx: { readonly tenant: string; readonly signal: AbortSignal },
) => Promise<ContentAnswer>;

/**
 * Holds a subscription to a remote resource for `tenant` until the returned function is called:
 * `changed` runs each time the worker watching it says it changed.
 */
export type RemoteContentWatch = (uri: string, tenant: string, changed: () => void) => () => void;

/**
 * The content a catalog entry publishes, as definitions whose functions ask `call` (a worker runs
 * the module's own). The caller's bounded() still applies each definition's clock here, so a read
 * ends in time even when no worker picks its task up. A handler's ctx.input() cannot cross to a
 * worker: a remote handler that asks is answered as one that asked where it cannot.
 */
export function remoteContentSet(
  content: PublishedContent,
  call: RemoteContentCall,
  watch?: RemoteContentWatch,
): ContentSet {
  const fromAnswer = <T>(label: string, answer: ContentAnswer, pick: (answer: ContentAnswer) => T | undefined): T => {
    if (answer.outcome === 'error') {
      // Only this request's signal cancels this request: a worker's "cancelled" is a failure here.
      const kind = answer.kind === 'cancelled' ? 'failed' : answer.kind;
      throw new ContentRunError(kind, answer.message, {
        cause: new Error(typeof answer.cause === 'string' ? answer.cause : answer.message),
      });
    }
    const value = pick(answer);
    if (value === undefined) throw new ContentRunError('invalid', `${label}: the worker's answer was not one`);
    return value;
  };
  /**
   * A read or get whose handler may ask for input: each `input` answer is asked of the client
   * through the request's own ctx.input() (a multi round-trip request answers from its retry, or
   * is answered input_required; a handshake one asks on its stream), then the worker runs the
   * handler again with every answer so far. Bounded: a handler that keeps asking ends.
   */
  const withInput = async (request: ContentRequest, ctx: ContentContext): Promise<ContentAnswer> => {
    let answers: Record<string, unknown> = {};
    for (let round = 1; ; round += 1) {
      const answer = await call({ ...request, ...(round === 1 ? {} : { answers }) }, ctx);
      if (answer.outcome !== 'input') return answer;
      // Refused before the client is asked a question whose answer would go unused.
      if (round >= MAX_INPUT_ROUNDS) {
        throw new ContentRunError('failed', `${labelOf(request)} kept asking for input: ${MAX_INPUT_ROUNDS} rounds`);
      }
      answers = { ...answers, ...(await ctx.input(answer.requests)) };
    }
  };
  const contentsOf = (label: string, answer: ContentAnswer): ReadContents | null =>
    answer.outcome === 'not-found'
      ? null
      : fromAnswer(label, answer, (a) => (a.outcome === 'contents' ? a.contents : undefined));
  const completers = (
    names: readonly string[],
    ref: Extract<ContentRequest, { op: 'complete' }>['ref'],
    label: string,
  ): Record<string, Completer> =>
    Object.fromEntries(
      names.map((name) => [
        name,
        (async (value, context) => {
          const ctx = context as { arguments: Readonly<Record<string, string>>; tenant: string; signal: AbortSignal };
          const answer = await call(
            { op: 'complete', ref, argument: { name, value }, arguments: ctx.arguments },
            { tenant: ctx.tenant, signal: ctx.signal },
          );
          if (answer.outcome === 'not-found') return [];
          const completion = fromAnswer(`${label} argument ${name}`, answer, (a) =>
            a.outcome === 'completion' ? a.completion : undefined,
          );
          // The worker counted what it cut: complete() takes the count along (REMOTE_COMPLETION).
          return Object.assign([...completion.values], {
            [REMOTE_COMPLETION]: { total: completion.total, hasMore: completion.hasMore },
          });
        }) satisfies Completer,
      ]),
    );
  const resources: ResourceDefinition[] = content.resources.map(({ watches, ...resource }) => ({
    ...resource,
    read: async (ctx) =>
      contentsOf(`resource ${resource.uri}`, await withInput({ op: 'read', uri: resource.uri }, ctx)) as never,
    ...(watches && watch ? { watch: (changed, ctx) => watch(resource.uri, ctx.tenant, changed) } : {}),
  }));
  const resourceTemplates: ResourceTemplateDefinition[] = content.resourceTemplates.map(
    ({ completes, watches, ...template }) => ({
      ...template,
      read: async (uri, _variables, ctx) =>
        contentsOf(`resource ${uri}`, await withInput({ op: 'read', uri }, ctx)) as never,
      ...(watches && watch
        ? {
            watch: (uri: string, _variables: unknown, changed: () => void, ctx: { tenant: string }) =>
              watch(uri, ctx.tenant, changed),
          }
        : {}),
      ...(completes.length > 0
        ? {
            complete: completers(
              completes,
              { type: 'ref/resource', uri: template.uriTemplate },
              `resource template ${template.uriTemplate}`,
            ),
          }
        : {}),
    }),
  );
  const prompts: PromptDefinition[] = content.prompts.map(({ completes, ...prompt }) => ({
    ...(prompt as Omit<PromptDefinition, 'get'>),
    get: async (args, ctx) => {
      const answer = await withInput({ op: 'get', name: prompt.name, arguments: args }, ctx);
      if (answer.outcome === 'not-found') {
        throw new ContentRunError('failed', `prompt ${prompt.name}: the worker serving it no longer has it`);
      }
      return fromAnswer(`prompt ${prompt.name}`, answer, (a) => (a.outcome === 'prompt' ? a.result : undefined));
    },
    ...(completes.length > 0
      ? { complete: completers(completes, { type: 'ref/prompt', name: prompt.name }, `prompt ${prompt.name}`) }
      : {}),
  }));
  return { resources, resourceTemplates, prompts };
}

/** How many times one read or get may ask for input before it ends. */
const MAX_INPUT_ROUNDS = 8;

function labelOf(request: ContentRequest): string {
  if (request.op === 'read') return `resource ${request.uri}`;
  if (request.op === 'get') return `prompt ${request.name}`;
  return 'a completion';
}

/**
 * A content tool's published `content`, or the problem with it: a foreign or broken publisher is
 * left out (and logged by the caller), never allowed to make a list throw.
 */
export function readPublishedContent(definition: Readonly<Record<string, unknown>>): PublishedContent | string {
  const content = definition.content as Record<string, unknown> | undefined;
  if (typeof content !== 'object' || content === null || Array.isArray(content)) return 'it has no content object';
  const { module, resources, resourceTemplates, prompts } = content;
  if (typeof module !== 'string') return 'its content names no module';
  for (const [field, value] of Object.entries({ resources, resourceTemplates, prompts })) {
    if (!Array.isArray(value)) return `its content.${field} is not an array`;
    for (const item of value) {
      if (typeof item !== 'object' || item === null || Array.isArray(item)) return `content.${field} has a non-object`;
      if (field !== 'resources' && !isStrings((item as { completes?: unknown }).completes)) {
        return `content.${field} has an entry whose completes is not an array of strings`;
      }
    }
  }
  return content as unknown as PublishedContent;
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
