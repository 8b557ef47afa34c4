import type { TaskProgress } from '@taskgate/db';
import {
  type Capabilities,
  ErrorCode,
  type JsonRpcId,
  type LogLevel,
  type ProtocolEra,
  type RequestHeaders,
} from '@taskgate/protocol';
import type { ContentSet, ToolCatalog } from '@taskgate/tools';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { ClockCaps, TaskService } from '../tasks/task-service.ts';
import { TaskWatcher } from '../tasks/task-watch.ts';
import { ContentOffer, remoteContentCalls } from './content-offer.ts';
import { CallRunner } from './dispatch/call-runner.ts';
import {
  type ResourceSubscriptions,
  resourceSubscriptions,
  type SubscriptionSet,
} from './dispatch/resource-subscriptions.ts';
import type { MethodOutcome, ServerIdentity } from './mcp-methods.ts';
import type { RemoteWatches } from './remote-watches.ts';
import { defaultVersion, servedRevisions } from './revisions/index.ts';
import type { Revision } from './revisions/revision.ts';
import { hasTaskResource, taskResources } from './task-resources.ts';
import { type ListenSink, readListenFilter, TaskSubscription } from './task-subscriptions.ts';

export interface McpCoreOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  /**
   * The tools offered (the catalog, in a deployment). An inline tool runs in this process only
   * when `tools.local()` has its handler (its module is loaded here); otherwise its calls go to a
   * worker as durable tasks, like any other tool's.
   */
  readonly tools: ToolCatalog;
  readonly server: ServerIdentity;
  /**
   * The resources, resource templates and prompts of the modules loaded in this process (served
   * here, in the request). Taskgate's own task resources come first and are always there; what
   * the catalog publishes for other modules (`tools.content()`) is read by a worker serving it.
   */
  readonly content?: readonly ContentSet[];
  /**
   * Subscriptions to the catalog's resources that have `watch`, held in Postgres for the workers
   * serving them (absent: such subscriptions are acknowledged and never notified).
   */
  readonly contentWatches?: RemoteWatches;
  /**
   * The key that signs requestState (multi round-trip requests): the same on every instance a
   * retry may reach (TaskServices reads it from Postgres). Absent: a random key of this process.
   */
  readonly requestStateKey?: Buffer;
  /** Entries per page of resources/list, resources/templates/list and prompts/list (default 100). */
  readonly listPageSize?: number;
  /** The floor under NOTIFY while a call waits for its task. */
  readonly pollMs: number;
  /** The server's ceiling on tools' clocks (inline calls; durable ones get it from TaskService). */
  readonly clockCaps?: ClockCaps;
  /**
   * For a client that declared the Tasks extension: a call of a task-optional tool still running
   * after this long is answered with a CreateTaskResult instead (default 500 ms).
   */
  readonly taskAfterMs?: number;
  /** Where an inline handler's failures are logged (default: nowhere). */
  readonly logger?: { readonly info: LogFn; readonly warn: LogFn; readonly debug: LogFn };
}

type LogFn = (fields: Record<string, unknown>, message: string) => void;

/** A list whose changes a client may hear of: notifications/<kind>/list_changed. */
export type ListKind = 'tools' | 'resources' | 'prompts';

export { DEFAULT_TASK_AFTER_MS, ServerStopping, stoppedCallError } from './dispatch/call-runner.ts';

export interface RequestContext {
  readonly tenantId: string;
  /** Aborted when the request is cancelled (a closed stream, notifications/cancelled, a closed pipe). */
  readonly signal: AbortSignal;
  /**
   * Sees each new progress value while a tools/call runs (for notifications/progress). The core
   * calls it with strictly increasing values only, durable or inline, so transports need no filter.
   */
  readonly onProgress?: (progress: TaskProgress) => void;
  readonly log?: (fields: Record<string, unknown>, message: string) => void;
  /**
   * What the client declared: per request in 2026-07-28 (`_meta`), at initialize in 2025-11-25.
   * Absent means nothing was declared.
   */
  readonly clientCapabilities?: Capabilities;
  /** The era the request speaks, when the transport names no `revision`: that era's latest. */
  readonly era?: ProtocolEra;
  /** The revision the request speaks (negotiated at initialize, or per request). */
  readonly revision?: string;
  /**
   * The least severe level of notifications/message this request hears (2026-07-28: its `_meta`
   * logLevel; before: the session's logging/setLevel); absent or null: none.
   */
  readonly logLevel?: LogLevel | null;
  /**
   * Where the request's own notifications go (its response stream, or the pipe): its
   * notifications/message, and a handshake revision's notifications/elicitation/complete.
   */
  readonly onLog?: (notification: Record<string, unknown>) => void;
  /**
   * Sends the client a request on this request's connection (elicitation/create and the like, as
   * handshake revisions make them) and resolves with its result; rejects when `signal` aborts.
   */
  readonly askClient?: (
    method: string,
    params: Readonly<Record<string, unknown>>,
    signal: AbortSignal,
  ) => Promise<unknown>;
  /**
   * The HTTP request's headers, each with its values apart (2026-07-28 checks a tool's
   * Mcp-Param-* headers against the body). A function: most tools declare none, and the view is
   * built only for one that does.
   */
  readonly headers?: () => RequestHeaders;
  /** The connection's resources/subscribe set (handshake revisions; absent: none to keep it in). */
  readonly resourceSubscriptions?: SubscriptionSet;
  /**
   * A -32042 of a request sent the client these URL elicitations: kept with the session, for a
   * later completion to reach it (POST /v1/elicitations/{id}/complete). Absent: nowhere to keep them.
   */
  readonly onUrlElicitations?: (elicitationIds: readonly string[]) => Promise<void>;
  /** logging/setLevel: keeps the level for the connection's later requests (handshake revisions). */
  readonly setLogLevel?: (level: LogLevel) => Promise<void> | void;
  /** Sees each status change of the task a 2025-11-25 tasks/result waits for, as its notification. */
  readonly onTaskStatus?: (notification: Record<string, unknown>) => void;
  /**
   * A task the request created at the client's asking (2025-11-25's `task` param), for a
   * connection that follows the status of the tasks it created on a stream of its own.
   */
  readonly onTaskCreated?: (taskId: string) => void;
}

/**
 * The MCP methods, whatever the transport. A tools/call is a `request`-mode task; when the
 * request's signal aborts, the task is cancelled (through the same path as tasks/cancel, so the
 * worker stops at its next checkpoint) and null comes back: a cancelled request gets no response.
 */
export class McpCore {
  readonly #options: McpCoreOptions;
  readonly #watcher: TaskWatcher;
  /** Each served revision's methods; the transports tell which revision a request speaks. */
  readonly #revisions: ReadonlyMap<string, Revision>;
  /** Every resource and prompt served: the tasks', the modules' loaded here, and the catalog's. */
  readonly #content: ContentOffer;

  constructor(options: McpCoreOptions) {
    this.#options = options;
    this.#watcher = new TaskWatcher(options);
    const runner = new CallRunner(options, this.#watcher);
    const { tools } = options;
    const content = new ContentOffer({
      local: [taskResources(options.service, options.server), ...(options.content ?? [])],
      ...(tools.content && tools.onContentChange
        ? {
            catalog: {
              content: () => tools.content?.() ?? [],
              onContentChange: (l) => tools.onContentChange?.(l) ?? (() => {}),
            },
            remote: remoteContentCalls(options.service, this.#watcher, options.pollMs, options.logger),
            ...(options.contentWatches
              ? {
                  watch: watchesOf(options.contentWatches),
                  retool: (toolOf) => options.contentWatches?.retool(toolOf),
                }
              : {}),
          }
        : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
    this.#content = content;
    this.#revisions = servedRevisions(runner, this.#watcher, {
      content,
      served: (tenantId, uri) => this.#resourceServed(tenantId, uri),
      server: options.server,
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.listPageSize === undefined ? {} : { pageSize: options.listPageSize }),
    });
  }

  /**
   * One request of the revision the transport determined (`context.revision`, else its era's
   * latest): its method table's answer, or -32601 for a method that revision does not have.
   */
  async request(
    method: string,
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
  ): Promise<MethodOutcome | null> {
    const revision = this.#revisions.get(context.revision ?? defaultVersion(context.era));
    const handler = revision?.methods.get(method);
    if (handler) return handler(params, context);
    return {
      kind: 'error',
      httpStatus: revision?.methodNotFoundStatus ?? 404,
      error: { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` },
    };
  }

  /**
   * Whether the tenant may subscribe to `uri`: one of its own tasks, or a module's resource (a
   * template matches whatever its variables are: a module's resource is not read to find out).
   */
  async #resourceServed(tenantId: string, uri: string): Promise<boolean> {
    return (
      (await hasTaskResource(this.#options.service, tenantId, uri)) ?? this.#content.current().resolve(uri) !== null
    );
  }

  /**
   * Calls `listener` with each list that changed — the tools offered, the resources (and
   * templates), the prompts — for its list-changed notification. Returns the unsubscribe function.
   */
  onListChanged(listener: (kind: ListKind) => void): () => void {
    const tools = this.#options.tools.onChange(() => listener('tools'));
    const content = this.#content.onChange((kinds) => {
      for (const kind of kinds) listener(kind);
    });
    return () => {
      tools();
      content();
    };
  }

  /**
   * The status notifications of a revision that has them (2025-11-25's notifications/tasks/status)
   * for the tasks a connection created: `add` each task, `stop` with the connection. Null for a
   * revision without them.
   */
  watchStatus(tenantId: string, revision: string, send: (notification: Record<string, unknown>) => void) {
    return this.#revisions.get(revision)?.statusWatch?.(tenantId, send) ?? null;
  }

  /**
   * A connection's resources/subscribe set (handshake revisions): notifications/resources/updated
   * go to `send` (the session's GET stream, the pipe). `stop` it with the connection.
   */
  resourceSubscriptions(
    tenantId: string,
    send: (notification: Record<string, unknown>) => void,
  ): ResourceSubscriptions {
    return resourceSubscriptions(this.#watcher, this.#options.pollMs, tenantId, send, {
      resolve: (uri) => this.#content.current().resolve(uri),
      ...(this.#options.logger ? { log: (fields, message) => this.#options.logger?.warn(fields, message) } : {}),
    });
  }

  /**
   * subscriptions/listen: the subscription to start on the transport's stream, or the error that
   * refuses it (an unknown filter field, taskIds without the Tasks extension).
   */
  listen(
    params: Readonly<Record<string, unknown>> | undefined,
    context: RequestContext,
    listenId: JsonRpcId,
    sink: ListenSink,
  ): TaskSubscription | MethodOutcome {
    const filter = readListenFilter(params, context.clientCapabilities);
    if ('kind' in filter) return filter;
    return new TaskSubscription(
      {
        ...this.#options,
        watcher: this.#watcher,
        lists: { onChange: (listener) => this.onListChanged(listener) },
        resources: {
          has: (uri) => this.#resourceServed(context.tenantId, uri),
          subscriptions: (tenantId, send) => this.resourceSubscriptions(tenantId, send),
        },
      },
      { tenantId: context.tenantId, listenId, filter },
      sink,
    );
  }
}

/** A catalog entry's subscriptions, held in Postgres under its content tool. */
function watchesOf(watches: RemoteWatches) {
  return (entry: { readonly tool: string }) => (uri: string, tenant: string, changed: () => void) =>
    watches.watch(entry.tool, tenant, uri, changed);
}
