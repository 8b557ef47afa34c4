import type { ContentSet } from '@taskgate/tools';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import { TaskWatcher } from '../tasks/task-watch.ts';
import { McpCore } from './core/mcp-core.ts';
import type { ListKind } from './core/request-context.ts';
import { CallRunner, type CallRunnerOptions } from './methods/call-runner.ts';
import { ContentOffer, remoteContentCalls } from './methods/content-offer.ts';
import type { RemoteWatches } from './methods/remote-watches.ts';
import { resourceSubscriptions } from './methods/resource-subscriptions.ts';
import { hasTaskResource, taskResources } from './methods/task-resources.ts';
import { readListenFilter, TaskSubscription } from './methods/task-subscriptions.ts';
import { servedRevisions } from './revisions/index.ts';

export interface McpCoreOptions extends CallRunnerOptions {
  readonly hub: TaskEventsHub;
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
  /** Entries per page of resources/list, resources/templates/list and prompts/list (default 100). */
  readonly listPageSize?: number;
}

/**
 * The core with every revision's methods, the content offered and the subscriptions, over one
 * task watcher: the one place that knows both the core and what it routes to.
 */
export function createMcpCore(options: McpCoreOptions): McpCore {
  const watcher = new TaskWatcher(options);
  const runner = new CallRunner(options, watcher);
  const { tools } = options;
  const content = new ContentOffer({
    local: [taskResources(options.service, options.server), ...(options.content ?? [])],
    ...(tools.content && tools.onContentChange
      ? {
          catalog: {
            content: () => tools.content?.() ?? [],
            onContentChange: (l) => tools.onContentChange?.(l) ?? (() => {}),
          },
          remote: remoteContentCalls(options.service, watcher, options.pollMs, options.logger),
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
  /**
   * Whether the tenant may subscribe to `uri`: one of its own tasks, or a module's resource (a
   * template matches whatever its variables are: a module's resource is not read to find out).
   */
  const served = async (tenantId: string, uri: string): Promise<boolean> =>
    (await hasTaskResource(options.service, tenantId, uri)) ?? content.current().resolve(uri) !== null;
  const onListChanged = (listener: (kind: ListKind) => void) => {
    const toolsChange = tools.onChange(() => listener('tools'));
    const contentChange = content.onChange((kinds) => {
      for (const kind of kinds) listener(kind);
    });
    return () => {
      toolsChange();
      contentChange();
    };
  };
  const subscriptionsOf = (tenantId: string, send: (notification: Record<string, unknown>) => void) =>
    resourceSubscriptions(watcher, options.pollMs, tenantId, send, {
      resolve: (uri) => content.current().resolve(uri),
      ...(options.logger ? { log: (fields, message) => options.logger?.warn(fields, message) } : {}),
    });
  return new McpCore({
    revisions: servedRevisions(runner, watcher, {
      content,
      served,
      server: options.server,
      ...(options.logger ? { logger: options.logger } : {}),
      ...(options.listPageSize === undefined ? {} : { pageSize: options.listPageSize }),
    }),
    onListChanged,
    resourceSubscriptions: subscriptionsOf,
    listen: (params, context, listenId, sink) => {
      const filter = readListenFilter(params, context.clientCapabilities);
      if ('kind' in filter) return filter;
      return new TaskSubscription(
        {
          ...options,
          watcher,
          lists: { onChange: onListChanged },
          resources: { has: (uri) => served(context.tenantId, uri), subscriptions: subscriptionsOf },
        },
        { tenantId: context.tenantId, listenId, filter },
        sink,
      );
    },
  });
}

/** A catalog entry's subscriptions, held in Postgres under its content tool. */
function watchesOf(watches: RemoteWatches) {
  return (entry: { readonly tool: string }) => (uri: string, tenant: string, changed: () => void) =>
    watches.watch(entry.tool, tenant, uri, changed);
}
