/**
 * Everything the harness must undo whatever happens — children killed, its Postgres stopped, temp
 * dirs removed — as synchronous steps, so the same list runs at the end of a run, on Ctrl-C or
 * SIGTERM, on an uncaught error, and from process 'exit' (where nothing asynchronous can run).
 */
export class Cleanup {
  readonly #steps: { name: string; run: () => void }[] = [];
  #done = false;

  /** Steps run newest first: children before the Postgres they use, the temp dir last. */
  add(name: string, run: () => void): void {
    this.#steps.push({ name, run });
  }

  runAll(): void {
    if (this.#done) return;
    this.#done = true;
    for (let step = this.#steps.pop(); step; step = this.#steps.pop()) {
      try {
        step.run();
      } catch (error) {
        process.stderr.write(`chaos: cleanup step ${step.name} failed: ${String(error)}\n`);
      }
    }
  }

  /** Runs the steps on every way out of this process. */
  installExitHandlers(): void {
    process.once('exit', () => this.runAll());
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
      ['SIGHUP', 129],
    ] as const) {
      process.once(signal, () => {
        process.stderr.write(`chaos: ${signal}: stopping every process and the Postgres server\n`);
        this.runAll();
        process.exit(code);
      });
    }
    process.once('uncaughtException', (error) => {
      process.stderr.write(`chaos: uncaught ${error.stack ?? String(error)}\n`);
      this.runAll();
      process.exit(70);
    });
  }
}
