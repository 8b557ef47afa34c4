/** Terminal columns the bar takes. */
const BAR_WIDTH = 24;

/**
 * One line of progress that redraws itself on a terminal ("\r" and erase-line) or, handed a
 * line writer, prints a line per change. Progress, a status and a closing line share it: the
 * last thing said stays.
 */
export class ProgressLine {
  readonly #write: (text: string) => void;
  readonly #redraws: boolean;
  #shown = false;
  #last = '';

  /** `draw` writes without a newline (a terminal); a writer of whole lines is given `lines: true`. */
  constructor(draw: (text: string) => void, options: { readonly lines?: boolean } = {}) {
    this.#write = draw;
    this.#redraws = options.lines !== true;
  }

  /** A bar (or a count) on a terminal; nothing in lines mode, where a line per step is noise. */
  progress(done: number, total?: number, message?: string): void {
    if (!this.#redraws) return;
    if (total !== undefined && total > 0) {
      const share = Math.min(1, Math.max(0, done / total));
      const filled = Math.round(share * BAR_WIDTH);
      const bar = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${Math.round(share * 100)}%`;
      this.#show(`${bar}${message ? ` ${message}` : ''}`);
      return;
    }
    this.#show(`${done}${message ? ` ${message}` : ''}`);
  }

  status(text: string): void {
    this.#show(text);
  }

  /** Said now, and kept on screen until something else is. */
  say(text: string): void {
    this.#show(text);
  }

  /** The closing line: shown and ended with a newline. */
  done(text: string): void {
    this.#show(text);
    if (this.#redraws) this.#write('\n');
    this.#shown = false;
  }

  /** Takes the line away (before the result is printed). */
  clear(): void {
    if (this.#redraws && this.#shown) this.#write('\r\u001b[2K');
    this.#shown = false;
  }

  #show(text: string): void {
    if (text === this.#last && this.#shown) return;
    this.#last = text;
    if (this.#redraws) {
      this.#write(`\r\u001b[2K${text}`);
      this.#shown = true;
    } else {
      this.#write(`${text}\n`);
    }
  }
}
