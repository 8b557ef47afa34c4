import { type ChildProcess, spawn } from 'node:child_process';
import { REPO_ROOT } from './cli.ts';

/** Colour and cursor sequences a terminal program writes; tests read the text under them. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');

/**
 * A command in a pseudo-terminal, as a person runs it: util-linux `script` gives it a pty for
 * stdin, stdout and stderr (both arrive here as one stream, as on a screen), and what is written
 * to `type()` arrives as typed keys — Ctrl-C ("\u0003") becomes SIGINT to the command's
 * foreground process group, from the terminal driver, as at a real terminal.
 */
export class PtyProcess {
  readonly child: ChildProcess;
  /** Everything shown so far, raw (with colour codes and "\r\n"). */
  raw = '';
  readonly closed: Promise<number | null>;
  readonly #waiters = new Set<() => void>();

  constructor(command: string, args: readonly string[], env: Record<string, string>) {
    // `exec`: script runs the line with $SHELL -c (sh when unset); the shell must not stay as the
    // command's parent, or it too gets the terminal's SIGINT and exits 130 whatever the command does.
    const line = `exec ${[command, ...args].map(shellQuote).join(' ')}`;
    // -q: no "Script started" banner; -f: flush at once; -e: exit with the command's status;
    // -c: the command; /dev/null: no typescript file.
    this.child = spawn('script', ['-qfec', line, '/dev/null'], {
      cwd: REPO_ROOT,
      env: { TERM: 'xterm-256color', COLUMNS: '100', LINES: '30', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const take = (chunk: Buffer) => {
      this.raw += chunk.toString();
      for (const waiter of this.#waiters) waiter();
    };
    this.child.stdout?.on('data', take);
    this.child.stderr?.on('data', take);
    this.closed = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  /** What is shown, as lines of text: colour codes removed, carriage returns as line ends. */
  get lines(): string[] {
    return this.raw
      .replace(ANSI, '')
      .split(/\r?\n|\r/)
      .filter((line) => line !== '');
  }

  /** Keys typed at the terminal. */
  type(keys: string): void {
    this.child.stdin?.write(keys);
  }

  /** The first shown line matching, waiting for it; fails if the command ends first. */
  waitForLine(pattern: RegExp): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.lines.find((line) => pattern.test(line));
        if (found !== undefined) {
          this.#waiters.delete(check);
          resolve(found);
        }
      };
      this.#waiters.add(check);
      check();
      void this.closed.then(() => {
        if (this.#waiters.delete(check)) {
          reject(new Error(`ended before a line matched ${pattern}; shown:\n${this.lines.join('\n')}`));
        }
      });
    });
  }

  /** Test clean-up: SIGKILL to script and everything in its session. */
  kill(): void {
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}

function shellQuote(word: string): string {
  return /^[\w./=:@+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
