import type { CommitOutcome, RunCancelState, RunOutcome, RunProgress, RunStore } from './run-store.ts';

/**
 * The store of an inline run: memory. An inline tool is safe and has no task row, so there is
 * nothing to read a cancel flag from (the request's own signal cancels it), nothing to commit
 * effects in and no task to park; steps run once within the call. The outcome the run decides is
 * kept here for the caller to answer with.
 */
export class InlineStore implements RunStore {
  readonly #tool: string;
  readonly #onProgress: ((progress: RunProgress) => void) | undefined;
  readonly #steps = new Map<string, unknown>();
  #outcome: RunOutcome | null = null;

  constructor(tool: string, onProgress?: (progress: RunProgress) => void) {
    this.#tool = tool;
    this.#onProgress = onProgress;
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

  async recordProgress(progress: RunProgress): Promise<void> {
    if (this.#outcome === null) this.#onProgress?.(progress);
  }

  async readSteps(): Promise<Map<string, unknown>> {
    return this.#steps;
  }

  async recordStep(name: string, result: unknown): Promise<boolean> {
    this.#steps.set(name, result);
    return this.#outcome === null;
  }

  async park(): Promise<boolean> {
    throw new Error(`${this.#tool} runs inline and has no task to wait for input in`);
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
