import { TaskgateError } from '@taskgate/errors';
import type { Logger } from './logger.ts';

type Signal = 'SIGTERM' | 'SIGINT';

/**
 * Start-up and shutdown of one process. Resources register a stop function as they start; on the
 * first SIGTERM or SIGINT they are stopped in reverse order (the API stops taking requests before
 * the workers release their tasks, and the database closes last). A second signal exits at once,
 * and a shutdown that outlives its deadline is cut short, so a stuck handler never keeps a
 * container from stopping.
 */
export class Lifecycle {
  readonly #logger: Logger;
  readonly #deadlineMs: number;
  readonly #stops: Array<{ name: string; stop: () => Promise<void> }> = [];
  readonly #exit: (code: number) => never;
  #signal: Signal | null = null;
  #resolveStopRequested!: (signal: Signal) => void;
  /** Resolves with the first signal received. */
  readonly stopRequested: Promise<Signal>;

  constructor(logger: Logger, deadlineMs: number, exit: (code: number) => never = process.exit) {
    this.#logger = logger;
    this.#deadlineMs = deadlineMs;
    this.#exit = exit;
    this.stopRequested = new Promise((resolve) => {
      this.#resolveStopRequested = resolve;
    });
  }

  get stopping(): boolean {
    return this.#signal !== null;
  }

  installSignalHandlers(): void {
    const onSignal = (signal: Signal) => {
      if (this.#signal !== null) {
        this.#logger.warn({ signal }, 'second signal during shutdown: exiting now');
        this.#exit(signal === 'SIGINT' ? 130 : 143);
      }
      this.#signal = signal;
      this.#logger.info({ signal }, 'shutting down');
      this.#resolveStopRequested(signal);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }

  onStop(name: string, stop: () => Promise<void>): void {
    this.#stops.push({ name, stop });
  }

  /**
   * Runs every registered stop function, newest first. One failing does not skip the others.
   * Resolves with the problems seen; never throws.
   */
  async stopAll(): Promise<string[]> {
    const deadline = setTimeout(() => {
      const error = new TaskgateError('TG_SHUTDOWN_TIMEOUT', `shutdown took longer than ${this.#deadlineMs} ms`);
      this.#logger.error({ code: error.code, pending: this.#stops.map((entry) => entry.name) }, error.message);
      this.#exit(error.definition.exitCode);
    }, this.#deadlineMs);
    deadline.unref();
    const problems: string[] = [];
    try {
      for (let entry = this.#stops.pop(); entry; entry = this.#stops.pop()) {
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
      clearTimeout(deadline);
    }
    return problems;
  }
}
