import type { TaskRecord } from '@taskgate/db';
import { type Capabilities, declaresTasks, type JsonRpcId, TASKS_REQUIRED } from '@taskgate/protocol';
import { isTerminalStatus } from '@taskgate/reliability';
import { changesStatus, type TaskReading, type TaskWatch, type TaskWatcher } from '../../tasks/task-watch.ts';
import { invalidParams, type MethodOutcome, missingCapability } from '../core/outcomes.ts';
import type { ListKind } from '../core/request-context.ts';
import type { ServerIdentity } from '../core/server-info.ts';
import type { ListenSink, ListenSubscription, ResourceSubscriptions } from '../core/subscriptions.ts';
import { MAX_RESOURCE_SUBSCRIPTIONS } from '../core/subscriptions.ts';
import { MAX_URI_CHARS } from './content-methods.ts';
import { detailedTask } from './task-results.ts';

/** `_meta` key naming the subscriptions/listen request a message belongs to (basic/patterns/subscriptions). */
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

const MAX_TASK_IDS = 1_000;

/** The notification filter of subscriptions/listen, with the Tasks extension's `taskIds`. */
export interface ListenFilter {
  readonly toolsListChanged?: boolean;
  readonly promptsListChanged?: boolean;
  readonly resourcesListChanged?: boolean;
  readonly resourceSubscriptions?: readonly string[];
  readonly taskIds?: readonly string[];
}

const BOOLEAN_FIELDS = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const;
const LIST_KINDS: readonly ListKind[] = ['tools', 'resources', 'prompts'];
const LIST_FIELDS_BY_KIND = {
  tools: 'toolsListChanged',
  resources: 'resourcesListChanged',
  prompts: 'promptsListChanged',
} as const satisfies Record<ListKind, (typeof BOOLEAN_FIELDS)[number]>;
const LIST_FIELDS = ['resourceSubscriptions', 'taskIds'] as const;

/**
 * params.notifications, checked: an unknown field or a wrong type is -32602 (a filter the server
 * cannot read must not silently subscribe to less), and `taskIds` needs the Tasks extension on the
 * request (-32021, tasks-extension "Task Status Notifications").
 */
export function readListenFilter(
  params: Readonly<Record<string, unknown>> | undefined,
  capabilities: Capabilities | undefined,
): ListenFilter | MethodOutcome {
  const filter = params?.notifications ?? {};
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
    return invalidParams('params.notifications must be an object');
  }
  for (const [field, value] of Object.entries(filter)) {
    if ((BOOLEAN_FIELDS as readonly string[]).includes(field)) {
      if (typeof value !== 'boolean') return invalidParams(`params.notifications.${field} must be a boolean`);
    } else if ((LIST_FIELDS as readonly string[]).includes(field)) {
      if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
        return invalidParams(`params.notifications.${field} must be an array of strings`);
      }
      if (value.length > MAX_TASK_IDS)
        return invalidParams(`params.notifications.${field} has more than ${MAX_TASK_IDS} entries`);
    } else {
      return invalidParams(`params.notifications.${field} is not a notification type this server knows`);
    }
  }
  const read = filter as ListenFilter;
  if (read.taskIds !== undefined && !declaresTasks(capabilities)) {
    return missingCapability(
      TASKS_REQUIRED,
      'task notifications are part of the Tasks extension; declare it in the request',
    );
  }
  return read;
}

export interface TaskSubscriptionOptions {
  /** The process's task watches: subscriptions share its reads (McpCore holds one). */
  readonly watcher: TaskWatcher;
  readonly server: ServerIdentity;
  /** The floor under NOTIFY: subscribed tasks are re-read this often. */
  readonly pollMs: number;
  /**
   * The lists offered (McpCore.onListChanged): a toolsListChanged, resourcesListChanged or
   * promptsListChanged subscription hears of each change of its list.
   */
  readonly lists?: { onChange(listener: (kind: ListKind) => void): () => void };
  /** The resources a `resourceSubscriptions` filter may name, and their change notifications. */
  readonly resources?: {
    /** Whether `uri` names a resource of this tenant's (a module's, or one of its tasks). */
    has(uri: string): Promise<boolean>;
    /** A set of subscriptions whose notifications/resources/updated go to `send`. */
    subscriptions(tenantId: string, send: (notification: Record<string, unknown>) => void): ResourceSubscriptions;
  };
}

/**
 * One subscriptions/listen: the acknowledgement first, then `notifications/tasks` with the full
 * task (what tasks/get would answer) whenever a subscribed task's status changes — woken by the
 * task's notifications across API instances, with a poll under them. Per task only the latest
 * status matters, so undelivered ones are replaced (the sink's key). Closing it never touches a task.
 *
 * With `toolsListChanged`, `notifications/tools/list_changed` whenever the tools offered change
 * (a worker serving other tools started, or the last one serving a tool left the catalog window);
 * `resourcesListChanged` and `promptsListChanged` likewise for the modules' content the catalog
 * publishes. Each carries nothing but the subscription id — the client re-reads the list — so undelivered ones
 * fold into one, and one that comes before the acknowledgement is sent right after it
 * (basic/patterns/subscriptions: nothing on the subscription before its acknowledgement).
 */
export class TaskSubscription implements ListenSubscription {
  readonly #options: TaskSubscriptionOptions;
  readonly #tenantId: string;
  readonly #listenId: JsonRpcId;
  readonly #filter: ListenFilter;
  readonly #sink: ListenSink;
  readonly #seen = new Map<string, string>();
  #watch: TaskWatch | null = null;
  /** Tasks whose first reading (the one the acknowledgement is built from) has not come yet. */
  readonly #initial = new Map<string, (reading: TaskReading) => void>();
  /** Later readings that came before the acknowledgement, latest per task: delivered right after it. */
  readonly #early = new Map<string, TaskRecord>();
  #unsubscribeTools: (() => void) | null = null;
  #resources: ResourceSubscriptions | null = null;
  #acknowledged = false;
  /** Lists that changed before the acknowledgement: told right after it. */
  readonly #changedBeforeAck = new Set<ListKind>();
  #stopped = false;

  constructor(
    options: TaskSubscriptionOptions,
    listen: { tenantId: string; listenId: JsonRpcId; filter: ListenFilter },
    sink: ListenSink,
  ) {
    this.#options = options;
    this.#tenantId = listen.tenantId;
    this.#listenId = listen.listenId;
    this.#filter = listen.filter;
    this.#sink = sink;
  }

  /**
   * Subscribes, reads each task once (so a change during the read is not lost), and sends the
   * acknowledgement naming what it honours: the lists (whose changes it sends) and the
   * task ids this tenant has (other tenants' and unknown ids are left out), and the resource URIs
   * it watches. A URI this server does not serve, one longer than a URI may be, and those past
   * MAX_RESOURCE_SUBSCRIPTIONS are left out. Resources are subscribed after the acknowledgement:
   * their first reading is the baseline, so nothing of theirs can come before it.
   */
  async start(): Promise<void> {
    if (this.#stopped) return;
    const lists = this.#listsWanted();
    if (lists.length > 0 && this.#options.lists) {
      this.#unsubscribeTools = this.#options.lists.onChange((kind) => {
        if (!lists.includes(kind)) return;
        if (this.#acknowledged) this.#listChanged(kind);
        else this.#changedBeforeAck.add(kind);
      });
    }
    const wanted = [...new Set(this.#filter.taskIds ?? [])];
    const watch = this.#options.watcher.watch(
      {
        tenantId: this.#tenantId,
        pollMs: this.#options.pollMs,
        // The poll only backs up NOTIFY; subscriptions opened together do not poll in step.
        firstPoll: 'jittered',
        // Progress, a claim or a hand-back leaves the status as it was: nothing to tell.
        wakeOn: changesStatus,
        readAtStart: true,
        shared: true,
      },
      (id, reading) => this.#onReading(id, reading),
    );
    this.#watch = watch;
    const initial = wanted.map((id) => new Promise<TaskReading>((resolve) => this.#initial.set(id, resolve)));
    for (const id of wanted) watch.add(id);
    const readings = await Promise.all(initial);
    if (this.#stopped) return;
    const { resources, honoured } = await this.#resourcesToWatch();
    if (this.#stopped) {
      resources?.stop();
      return;
    }
    const known: string[] = [];
    for (const [index, reading] of readings.entries()) {
      const id = wanted[index] as string;
      if (reading.kind !== 'task') {
        watch.remove(id);
        continue;
      }
      known.push(id);
      this.#seen.set(id, signature(reading.task));
      if (isTerminalStatus(reading.task.status)) watch.remove(id);
    }
    this.#sink.push(
      {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: {
          _meta: { [SUBSCRIPTION_ID]: this.#listenId },
          notifications: {
            ...Object.fromEntries(lists.map((kind) => [LIST_FIELDS_BY_KIND[kind], true])),
            ...(this.#filter.resourceSubscriptions && this.#options.resources
              ? { resourceSubscriptions: honoured }
              : {}),
            ...(this.#filter.taskIds ? { taskIds: known } : {}),
          },
        },
      },
      'acknowledged',
    );
    this.#acknowledged = true;
    if (resources) {
      this.#resources = resources;
      for (const uri of honoured) resources.subscribe(uri);
    }
    for (const kind of this.#changedBeforeAck) this.#listChanged(kind);
    this.#changedBeforeAck.clear();
    for (const [id, task] of this.#early) this.#deliver(id, task);
    this.#early.clear();
  }

  /**
   * The URIs of the filter this subscription honours, and the set that will watch them (made now,
   * subscribed after the acknowledgement); none without a `resourceSubscriptions` filter.
   */
  async #resourcesToWatch(): Promise<{ resources: ResourceSubscriptions | null; honoured: string[] }> {
    const asked = this.#filter.resourceSubscriptions;
    const served = this.#options.resources;
    if (!asked || !served) return { resources: null, honoured: [] };
    // The first 100 asked for, of which another tenant's task or a malformed id is left out as an
    // unknown one is (taskIds too): at most 100 task reads, which the service batches into one.
    const candidates = [...new Set(asked)]
      .filter((uri) => uri !== '' && uri.length <= MAX_URI_CHARS)
      .slice(0, MAX_RESOURCE_SUBSCRIPTIONS);
    const kept = await Promise.all(candidates.map((uri) => served.has(uri)));
    const honoured = candidates.filter((_, index) => kept[index]);
    const resources = served.subscriptions(this.#tenantId, (notification) => {
      if (this.#stopped) return;
      const params = notification.params as { uri: string };
      this.#sink.push(
        { ...notification, params: { ...params, _meta: { [SUBSCRIPTION_ID]: this.#listenId } } },
        `resource:${params.uri}`,
      );
    });
    return { resources, honoured };
  }

  /** The client went away (stream closed, notifications/cancelled, EOF): forget everything. */
  stop(): void {
    this.#stopped = true;
    this.#unsubscribeTools?.();
    this.#unsubscribeTools = null;
    this.#resources?.stop();
    this.#resources = null;
    this.#watch?.stop();
    // A start() still waiting for first readings returns (it sees #stopped) instead of hanging.
    for (const resolve of this.#initial.values()) resolve({ kind: 'missing' });
    this.#initial.clear();
    this.#early.clear();
  }

  /** The server ends the subscription (shutdown): the listen request's result, then nothing. */
  endGracefully(): void {
    if (this.#stopped) return;
    this.stop();
    this.#sink.finish({
      jsonrpc: '2.0',
      id: this.#listenId,
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: this.#listenId } },
    });
  }

  /** The lists the filter asks for that this server can tell changes of. */
  #listsWanted(): ListKind[] {
    if (!this.#options.lists) return [];
    return LIST_KINDS.filter((kind) => this.#filter[LIST_FIELDS_BY_KIND[kind]] === true);
  }

  #listChanged(kind: ListKind): void {
    if (this.#stopped) return;
    this.#sink.push(
      {
        jsonrpc: '2.0',
        method: `notifications/${kind}/list_changed`,
        params: { _meta: { [SUBSCRIPTION_ID]: this.#listenId } },
      },
      kind,
    );
  }

  #onReading(id: string, reading: TaskReading): void {
    const first = this.#initial.get(id);
    if (first) {
      this.#initial.delete(id);
      first(reading);
      return;
    }
    // A failed read (an outage, a task expired meanwhile) tells nothing; the next poll reads again.
    if (reading.kind !== 'task') return;
    if (this.#acknowledged) this.#deliver(id, reading.task);
    else this.#early.set(id, reading.task);
  }

  #deliver(id: string, task: TaskRecord): void {
    if (this.#stopped || !this.#watch?.has(id)) return;
    const now = signature(task);
    if (this.#seen.get(id) === now) return;
    this.#seen.set(id, now);
    const { resultType: _resultType, ...detail } = detailedTask(task, this.#options.server);
    this.#sink.push(
      {
        jsonrpc: '2.0',
        method: 'notifications/tasks',
        params: { ...detail, _meta: { [SUBSCRIPTION_ID]: this.#listenId } },
      },
      `task:${id}`,
    );
    if (isTerminalStatus(task.status)) this.#watch.remove(id);
  }
}

/** A status change is what subscribers hear of: the status, and what it waits for. */
function signature(task: TaskRecord): string {
  return `${task.status}|${Object.keys(task.inputRequests ?? {}).join(',')}`;
}
