import type { InputRequest } from '@taskgate/sdk';
import type { CommitOutcome, RunCancelState, RunOutcome, RunProgress, RunStore, StepRecord } from './run-store.ts';

/**
 * The store of an inline run: memory. An inline tool is safe and has no task row, so there is
 * nothing to read a cancel flag from (the request's own signal cancels it) and nothing to commit
 * effects in; steps run once within the call. With `canAsk` (a request that can be answered
 * input_required), ctx.input() of missing keys ends the run with those requests instead of parking
 * a task; with `ask` (a connection the client can be asked on), they are asked there and the run
 * goes on with the answers. The outcome the run decides is kept here for the caller to answer with.
 */
export class InlineStore implements RunStore {
  readonly #tool: string;
  readonly #onProgress: ((progress: RunProgress) => void) | undefined;
  readonly #steps = new Map<string, StepRecord>();
  readonly #canAsk: boolean;
  readonly ask?: RunStore['ask'];
  #outcome: RunOutcome | null = null;
  #asked: Readonly<Record<string, InputRequest>> | null = null;

  constructor(
    tool: string,
    onProgress?: (progress: RunProgress) => void,
    options: { canAsk?: boolean; ask?: RunStore['ask'] } = {},
  ) {
    this.#tool = tool;
    this.#onProgress = onProgress;
    this.#canAsk = options.canAsk ?? false;
    if (options.ask) this.ask = options.ask;
  }

  /** The input requests the run ended with, when it asked for input instead of finishing. */
  get asked(): Readonly<Record<string, InputRequest>> | null {
    return this.#asked;
  }

  /** How the run ended, once it has. */
  get outcome(): RunOutcome | null {
    return this.#outcome;
  }

  async peekCancelState(): Promise<RunCancelState | null> {
    return null;
  }

  async readCancelState(): Promise<RunCancelState | null> {
    return null;
  }

  async recordProgress(progress: RunProgress): Promise<boolean> {
    if (this.#outcome === null) this.#onProgress?.(progress);
    return true;
  }

  async readSteps(): Promise<Map<string, StepRecord>> {
    return this.#steps;
  }

  async startIrreversibleStep(name: string): Promise<boolean> {
    // Nothing durable would remember that it started, and no item could be opened if the call
    // were lost: an effect that cannot be undone belongs in a task.
    throw new Error(
      `${this.#tool} runs inline, with no task to record irreversible step ${name} in; a tool with irreversible steps must run as a task (inline: false)`,
    );
  }

  async recordStep(name: string, result: unknown): Promise<boolean> {
    this.#steps.set(name, { state: 'done', result, irreversible: false });
    return this.#outcome === null;
  }

  async park(requests: Readonly<Record<string, InputRequest>>): Promise<boolean> {
    if (!this.#canAsk) {
      throw new Error(
        `${this.#tool} runs inline, and this request can neither be answered input_required (a multi round-trip request can) nor ask its client on its connection, nor has it a task to wait for input in`,
      );
    }
    // Asking ends the run like an outcome does: the first of the two wins.
    if (this.#outcome !== null || this.#asked !== null) return false;
    this.#asked = requests;
    return true;
  }

  async complete(result: unknown, reason: string): Promise<boolean> {
    return this.finish({ status: 'completed', result, reason });
  }

  async commit(): Promise<CommitOutcome> {
    throw new Error(`${this.#tool} runs inline and has no transaction to commit effects in`);
  }

  async finish(outcome: RunOutcome): Promise<boolean> {
    // The first outcome wins, as the conditional UPDATE makes it win on a task row.
    if (this.#outcome !== null) return false;
    this.#outcome = outcome;
    return true;
  }

  async release(): Promise<boolean> {
    return false;
  }

  async recordCancelObserved(): Promise<void> {}
}
