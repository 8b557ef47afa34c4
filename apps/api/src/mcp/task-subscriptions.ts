import type { TaskRecord } from '@taskgate/db';
import { type Capabilities, declaresTasks, type JsonRpcId, TASKS_REQUIRED } from '@taskgate/protocol';
import { isTerminalStatus } from '@taskgate/reliability';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { invalidParams, type MethodOutcome, missingCapability, type ServerIdentity } from './mcp-methods.ts';
import { detailedTask } from './mcp-tasks.ts';

/** `_meta` key naming the subscriptions/listen request a message belongs to (basic/patterns/subscriptions). */
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

const MAX_TASK_IDS = 1_000;

/** Notifications that may come with a status change (the others never do). */
const STATUS_EVENTS: ReadonlySet<string> = new Set(['created', 'status', 'cancel', 'resumed']);

/** The notification filter of subscriptions/listen, with the Tasks extension's `taskIds`. */
export interface ListenFilter {
  readonly toolsListChanged?: boolean;
  readonly promptsListChanged?: boolean;
  readonly resourcesListChanged?: boolean;
  readonly resourceSubscriptions?: readonly string[];
  readonly taskIds?: readonly string[];
}

const BOOLEAN_FIELDS = ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const;
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

interface Flight {
  readonly promise: Promise<TaskRecord | null>;
  /** Callers that came while this read was under way: they get the read after it. */
  next: { promise: Promise<TaskRecord | null>; resolve: (task: TaskRecord | null) => void } | null;
}

/**
 * Reads of watched tasks, shared by every subscription in the process: one read per task in
 * flight, and at most one more queued behind it. A caller that arrives while a read is under way
 * may have been woken by a change that read does not see, so it gets the next one; however many
 * subscriptions and notifications pile up, a task costs at most two reads at a time.
 */
export class SharedTaskReads {
  readonly #service: TaskService;
  readonly #flights = new Map<string, Flight>();

  constructor(service: TaskService) {
    this.#service = service;
  }

  read(tenantId: string, id: string): Promise<TaskRecord | null> {
    const key = `${tenantId}/${id}`;
    const flight = this.#flights.get(key);
    if (!flight) return this.#start(key, tenantId, id).promise;
    if (!flight.next) {
      let resolve!: (task: TaskRecord | null) => void;
      const promise = new Promise<TaskRecord | null>((done) => {
        resolve = done;
      });
      flight.next = { promise, resolve };
    }
    return flight.next.promise;
  }

  #start(key: string, tenantId: string, id: string): Flight {
    const flight: Flight = {
      promise: this.#service.get(tenantId, id).then(
        (task) => task,
        () => null,
      ),
      next: null,
    };
    this.#flights.set(key, flight);
    void flight.promise.then(() => {
      const waiting = flight.next;
      if (!waiting) {
        this.#flights.delete(key);
        return;
      }
      void this.#start(key, tenantId, id).promise.then(waiting.resolve);
    });
    return flight;
  }
}

/** Where a subscription's messages go: an SSE response, or the stdio pipe. */
export interface ListenSink {
  /** A notification; one still undelivered with the same `key` is replaced by it. */
  push(message: Record<string, unknown>, key: string): void;
  /** The graceful end: the listen request's result; nothing follows it. */
  finish(message: Record<string, unknown>): void;
}

export interface TaskSubscriptionOptions {
  readonly service: TaskService;
  /** Shared by the process's subscriptions (McpCore holds one). */
  readonly reads: SharedTaskReads;
  readonly hub: TaskEventsHub;
  readonly server: ServerIdentity;
  /** The floor under NOTIFY: subscribed tasks are re-read this often. */
  readonly pollMs: number;
  /** The tools offered: a toolsListChanged subscription hears of each change (CatalogView.onChange). */
  readonly tools?: { onChange(listener: () => void): () => void };
}

/**
 * One subscriptions/listen: the acknowledgement first, then `notifications/tasks` with the full
 * task (what tasks/get would answer) whenever a subscribed task's status changes — woken by the
 * task's notifications across API instances, with a poll under them. Per task only the latest
 * status matters, so undelivered ones are replaced (the sink's key). Closing it never touches a task.
 *
 * With `toolsListChanged`, `notifications/tools/list_changed` whenever the tools offered change
 * (a worker serving other tools started, or the last one serving a tool left the catalog window).
 * It carries nothing but the subscription id — the client re-reads tools/list — so undelivered ones
 * fold into one, and one that comes before the acknowledgement is sent right after it
 * (basic/patterns/subscriptions: nothing on the subscription before its acknowledgement).
 */
export class TaskSubscription {
  readonly #options: TaskSubscriptionOptions;
  readonly #tenantId: string;
  readonly #listenId: JsonRpcId;
  readonly #filter: ListenFilter;
  readonly #sink: ListenSink;
  readonly #seen = new Map<string, string>();
  readonly #unsubscribe = new Map<string, () => void>();
  /** Tasks with a read under way, and those woken again meanwhile (one more read after it). */
  readonly #reading = new Set<string>();
  readonly #again = new Set<string>();
  #poll: NodeJS.Timeout | undefined;
  #unsubscribeTools: (() => void) | null = null;
  #acknowledged = false;
  #toolsChangedBeforeAck = false;
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
   * acknowledgement naming what it honours: the tool list (whose changes it sends) and the
   * task ids this tenant has; other tenants' and unknown ids are left out, as are resources and
   * prompts, which this server does not have.
   */
  async start(): Promise<void> {
    if (this.#filter.toolsListChanged && this.#options.tools) {
      this.#unsubscribeTools = this.#options.tools.onChange(() => {
        if (this.#acknowledged) this.#toolsChanged();
        else this.#toolsChangedBeforeAck = true;
      });
    }
    const wanted = [...new Set(this.#filter.taskIds ?? [])];
    for (const id of wanted)
      this.#unsubscribe.set(
        id,
        this.#options.hub.subscribe(id, (notification) => {
          // Progress, a claim or a hand-back leaves the status as it was: nothing to tell.
          if (notification && !STATUS_EVENTS.has(notification.event)) return;
          void this.#refresh(id);
        }),
      );
    const tasks = await Promise.all(wanted.map((id) => this.#read(id)));
    const known: string[] = [];
    for (const [index, task] of tasks.entries()) {
      const id = wanted[index] as string;
      if (!task) {
        this.#unsubscribe.get(id)?.();
        this.#unsubscribe.delete(id);
        continue;
      }
      known.push(id);
      this.#seen.set(id, signature(task));
      if (isTerminalStatus(task.status)) this.#drop(id);
    }
    if (this.#stopped) return;
    this.#sink.push(
      {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: {
          _meta: { [SUBSCRIPTION_ID]: this.#listenId },
          notifications: {
            ...(this.#filter.toolsListChanged && this.#options.tools ? { toolsListChanged: true } : {}),
            ...(this.#filter.taskIds ? { taskIds: known } : {}),
          },
        },
      },
      'acknowledged',
    );
    this.#acknowledged = true;
    if (this.#toolsChangedBeforeAck) this.#toolsChanged();
    if (this.#unsubscribe.size > 0) {
      // The poll only backs up NOTIFY. Its phase is random, so subscriptions opened together do
      // not all re-read their tasks in the same instant.
      const pollMs = this.#options.pollMs;
      this.#poll = setTimeout(
        () => {
          this.#poll = setInterval(() => this.#pollAll(), pollMs);
          this.#poll.unref();
          this.#pollAll();
        },
        Math.round(pollMs * (0.5 + Math.random())),
      );
      this.#poll.unref();
    }
  }

  /** The client went away (stream closed, notifications/cancelled, EOF): forget everything. */
  stop(): void {
    this.#stopped = true;
    this.#unsubscribeTools?.();
    this.#unsubscribeTools = null;
    clearTimeout(this.#poll); // clears the first timeout and the interval after it alike
    for (const unsubscribe of this.#unsubscribe.values()) unsubscribe();
    this.#unsubscribe.clear();
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

  #toolsChanged(): void {
    if (this.#stopped) return;
    this.#sink.push(
      {
        jsonrpc: '2.0',
        method: 'notifications/tools/list_changed',
        params: { _meta: { [SUBSCRIPTION_ID]: this.#listenId } },
      },
      'tools',
    );
  }

  #pollAll(): void {
    if (this.#stopped) return;
    for (const id of this.#unsubscribe.keys()) void this.#refresh(id);
  }

  async #refresh(id: string): Promise<void> {
    // One read per task at a time for this subscription; wake-ups meanwhile fold into one more.
    if (this.#reading.has(id)) {
      this.#again.add(id);
      return;
    }
    this.#reading.add(id);
    try {
      await this.#refreshOnce(id);
    } finally {
      this.#reading.delete(id);
    }
    if (this.#again.delete(id)) await this.#refresh(id);
  }

  async #refreshOnce(id: string): Promise<void> {
    const task = await this.#read(id);
    if (!task || this.#stopped || !this.#unsubscribe.has(id)) return;
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
    if (isTerminalStatus(task.status)) this.#drop(id);
  }

  #drop(id: string): void {
    this.#unsubscribe.get(id)?.();
    this.#unsubscribe.delete(id);
  }

  async #read(id: string): Promise<TaskRecord | null> {
    return this.#options.reads.read(this.#tenantId, id);
  }
}

/** A status change is what subscribers hear of: the status, and what it waits for. */
function signature(task: TaskRecord): string {
  return `${task.status}|${Object.keys(task.inputRequests ?? {}).join(',')}`;
}
