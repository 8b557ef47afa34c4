import { type ChildProcess, spawn } from 'node:child_process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The largest message a downstream may send (the SDK's own limit): past it, the connection ends. */
export const MAX_DOWNSTREAM_MESSAGE_BYTES = 10 * 1024 * 1024;

/** How long a stopped downstream's group has between SIGTERM and SIGKILL. */
const STOP_GRACE_MS = 2_000;

/**
 * MCP over a subprocess's stdin and stdout, as the SDK's StdioClientTransport does it, with what
 * a worker holding a downstream needs on top:
 * - the server leads a process group of its own, and closing signals the whole group (SIGTERM,
 *   then SIGKILL after 2 s): a wrapper's children and the server's helpers go with it;
 * - the connection ends when the server process exits, not when every holder of its pipes has
 *   closed them (a grandchild that inherited stdout would otherwise keep a dead server "open",
 *   and its calls waiting);
 * - why it ended is kept (`endReason`): an exit with its status, a message over the size limit.
 */
export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #command: string;
  readonly #args: readonly string[];
  readonly #env: Readonly<Record<string, string>>;
  readonly #cwd: string | undefined;
  readonly #onStderr: (text: string) => void;
  readonly #buffer = new ReadBuffer({ maxBufferSize: MAX_DOWNSTREAM_MESSAGE_BYTES });
  #child: ChildProcess | null = null;
  #ended = false;
  #endReason: string | null = null;

  constructor(options: {
    readonly command: string;
    readonly args: readonly string[];
    readonly env: Readonly<Record<string, string>>;
    readonly cwd?: string | undefined;
    readonly onStderr: (text: string) => void;
  }) {
    this.#command = options.command;
    this.#args = options.args;
    this.#env = options.env;
    this.#cwd = options.cwd;
    this.#onStderr = options.onStderr;
  }

  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /** Why the connection ended, once it has. */
  get endReason(): string | null {
    return this.#endReason;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.#command, [...this.#args], {
        env: { ...this.#env },
        ...(this.#cwd ? { cwd: this.#cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
        // A process group (and session) of its own: closing reaches everything it started.
        detached: true,
        windowsHide: true,
      });
      this.#child = child;
      child.once('error', (error) => {
        reject(error);
        this.#end(`could not be run: ${error.message}`);
      });
      child.once('spawn', () => resolve());
      child.once('exit', (code, signal) => {
        this.#end(signal ? `exited on ${signal}` : `exited with status ${code}`);
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stderr?.on('data', (chunk: Buffer) => this.#onStderr(chunk.toString('utf8')));
      child.stdout?.on('data', (chunk: Buffer) => {
        try {
          this.#buffer.append(chunk);
        } catch {
          this.#endReason ??= `sent a message over ${MAX_DOWNSTREAM_MESSAGE_BYTES} bytes, the most a gateway reads`;
          void this.close();
          return;
        }
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#buffer.readMessage();
          } catch (error) {
            this.onerror?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (this.#ended || !stdin) throw new Error('the downstream is not running');
    if (!stdin.write(serializeMessage(message))) {
      await new Promise<void>((resolve) => stdin.once('drain', resolve));
    }
  }

  /** Ends the server and everything in its group: SIGTERM, then SIGKILL after the grace. */
  async close(): Promise<void> {
    const child = this.#child;
    if (child === null) return;
    this.#endReason ??= 'was stopped by the gateway';
    child.stdin?.end();
    signalGroup(child, 'SIGTERM');
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          signalGroup(child, 'SIGKILL');
          resolve();
        }, STOP_GRACE_MS);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    // What the server left in its group (a wrapper's children) goes too.
    signalGroup(child, 'SIGKILL');
    this.#end(this.#endReason);
  }

  #end(reason: string): void {
    this.#endReason ??= reason;
    if (this.#ended) return;
    this.#ended = true;
    this.#buffer.clear();
    const child = this.#child;
    // The server is gone; whatever of its group still holds the pipes must not outlive it.
    if (child) signalGroup(child, 'SIGKILL');
    this.onclose?.();
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.pid <= 1) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // The group is gone already.
  }
}
