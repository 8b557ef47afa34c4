/**
 * What happened when, in run time and wall-clock time: every fault, kill, restart and crash, so a
 * task id found broken at the end can be matched against the faults around its creation.
 */
export class Timeline {
  readonly #origin = performance.now();
  readonly entries: { readonly atMs: number; readonly wall: string; readonly text: string }[] = [];
  readonly #echo: boolean;

  constructor(echo: boolean) {
    this.#echo = echo;
  }

  now(): number {
    return Math.round(performance.now() - this.#origin);
  }

  record(text: string): void {
    const entry = { atMs: this.now(), wall: new Date().toISOString(), text };
    this.entries.push(entry);
    if (this.#echo) process.stdout.write(`${formatOffset(entry.atMs)} ${text}\n`);
  }
}

export function formatOffset(ms: number): string {
  return `[${(ms / 1_000).toFixed(1).padStart(6)} s]`;
}
