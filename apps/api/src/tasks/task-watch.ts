import { isDatabaseUnavailable, type TaskNotification, type TaskRecord } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import { isTerminalStatus } from '@taskgate/reliability';
import type { TaskEventsHub } from './task-events-hub.ts';
import type { TaskService } from './task-service.ts';

/**
 * One read of a watched task. Each watcher keeps its own policy for the kinds that are not a
 * task: a tools/call waits out `missing` and `unavailable` (the task goes on in its worker), a
 * listen skips them, the REST event stream closes on `missing`.
 */
export type TaskReading =
  | { readonly kind: 'task'; readonly task: TaskRecord }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unavailable' }
  | { readonly kind: 'failed'; readonly error: unknown };

/** Notifications that may come with a status change (progress, a claim or a hand-back never do). */
const STATUS_EVENTS: ReadonlySet<string> = new Set(['created', 'status', 'cancel', 'resumed']);

/** A `wakeOn` for watchers that care about the status only. */
export function changesStatus(notification: TaskNotification): boolean {
  return STATUS_EVENTS.has(notification.event);
}

/**
 * How long a wait that hears notifications (onNotification) waits for the notification of a
 * terminal status it read first: they arrive within milliseconds of the commit; this bounds a lost one.
 */
const LATE_TERMINAL_NOTIFICATION_MS = 250;

/** A progress notification with its value: what it says needs no read. */
function carriesProgress(notification: TaskNotification): boolean {
  return notification.event === 'progress' && notification.progress !== undefined;
}

/**
 * changesStatus for a watch opened on a task its own request created: that task's `created`
 * notification, which arrives after the watch opens, says what the request knows already.
 */
function changesStatusSinceCreated(notification: TaskNotification): boolean {
  return notification.event !== 'created' && STATUS_EVENTS.has(notification.event);
}

export interface WatchOptions {
  readonly tenantId: string;
  /** The floor under NOTIFY (only a hint, and absent on the embedded database): every task is read this often. */
  readonly pollMs: number;
  /**
   * 'jittered': the first poll comes after 0.5–1.5 × pollMs, so watches opened together (a
   * burst of listens) do not all read their tasks in the same instant. Default 'fixed'.
   */
  readonly firstPoll?: 'fixed' | 'jittered';
  /** Which notifications are worth a read (default: all). A listener's reconnect always is. */
  readonly wakeOn?: (notification: TaskNotification) => boolean;
  /**
   * Hears every notification of a watched task as it comes, before wakeOn decides on a read (what
   * a notification itself carries, such as a progress value); null: the listener reconnected.
   */
  readonly onNotification?: (taskId: string, notification: TaskNotification | null) => void;
  /** Read each task as soon as it is added (default: only when woken or polled). */
  readonly readAtStart?: boolean;
  /** Go through the process's shared reads (a listen over many tasks, many listens over one). */
  readonly shared?: boolean;
}

interface Watched {
  readonly unsubscribe: () => void;
  reading: boolean;
  again: boolean;
}

/**
 * Watches tasks for one consumer: subscribes to each task's notifications, polls under them, and
 * serialises the reads. Per task one read is in flight; wake-ups while it is under way fold into
 * one more read after it, so a reading is never older than one delivered before it and a burst
 * of notifications costs two reads. One timer per watch, however many tasks it holds.
 */
export class TaskWatch {
  readonly #source: ReadSource;
  readonly #hub: TaskEventsHub;
  readonly #options: WatchOptions;
  readonly #onReading: (taskId: string, reading: TaskReading) => void;
  readonly #tasks = new Map<string, Watched>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    source: ReadSource,
    hub: TaskEventsHub,
    options: WatchOptions,
    onReading: (taskId: string, reading: TaskReading) => void,
  ) {
    this.#source = source;
    this.#hub = hub;
    this.#options = options;
    this.#onReading = onReading;
  }

  get size(): number {
    return this.#tasks.size;
  }

  has(taskId: string): boolean {
    return this.#tasks.has(taskId);
  }

  add(taskId: string): void {
    if (this.#stopped || this.#tasks.has(taskId)) return;
    const { wakeOn, onNotification, tenantId } = this.#options;
    const watched: Watched = {
      unsubscribe: this.#hub.subscribe(taskId, (notification) => {
        // What a notification carries is passed on only as its task's tenant's (the hub routes by
        // id; a payload that names another tenant is not this task's).
        if (notification === null || notification.tenant === tenantId) onNotification?.(taskId, notification);
        if (notification === null || !wakeOn || wakeOn(notification)) this.refresh(taskId);
      }),
      reading: false,
      again: false,
    };
    this.#tasks.set(taskId, watched);
    this.#startPolling();
    if (this.#options.readAtStart) this.refresh(taskId);
  }

  /** Stops watching one task; a read under way is not delivered. */
  remove(taskId: string): void {
    const watched = this.#tasks.get(taskId);
    if (!watched) return;
    watched.unsubscribe();
    this.#tasks.delete(taskId);
    if (this.#tasks.size === 0) this.#stopPolling();
  }

  /** Reads the task now (or right after the read under way). */
  refresh(taskId: string): void {
    const watched = this.#tasks.get(taskId);
    if (!watched) return;
    if (watched.reading) {
      watched.again = true;
      return;
    }
    void this.#readLoop(taskId, watched);
  }

  /** Ends the watch: no reading is delivered after this, and nothing is left subscribed or timed. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const watched of this.#tasks.values()) watched.unsubscribe();
    this.#tasks.clear();
    this.#stopPolling();
  }

  async #readLoop(taskId: string, watched: Watched): Promise<void> {
    watched.reading = true;
    try {
      do {
        watched.again = false;
        const reading = await this.#source.read(this.#options.tenantId, taskId, this.#options.shared === true);
        if (this.#tasks.get(taskId) !== watched) return;
        this.#onReading(taskId, reading);
      } while (watched.again && this.#tasks.get(taskId) === watched);
    } finally {
      watched.reading = false;
    }
  }

  #startPolling(): void {
    if (this.#timer !== undefined) return;
    const { pollMs } = this.#options;
    const pollAll = () => {
      for (const taskId of this.#tasks.keys()) this.refresh(taskId);
    };
    if (this.#options.firstPoll === 'jittered') {
      this.#timer = setTimeout(
        () => {
          this.#timer = setInterval(pollAll, pollMs);
          this.#timer.unref();
          pollAll();
        },
        Math.round(pollMs * (0.5 + Math.random())),
      );
    } else {
      this.#timer = setInterval(pollAll, pollMs);
    }
    this.#timer.unref();
  }

  #stopPolling(): void {
    clearTimeout(this.#timer); // clears the first timeout and the interval after it alike
    this.#timer = undefined;
  }
}

interface Flight {
  readonly promise: Promise<TaskReading>;
  /** Callers that came while this read was under way: they get the read after it. */
  next: { promise: Promise<TaskReading>; resolve: (reading: TaskReading) => void } | null;
}

/**
 * Where watches read tasks. Shared reads: one per task in flight across the watches that ask for
 * them, and at most one more queued behind it. A caller that arrives while a read is under way
 * may have been woken by a change that read does not see, so it gets the next one; however many
 * listens and notifications pile up, a task costs at most two reads at a time.
 */
class ReadSource {
  readonly #service: TaskService;
  readonly #flights = new Map<string, Flight>();

  constructor(service: TaskService) {
    this.#service = service;
  }

  read(tenantId: string, id: string, shared: boolean): Promise<TaskReading> {
    if (!shared) return this.#readOnce(tenantId, id);
    const key = `${tenantId}/${id}`;
    const flight = this.#flights.get(key);
    if (!flight) return this.#start(key, tenantId, id).promise;
    if (!flight.next) {
      let resolve!: (reading: TaskReading) => void;
      const promise = new Promise<TaskReading>((done) => {
        resolve = done;
      });
      flight.next = { promise, resolve };
    }
    return flight.next.promise;
  }

  #start(key: string, tenantId: string, id: string): Flight {
    const flight: Flight = { promise: this.#readOnce(tenantId, id), next: null };
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

  async #readOnce(tenantId: string, id: string): Promise<TaskReading> {
    try {
      return { kind: 'task', task: await this.#service.get(tenantId, id) };
    } catch (error) {
      if (isTaskgateError(error, 'TG_TASK_NOT_FOUND')) return { kind: 'missing' };
      if (isDatabaseUnavailable(error)) return { kind: 'unavailable' };
      return { kind: 'failed', error };
    }
  }
}

/**
 * Every task watch of one consumer family (the MCP methods, the REST event stream) comes from
 * here, so they share one way of learning of changes and one pool of shared reads.
 */
export class TaskWatcher {
  readonly #source: ReadSource;
  readonly #hub: TaskEventsHub;

  constructor(deps: { readonly service: TaskService; readonly hub: TaskEventsHub }) {
    this.#source = new ReadSource(deps.service);
    this.#hub = deps.hub;
  }

  /** Whether notifications arrive at all (without them only the poll wakes a watch). */
  get listening(): boolean {
    return this.#hub.listening;
  }

  /** Whether notifications arrive now: a listener, and its connection up. */
  get connected(): boolean {
    return this.#hub.connected === true;
  }

  watch(options: WatchOptions, onReading: (taskId: string, reading: TaskReading) => void): TaskWatch {
    return new TaskWatch(this.#source, this.#hub, options, onReading);
  }

  /**
   * Resolves with the task once it is terminal; `onChange` sees every non-terminal reading (for
   * progress). With notifications and no `onChange`, the task is read once, when its terminal
   * notification arrives (the hub remembers one that came before the subscription), and the poll
   * catches one that never came. A database outage or a task not visible yet is waited out: the
   * task goes on in its worker, and its caller should get its answer, not a 503 for a blip (the
   * task's own clocks and the sweeper bound the wait). Rejects with the signal's reason if
   * `signal` aborts first, and with the error of a read that failed otherwise.
   */
  untilTerminal(
    tenantId: string,
    taskId: string,
    options: {
      readonly pollMs: number;
      readonly signal: AbortSignal;
      readonly onChange?: (task: TaskRecord) => void;
      /**
       * `onChange` needs only status changes (a parked task's input requests): progress, claims,
       * log notifications and the task's own `created` cost no read, and the task is read at start
       * only with `readAtStart`.
       */
      readonly statusOnly?: { readonly readAtStart: boolean };
      /**
       * Every notification of the task as it comes (null: the listener reconnected, and some may
       * have been missed). With it, a progress notification that carries its value costs no read,
       * and a terminal status read before its notification came is held until it comes (the
       * notifications before it are all heard first), for LATE_TERMINAL_NOTIFICATION_MS at most.
       */
      readonly onNotification?: (notification: TaskNotification | null) => void;
    },
  ): Promise<TaskRecord> {
    const { signal, onChange } = options;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      // A terminal status read before its notification arrived (a poll won the race): the
      // notifications sent before it (progress values) are still on their way, and come before
      // it. Resolved once it arrives, or after a short bound if it was lost.
      let terminalHeard = false;
      let read: TaskRecord | null = null;
      let lateTimer: NodeJS.Timeout | undefined;
      const finish = (action: () => void) => {
        clearTimeout(lateTimer);
        watch.stop();
        signal.removeEventListener('abort', onAbort);
        action();
      };
      // Held on a terminal status read first, the answer is that status whatever ends the hold.
      const onAbort = () => finish(() => (read ? resolve(read) : reject(signal.reason)));
      const watch = this.watch(
        {
          tenantId,
          pollMs: options.pollMs,
          // Without a progress listener only a terminal status is worth a read.
          ...(options.onNotification
            ? {
                onNotification: (_id: string, notification: TaskNotification | null) => {
                  options.onNotification?.(notification);
                  if (!notification || !isTerminalStatus(notification.status)) return;
                  terminalHeard = true;
                  const task = read;
                  if (task) finish(() => resolve(task));
                },
              }
            : {}),
          ...(onChange && !options.statusOnly
            ? options.onNotification
              ? { wakeOn: (notification: TaskNotification) => !carriesProgress(notification) }
              : {}
            : {
                wakeOn: options.statusOnly
                  ? changesStatusSinceCreated
                  : (notification: TaskNotification) => isTerminalStatus(notification.status),
              }),
          // Without notifications, or to report progress from the first reading, read at once.
          readAtStart:
            !this.#hub.listening ||
            (onChange !== undefined && (options.statusOnly === undefined || options.statusOnly.readAtStart)),
        },
        (_id, reading) => {
          if (reading.kind === 'failed') {
            const held = read;
            return finish(() => (held ? resolve(held) : reject(reading.error)));
          }
          if (reading.kind !== 'task') return;
          if (isTerminalStatus(reading.task.status)) {
            const task = reading.task;
            if (!options.onNotification || terminalHeard || this.#hub.connected !== true) {
              return finish(() => resolve(task));
            }
            if (read) return;
            read = task;
            lateTimer = setTimeout(
              () => finish(() => resolve(task)),
              Math.min(options.pollMs, LATE_TERMINAL_NOTIFICATION_MS),
            );
            return;
          }
          try {
            onChange?.(reading.task);
          } catch (error) {
            finish(() => reject(error));
          }
        },
      );
      signal.addEventListener('abort', onAbort, { once: true });
      watch.add(taskId);
    });
  }
}
