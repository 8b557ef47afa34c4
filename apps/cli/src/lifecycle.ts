import { TaskgateError } from '@taskgate/errors';
import type { Logger } from './logger.ts';
import { shouldStopWithParent, startingParent, watchParent } from './parent-watch.ts';
import { DUPLICATE_SIGNAL_WINDOW_MS, type FirstSignal, type StopSignal, signalMeaning } from './stop-signals.ts';

export type StopCause = StopSignal | 'parent exited';

/** Past the grace in-flight work gets (TASKGATE_SHUTDOWN_GRACE_MS), the time to close connections. */
const CLOSE_MARGIN_MS = 2_000;

/** The deadline of a process's shutdown: what its work may take to stop, then to close. */
export function shutdownDeadlineMs(config: { readonly shutdownGraceMs: number }): number {
  return config.shutdownGraceMs + CLOSE_MARGIN_MS;
}

/**
 * Start-up and shutdown of one process. Resources register a stop function as they start; on the
 * first SIGTERM or SIGINT (or, for a process whose launcher waits for it, the launcher's death)
 * they are stopped in reverse order (the API stops taking requests before the workers release
 * their tasks, and the database closes last). The same signal again within
 * DUPLICATE_SIGNAL_WINDOW_MS is the same request; another signal, or the same one later, exits at
 * once, and a shutdown that outlives its deadline is cut short, so a stuck handler never keeps a
 * container from stopping.
 */
export class Lifecycle {
  readonly #logger: Logger;
  readonly #deadlineMs: number;
  readonly #stops: Array<{ name: string; stop: () => Promise<void> }> = [];
  readonly #exit: (code: number) => never;
  #stopping = false;
  #firstSignal: FirstSignal | null = null;
  #deadline: ReturnType<typeof setTimeout> | null = null;
  /** The resource stopping now, for the deadline's message. */
  #stoppingNow: string | null = null;
  #resolveStopRequested!: (cause: StopCause) => void;
  /** Resolves with what started the shutdown. */
  readonly stopRequested: Promise<StopCause>;

  constructor(logger: Logger, deadlineMs: number, exit: (code: number) => never = process.exit) {
    this.#logger = logger;
    this.#deadlineMs = deadlineMs;
    this.#exit = exit;
    this.stopRequested = new Promise((resolve) => {
      this.#resolveStopRequested = resolve;
    });
  }

  get stopping(): boolean {
    return this.#stopping;
  }

  /**
   * SIGTERM, SIGINT, SIGHUP and SIGQUIT handlers, and the parent watch when the parent is a launcher whose death
   * means "stop" (see shouldStopWithParent).
   */
  installSignalHandlers(
    options: { readonly stopWithParent?: boolean } = {
      stopWithParent: shouldStopWithParent(process.env, startingParent()),
    },
  ): void {
    const onSignal = (signal: StopSignal) => this.receive(signal, performance.now());
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const) process.on(signal, onSignal);
    if (options.stopWithParent) {
      watchParent((formerParent) => {
        if (this.#stopping) return;
        this.#stopping = true;
        this.#logger.info({ cause: 'parent exited', formerParent }, 'shutting down');
        this.#armDeadline();
        this.#resolveStopRequested('parent exited');
      });
    }
  }

  /** One stop signal, received at `nowMs` (a monotonic clock). */
  receive(signal: StopSignal, nowMs: number): void {
    const meaning = signalMeaning(this.#firstSignal, signal, nowMs);
    if (meaning === 'duplicate') {
      this.#logger.info(
        { signal, windowMs: DUPLICATE_SIGNAL_WINDOW_MS },
        `${signal} again within ${DUPLICATE_SIGNAL_WINDOW_MS} ms: the same stop request (send it again later, or another signal, to exit at once)`,
      );
      return;
    }
    if (meaning === 'exit-now') {
      this.#logger.warn({ signal, first: this.#firstSignal?.signal }, 'second signal during shutdown: exiting now');
      this.#exit(signal === 'SIGINT' ? 130 : 143);
      return;
    }
    this.#firstSignal = { signal, atMs: nowMs };
    if (this.#stopping) {
      // The parent's exit started the shutdown; a signal sent with it (a service manager stops a
      // whole process group) joins the stop instead of cutting it short.
      this.#logger.info({ signal }, 'signal during a shutdown already under way: continuing it');
      return;
    }
    this.#stopping = true;
    this.#logger.info({ signal }, 'shutting down');
    this.#armDeadline();
    this.#resolveStopRequested(signal);
  }

  /**
   * The shutdown's deadline runs from the stop request, whatever the process is doing then: a
   * start-up still waiting on a database that never answers has not reached stopAll(), and would
   * otherwise ignore the stop for as long as it waits.
   */
  #armDeadline(): void {
    if (this.#deadline !== null) return;
    this.#deadline = setTimeout(() => {
      const error = new TaskgateError('TG_SHUTDOWN_TIMEOUT', `shutdown took longer than ${this.#deadlineMs} ms`);
      const stopping = this.#stoppingNow;
      // The one under way first: it is the one that did not finish.
      const pending = [...(stopping === null ? [] : [stopping]), ...this.#stops.map((entry) => entry.name).reverse()];
      this.#logger.error({ code: error.code, stopping, pending }, error.message);
      this.#exit(error.definition.exitCode);
    }, this.#deadlineMs);
    this.#deadline.unref();
  }

  onStop(name: string, stop: () => Promise<void>): void {
    this.#stops.push({ name, stop });
  }

  /**
   * Runs every registered stop function, newest first. One failing does not skip the others.
   * Resolves with the problems seen; never throws.
   */
  async stopAll(): Promise<string[]> {
    // A stop without a signal (stdin ended, a start-up failed) starts its deadline here.
    this.#armDeadline();
    const problems: string[] = [];
    try {
      for (let entry = this.#stops.pop(); entry; entry = this.#stops.pop()) {
        this.#stoppingNow = entry.name;
        const started = performance.now();
        try {
          await entry.stop();
          this.#logger.debug({ resource: entry.name, ms: Math.round(performance.now() - started) }, 'stopped');
        } catch (error) {
          problems.push(`${entry.name}: ${error instanceof Error ? error.message : String(error)}`);
          this.#logger.error({ resource: entry.name, error: String(error) }, 'failed to stop cleanly');
        }
      }
    } finally {
      if (this.#deadline !== null) clearTimeout(this.#deadline);
      this.#deadline = null;
      this.#stoppingNow = null;
    }
    return problems;
  }
}
