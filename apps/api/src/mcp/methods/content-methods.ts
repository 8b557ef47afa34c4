import { ErrorCode, META } from '@taskgate/protocol';
import type { PromptDefinition, ResourceDefinition, ResourceTemplateDefinition } from '@taskgate/sdk';
import {
  ContentInputAsked,
  type ContentRegistry,
  ContentRunError,
  complete,
  definedFields,
  getPrompt,
  LISTED_FIELDS,
  type PromptArgumentsProblem,
  promptArguments,
  readResource,
} from '@taskgate/tools';
import { classifyFailure } from '../../http/failures.ts';
import type { MethodHandler } from '../core/method-table.ts';
import { invalidParams, type MethodOutcome, missingCapability } from '../core/outcomes.ts';
import type { RequestContext } from '../core/request-context.ts';
import type { ServerIdentity } from '../core/server-info.ts';
import { MAX_RESOURCE_SUBSCRIPTIONS } from '../core/subscriptions.ts';
import { type ListPage, pageOf } from './list-page.ts';
import { ClientCapabilityMissing, clientAsker, type Round, type RoundTrips } from './round-trips.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface ContentMethodsOptions {
  /** What is served now: the registry moves when the catalog's content does (ContentOffer). */
  readonly content: { current(): ContentRegistry };
  readonly server: ServerIdentity;
  readonly logger?: { readonly warn: LogFn };
  /** Entries per list page (default 100). */
  readonly pageSize?: number;
  /**
   * Whether `uri` names a resource the tenant may subscribe to: a task resource only for a task
   * of its own (another tenant's is as unknown as none); absent, any URI the definitions match.
   */
  readonly served?: (tenantId: string, uri: string) => Promise<boolean>;
}

/** What a revision does differently with these methods. */
export interface ContentShape {
  /** Resource not found: -32602 from 2026-07-28 on (SEP-2164), -32002 before. */
  readonly notFoundCode: number;
  /** HTTP status of a malformed request's -32602 (400 on 2026-07-28's HTTP, 200 before). */
  readonly invalidStatus: number;
  /** A complete result as the revision sends it (cache hints and resultType, or neither). */
  readonly result: (result: Record<string, unknown>) => Readonly<Record<string, unknown>>;
  /** Multi round-trip requests, where the revision has them: handlers' ctx.input() asks the client. */
  readonly rounds?: RoundTrips;
  /** resources/subscribe and resources/unsubscribe, where the revision has them. */
  readonly subscribe?: boolean;
}

/**
 * Lists may be cached a minute: they change when a worker serving other content comes or goes,
 * which list-changed notifications tell a client that listens.
 */
const LIST_TTL_MS = 60_000;
export const DEFAULT_PAGE_SIZE = 100;
/** The longest URI read or subscribed (a definition's URIs are at most 2048 too): a subscription keeps it. */
export const MAX_URI_CHARS = 2048;

/**
 * resources/list, resources/templates/list, resources/read, prompts/list, prompts/get and
 * completion/complete, the same in every revision but for `shape`. Handlers run in this process
 * under the request's signal and their own clock; what they throw is logged, and the client gets
 * -32603 naming the resource or prompt, never the thrown text.
 */
export function contentMethods(options: ContentMethodsOptions, shape: ContentShape): [string, MethodHandler][] {
  const { server } = options;
  const registry = () => options.content.current();
  const size = options.pageSize ?? DEFAULT_PAGE_SIZE;
  const bad = (message: string) => invalidParams(message, shape.invalidStatus);
  const complete_ = (result: Record<string, unknown>, cache: { ttlMs: number; cacheScope: string } | null) =>
    ok(
      shape.result({
        resultType: 'complete',
        ...result,
        ...(cache ?? {}),
        _meta: { [META.serverInfo]: server },
      }),
    );
  const listCache = { ttlMs: LIST_TTL_MS, cacheScope: 'public' };
  /** The round a request starts, where the revision has them (an outcome: refused before anything runs). */
  const begin = (
    params: Params,
    context: RequestContext,
    subject: { method: string; name: string; arguments?: unknown },
  ): Round | MethodOutcome | undefined => shape.rounds?.begin(params, context, subject);
  const listed = <T>(
    name: string,
    items: readonly T[],
    key: (item: T) => string,
    entry: (item: T) => Record<string, unknown>,
    params: Params,
  ): MethodOutcome => {
    const page = pageOf(items, params?.cursor, size, key);
    if ('problem' in page) return bad(page.problem);
    return complete_({ [name]: page.items.map(entry), ...nextCursor(page) }, listCache);
  };
  const failure = (
    error: unknown,
    what: string,
    context: RequestContext,
    round: Round | undefined,
  ): MethodOutcome | null => {
    if (error instanceof ContentInputAsked && round && shape.rounds) {
      return shape.rounds.ask(round, error.requests, context, what);
    }
    if (!(error instanceof ContentRunError)) throw error;
    if (error.kind === 'cancelled') return null;
    if (error.kind === 'refused') {
      return {
        kind: 'error',
        httpStatus: 200,
        error: {
          code: ErrorCode.InvalidParams,
          message: error.message,
          data: { code: 'TG_INPUT_RESPONSES_INVALID', ...(error.key === undefined ? {} : { key: error.key }) },
        },
      };
    }
    // It asked its client for what the client did not declare: the client's gap, not a bug.
    if (error.kind === 'failed' && error.cause instanceof ClientCapabilityMissing) {
      return missingCapability(error.cause.missing, error.cause.message);
    }
    // The database away (a task resource's read): the transport's 503 with Retry-After, not a bug.
    if (error.kind === 'failed' && classifyFailure(error.cause).code === 'TG_SERVICE_UNAVAILABLE') throw error.cause;
    // Called as methods: pino's warn needs its `this`.
    const fields = { error: error.message, cause: (error.cause as Error | undefined)?.message };
    if (context.log) context.log(fields, `${what} gave no answer`);
    else options.logger?.warn(fields, `${what} gave no answer`);
    return {
      kind: 'error',
      httpStatus: 200,
      error: { code: ErrorCode.InternalError, message: error.message },
    };
  };

  const subscriptions: [string, MethodHandler][] = shape.subscribe
    ? [
        [
          'resources/subscribe',
          async (params, context) => {
            const uri = params?.uri;
            if (typeof uri !== 'string' || uri === '')
              return bad('resources/subscribe needs params.uri, a resource URI');
            if (uri.length > MAX_URI_CHARS) return bad(`params.uri is longer than ${MAX_URI_CHARS} characters`);
            if (!registry().resolve(uri)) return notFound(shape.notFoundCode, uri);
            const subscriptions = context.resourceSubscriptions;
            if (!subscriptions) return bad('resources/subscribe needs a session: send initialize first');
            const held = subscriptions.has(uri);
            if (!(await subscriptions.subscribe(uri))) {
              return bad(`this connection is subscribed to ${MAX_RESOURCE_SUBSCRIPTIONS} resources already`);
            }
            // A task resource is its tenant's only: subscribed at once (so an unsubscribe sent
            // after it applies after it), then undone — unless it was held before this request —
            // for another tenant's task, or none, and when the check fails (an outage: 503).
            let served: boolean;
            try {
              served = options.served ? await options.served(context.tenantId, uri) : true;
            } catch (error) {
              if (!held) await subscriptions.unsubscribe(uri);
              throw error;
            }
            if (!served) {
              if (!held) await subscriptions.unsubscribe(uri);
              return notFound(shape.notFoundCode, uri);
            }
            return ok({});
          },
        ],
        [
          'resources/unsubscribe',
          async (params, context) => {
            const uri = params?.uri;
            if (typeof uri !== 'string' || uri === '') {
              return bad('resources/unsubscribe needs params.uri, a resource URI');
            }
            await context.resourceSubscriptions?.unsubscribe(uri);
            return ok({});
          },
        ],
      ]
    : [];

  return [
    ...subscriptions,
    [
      'resources/list',
      (params) => listed('resources', registry().resources(), (resource) => resource.uri, resourceEntry, params),
    ],
    [
      'resources/templates/list',
      (params) =>
        listed(
          'resourceTemplates',
          registry().templates(),
          (entry) => entry.definition.uriTemplate,
          ({ definition }) => templateEntry(definition),
          params,
        ),
    ],
    [
      'resources/read',
      async (params, context) => {
        const uri = params?.uri;
        if (typeof uri !== 'string' || uri === '') return bad('resources/read needs params.uri, a resource URI');
        if (uri.length > MAX_URI_CHARS) return bad(`params.uri is longer than ${MAX_URI_CHARS} characters`);
        const target = registry().resolve(uri);
        if (!target) return notFound(shape.notFoundCode, uri);
        const round = begin(params, context, { method: 'resources/read', name: uri });
        if (round && 'kind' in round) return round;
        try {
          const contents = await readResource(target, uri, {
            tenant: context.tenantId,
            signal: context.signal,
            ...inputWay(round, context, `resource ${uri}`),
          });
          if (contents === null) return notFound(shape.notFoundCode, uri);
          // Contents may be the caller's own (a task, a tenant's data): cached by this client only,
          // and stale at once. A complete read MUST carry both hints, a retry's too, which MUST
          // NOT be cached (server/utilities/caching): ttlMs 0 says that, and the SDK v2 client
          // refuses a read without them.
          return complete_({ contents }, { ttlMs: 0, cacheScope: 'private' });
        } catch (error) {
          return failure(error, `resource ${uri}`, context, round);
        }
      },
    ],
    ['prompts/list', (params) => listed('prompts', registry().prompts(), (prompt) => prompt.name, promptEntry, params)],
    [
      'prompts/get',
      async (params, context) => {
        const name = params?.name;
        if (typeof name !== 'string' || name === '') return bad('prompts/get needs params.name, the name of a prompt');
        const prompt = registry().prompt(name);
        if (!prompt) return bad(`there is no prompt named ${JSON.stringify(name)}`);
        const args = promptArguments(prompt, params?.arguments);
        if ('problem' in args) return bad(argumentsMessage(name, args));
        const round = begin(params, context, { method: 'prompts/get', name, arguments: args.values });
        if (round && 'kind' in round) return round;
        try {
          const result = await getPrompt(prompt, args.values, {
            tenant: context.tenantId,
            signal: context.signal,
            ...inputWay(round, context, `prompt ${name}`),
          });
          return complete_({ ...result }, null);
        } catch (error) {
          return failure(error, `prompt ${name}`, context, round);
        }
      },
    ],
    [
      'completion/complete',
      async (params, context) => {
        const target = completionTarget(registry(), params);
        if ('problem' in target) return bad(target.problem);
        if (!target.completer) return complete_({ completion: { values: [], total: 0, hasMore: false } }, null);
        try {
          const completion = await complete(
            target.label,
            target.completer,
            target.value,
            target.arguments,
            { tenant: context.tenantId, signal: context.signal },
            target.timeoutMs,
          );
          return complete_({ completion }, null);
        } catch (error) {
          return failure(error, target.label, context, undefined);
        }
      },
    ],
  ];
}

type Params = Readonly<Record<string, unknown>> | undefined;

/** A resource as resources/list sends it (and as list-changed compares it: ContentOffer). */
export function resourceEntry(resource: ResourceDefinition): Record<string, unknown> {
  return {
    uri: resource.uri,
    name: resource.name,
    ...definedFields(resource, LISTED_FIELDS.resource),
  };
}

export function templateEntry(template: ResourceTemplateDefinition): Record<string, unknown> {
  return {
    uriTemplate: template.uriTemplate,
    name: template.name,
    ...definedFields(template, LISTED_FIELDS.template),
  };
}

export function promptEntry(prompt: PromptDefinition): Record<string, unknown> {
  return {
    name: prompt.name,
    ...definedFields(prompt, LISTED_FIELDS.prompt),
    ...(prompt.arguments ? { arguments: prompt.arguments.map((arg) => ({ ...arg })) } : {}),
  };
}

function ok(result: Readonly<Record<string, unknown>>): MethodOutcome {
  return { kind: 'result', result };
}

function nextCursor<T>(page: ListPage<T>): Record<string, unknown> {
  return page.nextCursor === null ? {} : { nextCursor: page.nextCursor };
}

/** The resource-not-found error (server/resources): its code by revision, the URI in `data`. */
export function notFound(code: number, uri: string): MethodOutcome {
  return { kind: 'error', httpStatus: 200, error: { code, message: 'Resource not found', data: { uri } } };
}

function argumentsMessage(name: string, problem: PromptArgumentsProblem): string {
  return `prompt ${name}: ${problem.problem}`;
}

interface CompletionTarget {
  readonly label: string;
  readonly completer: Parameters<typeof complete>[1] | undefined;
  readonly value: string;
  readonly arguments: Readonly<Record<string, string>>;
  readonly timeoutMs: number | undefined;
}

/** params.ref and params.argument, checked, and the completer they name (none: no suggestions). */
function completionTarget(content: ContentRegistry, params: Params): CompletionTarget | { problem: string } {
  const ref = params?.ref;
  const argument = params?.argument;
  if (typeof ref !== 'object' || ref === null || Array.isArray(ref)) {
    return { problem: 'completion/complete needs params.ref, a ref/prompt or ref/resource reference' };
  }
  if (typeof argument !== 'object' || argument === null || Array.isArray(argument)) {
    return { problem: 'completion/complete needs params.argument, { name, value }' };
  }
  const { name, value } = argument as Record<string, unknown>;
  if (typeof name !== 'string' || typeof value !== 'string') {
    return { problem: 'params.argument.name and params.argument.value must be strings' };
  }
  const context = params?.context;
  if (context !== undefined && (typeof context !== 'object' || context === null || Array.isArray(context))) {
    return { problem: 'params.context must be an object, { arguments }' };
  }
  const given = (context as { arguments?: unknown } | undefined)?.arguments ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    return { problem: 'params.context.arguments must be an object of strings' };
  }
  const args: Record<string, string> = {};
  for (const [key, item] of Object.entries(given)) {
    if (typeof item !== 'string') return { problem: `params.context.arguments.${key} must be a string` };
    args[key] = item;
  }
  const { type } = ref as Record<string, unknown>;
  if (type === 'ref/prompt') {
    const promptName = (ref as Record<string, unknown>).name;
    const prompt = typeof promptName === 'string' ? content.prompt(promptName) : undefined;
    if (!prompt) return { problem: `there is no prompt named ${JSON.stringify(promptName)}` };
    if (!prompt.arguments?.some((arg) => arg.name === name)) {
      return { problem: `prompt ${prompt.name} has no argument named ${JSON.stringify(name)}` };
    }
    return {
      label: `prompt ${prompt.name} argument ${name}`,
      completer: prompt.complete?.[name],
      value,
      arguments: args,
      timeoutMs: prompt.timeoutMs,
    };
  }
  if (type === 'ref/resource') {
    const uri = (ref as Record<string, unknown>).uri;
    const entry = typeof uri === 'string' ? content.template(uri) : undefined;
    if (!entry) return { problem: `there is no resource template ${JSON.stringify(uri)}` };
    if (!entry.matcher.variables.includes(name)) {
      return {
        problem: `resource template ${entry.definition.uriTemplate} has no variable named ${JSON.stringify(name)}`,
      };
    }
    return {
      label: `resource template ${entry.definition.uriTemplate} variable ${name}`,
      completer: entry.definition.complete?.[name],
      value,
      arguments: args,
      timeoutMs: entry.definition.timeoutMs,
    };
  }
  return { problem: 'params.ref.type must be "ref/prompt" or "ref/resource"' };
}

/**
 * How a handler's ctx.input() is answered: from a multi round-trip request's answers (2026-07-28),
 * or by asking the client on the request's connection (handshake revisions); neither: it cannot.
 */
function inputWay(round: Round | undefined, context: RequestContext, who: string) {
  if (round) return { answers: round.answers };
  const ask = clientAsker(context, who);
  return ask ? { ask } : {};
}
