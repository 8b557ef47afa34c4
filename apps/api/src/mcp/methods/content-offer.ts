import { cancelSignalOf } from '@taskgate/reliability';
import { promptDefinitionProblem, resourceDefinitionProblem, resourceTemplateDefinitionProblem } from '@taskgate/sdk';
import {
  type CatalogContent,
  type ContentAnswer,
  ContentRegistry,
  type ContentSet,
  type RemoteContentCall,
  type RemoteContentWatch,
  remoteContentSet,
} from '@taskgate/tools';
import type { TaskService } from '../../tasks/task-service.ts';
import type { TaskWatcher } from '../../tasks/task-watch.ts';
import { promptEntry, resourceEntry, templateEntry } from './content-methods.ts';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** Which lists a change moved: the notifications it is worth. */
export type ContentListKind = 'resources' | 'prompts';

/** What ContentOffer reads of the catalog (CatalogTools). */
export interface ContentCatalog {
  content(): readonly CatalogContent[];
  onContentChange(listener: () => void): () => void;
}

export interface ContentOfferOptions {
  /** Served here, in the request: Taskgate's task resources first, then the modules loaded here. */
  readonly local: readonly ContentSet[];
  /** The modules' content the workers publish; absent: only what is local. */
  readonly catalog?: ContentCatalog;
  /** How a remote entry's reads reach a worker serving it. */
  readonly remote?: (entry: CatalogContent) => RemoteContentCall;
  /** How a subscription to a remote resource with `watch` reaches a worker serving it; absent: never notified. */
  readonly watch?: (entry: CatalogContent) => RemoteContentWatch;
  /**
   * Told after each rebuild which content tool serves a URI now, so subscriptions held under a
   * tool a deploy renamed move to the new one (RemoteWatches.retool).
   */
  readonly retool?: (toolOf: (tenantId: string, uri: string) => string | undefined) => void;
  readonly logger?: { readonly warn: LogFn };
}

/**
 * Every resource, template and prompt this API serves: its own and the loaded modules' (read
 * here), then what the catalog publishes for modules this process did not load (read by a worker).
 * A key served here is never also remote, and a key two published modules share is served from
 * the first by content-tool name (said once in the log): one definition per URI, template or name,
 * whatever order the catalog's rows came in. The registry is rebuilt only when the catalog's
 * content moves, so list pages and their cursors stay stable while nothing changed.
 */
export class ContentOffer {
  readonly #options: ContentOfferOptions;
  readonly #local: ContentRegistry;
  readonly #listeners = new Set<(kinds: readonly ContentListKind[]) => void>();
  /** Skipped keys already logged, by content tool and fingerprint: said once per version. */
  readonly #said = new Set<string>();
  #builtFor: readonly CatalogContent[] | null = null;
  #registry: ContentRegistry;
  #signatures = { resources: '', prompts: '' };
  #told = { resources: '', prompts: '' };
  readonly #unsubscribe: () => void;

  constructor(options: ContentOfferOptions) {
    this.#options = options;
    this.#local = new ContentRegistry(options.local);
    this.#registry = this.#local;
    this.#current();
    this.#told = this.#signatures;
    this.#unsubscribe =
      options.catalog?.onContentChange(() => {
        // Against what listeners were last told, not the last build: a read between the catalog's
        // change and this call has rebuilt already.
        this.#current();
        const kinds: ContentListKind[] = [];
        if (this.#signatures.resources !== this.#told.resources) kinds.push('resources');
        if (this.#signatures.prompts !== this.#told.prompts) kinds.push('prompts');
        this.#told = this.#signatures;
        if (kinds.length === 0) return;
        for (const listener of this.#listeners) {
          try {
            listener(kinds);
          } catch (error) {
            options.logger?.warn({ error: (error as Error).message }, 'a content list change listener failed');
          }
        }
      }) ?? (() => {});
  }

  /** The registry for the catalog's current content. */
  current(): ContentRegistry {
    return this.#current();
  }

  /** Calls `listener` with the lists that changed (for list-changed notifications). */
  onChange(listener: (kinds: readonly ContentListKind[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }

  #current(): ContentRegistry {
    const { catalog, remote } = this.#options;
    if (!catalog || !remote) return this.#registry;
    const entries = catalog.content();
    if (entries === this.#builtFor) return this.#registry;
    // A key served here is read here: a module loaded in this process is also published by its
    // worker (one `taskgate start` runs both), and that is no conflict worth a word.
    const local = {
      uris: new Set(this.#local.resources().map((resource) => resource.uri)),
      templates: new Set(this.#local.templates().map((entry) => entry.definition.uriTemplate)),
      prompts: new Set(this.#local.prompts().map((prompt) => prompt.name)),
    };
    // Published keys so far, with the module that published each: the same module's other version
    // (a rolling deploy) serving a key is no conflict worth a word, another module's is.
    const taken = {
      uris: new Map<string, string>(),
      templates: new Map<string, string>(),
      prompts: new Map<string, string>(),
    };
    const sets: ContentSet[] = [];
    /** Each remote resource and template definition, with the content tool that serves it. */
    const toolOfDefinition = new WeakMap<object, string>();
    for (const entry of entries) {
      const set = remoteContentSet(entry.content, remote(entry), this.#options.watch?.(entry));
      for (const definition of [...(set.resources ?? []), ...(set.resourceTemplates ?? [])]) {
        toolOfDefinition.set(definition, entry.tool);
      }
      const skipped: string[] = [];
      const keep = <T>(
        items: readonly T[] | undefined,
        key: (item: T) => string,
        here: ReadonlySet<string>,
        seen: Map<string, string>,
        problem: (item: T) => string | null,
      ) =>
        (items ?? []).filter((item) => {
          const name = key(item);
          if (here.has(name)) return false;
          const owner = seen.get(name);
          if (owner === entry.content.module) return false;
          const why = owner !== undefined ? `${name} is published by module ${owner} too` : problem(item);
          if (why !== null) {
            skipped.push(why);
            return false;
          }
          seen.set(name, entry.content.module);
          return true;
        });
      sets.push({
        resources: keep(set.resources, (item) => item.uri, local.uris, taken.uris, resourceDefinitionProblem),
        resourceTemplates: keep(
          set.resourceTemplates,
          (item) => item.uriTemplate,
          local.templates,
          taken.templates,
          resourceTemplateDefinitionProblem,
        ),
        prompts: keep(set.prompts, (item) => item.name, local.prompts, taken.prompts, promptDefinitionProblem),
      });
      const said = `${entry.tool}:${entry.fingerprint}`;
      if (skipped.length > 0 && !this.#said.has(said)) {
        this.#said.add(said);
        this.#options.logger?.warn(
          { tool: entry.tool, module: entry.content.module, skipped: skipped.slice(0, 20) },
          "some of a module's published resources or prompts are not served: another module publishes their key, or they do not check",
        );
      }
    }
    const registry = new ContentRegistry([...this.#options.local, ...sets]);
    this.#registry = registry;
    this.#builtFor = entries;
    this.#signatures = signaturesOf(registry);
    this.#options.retool?.((_tenantId, uri) => {
      const definition = registry.resolve(uri)?.definition;
      return definition ? toolOfDefinition.get(definition) : undefined;
    });
    return registry;
  }
}

/** The lists as a client sees them, one string per list kind: a change of either is a notification. */
function signaturesOf(registry: ContentRegistry): { resources: string; prompts: string } {
  const resources = [
    ...registry.resources().map((resource) => JSON.stringify(resourceEntry(resource))),
    ...registry.templates().map((entry) => JSON.stringify(templateEntry(entry.definition))),
  ];
  return {
    resources: resources.join('\n'),
    prompts: registry
      .prompts()
      .map((prompt) => JSON.stringify(promptEntry(prompt)))
      .join('\n'),
  };
}

/** How long a platform read's task lives: well past any content clock, then the sweeper ends it. */
const CONTENT_TASK_TTL_MS = 60_000;

/**
 * A remote entry's calls as tasks: the content tool's task is created for the caller's tenant, and
 * waited for with the process's one task watcher (one read at the terminal NOTIFY, a poll under
 * it). A read whose request is cancelled, or whose clock runs out, cancels its task: a worker that
 * took it stops at its next checkpoint, one that did not never starts it.
 */
export function remoteContentCalls(
  service: TaskService,
  watcher: TaskWatcher,
  pollMs: number,
  logger?: { readonly warn: LogFn },
): (entry: CatalogContent) => RemoteContentCall {
  return (entry) => async (request, ctx) => {
    const task = await service.submitPlatform(
      ctx.tenant,
      { name: entry.tool, fingerprint: entry.fingerprint, spec: entry.spec },
      request as unknown as Record<string, unknown>,
      CONTENT_TASK_TTL_MS,
    );
    let done: Awaited<ReturnType<TaskWatcher['untilTerminal']>>;
    try {
      done = await watcher.untilTerminal(ctx.tenant, task.id, { pollMs, signal: ctx.signal });
    } catch (error) {
      if (ctx.signal.aborted) {
        const reason = ctx.signal.reason instanceof Error ? ctx.signal.reason.message : 'the read was stopped';
        await service.cancelAbandoned(
          ctx.tenant,
          task.id,
          reason,
          (fields, message) => logger?.warn(fields, message),
          0,
          cancelSignalOf(ctx.signal.reason),
        );
      }
      throw error;
    }
    // What goes wrong from here is said to the client as "<resource or prompt> failed" (bounded()
    // wraps what is not a ContentRunError) and logged with this detail: never the platform's names.
    if (done.status === 'completed') {
      const answer = (done.result as { structuredContent?: unknown } | null)?.structuredContent;
      if (typeof answer === 'object' && answer !== null && typeof (answer as ContentAnswer).outcome === 'string') {
        return answer as ContentAnswer;
      }
      throw new Error(`${entry.tool} (module ${entry.content.module}): the worker's answer has no outcome`);
    }
    const why =
      done.status === 'failed'
        ? ((done.error as { message?: unknown } | null)?.message ?? 'it failed')
        : `it was cancelled${done.cancelReason ? `: ${done.cancelReason}` : ''}`;
    throw new Error(`${entry.tool} (module ${entry.content.module}), task ${task.id}: ${String(why)}`);
  };
}
