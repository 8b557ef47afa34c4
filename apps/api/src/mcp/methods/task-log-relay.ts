import type { TaskLogMessage } from '@taskgate/db';
import { isLogLevel, type LogLevel, logLevelPasses } from '@taskgate/protocol';

/** Most messages one read fetches. */
const READ_LIMIT = 100;

export interface TaskLogRelayOptions {
  /** The task's messages after `afterSeq`, oldest first (TaskService.logMessages). */
  readonly read: (afterSeq: number, limit: number) => Promise<TaskLogMessage[]>;
  /** The request's notifications (its response stream, or the pipe). */
  readonly send: (notification: Record<string, unknown>) => void;
  /**
   * The request's level: the worker keeps only what passes it, and this checks again. Absent:
   * the request asked for none, and log messages are not sent.
   */
  readonly level?: LogLevel;
  /**
   * Sends an elicitation's completion (url-elicitations.ts elicitationCompleter: only where the
   * revision has the notification and the client declared elicitation.url). Absent: not sent.
   */
  readonly completeElicitation?: (elicitationId: string) => void;
  readonly log?: (fields: Record<string, unknown>, message: string) => void;
}

/**
 * Carries a durable task's ctx.log() messages, and its ctx.elicitationComplete() notices, to the
 * request that waits for it. Each reading of
 * the task says how many messages it has (logCount); the relay fetches the ones it has not sent,
 * one read at a time, so messages go out once each and in the handler's order. drain() sends the
 * rest before the call's answer: the worker writes its messages before the task's final status,
 * so the terminal reading's count covers all of them.
 */
export class TaskLogRelay {
  readonly #options: TaskLogRelayOptions;
  #sent = 0;
  #wanted = 0;
  #reading: Promise<void> | null = null;

  constructor(options: TaskLogRelayOptions) {
    this.#options = options;
  }

  /** A reading of the task with `count` messages: fetches what is new, unless a fetch is under way. */
  seen(count: number): void {
    if (count > this.#wanted) this.#wanted = count;
    if (this.#sent < this.#wanted) this.#reading ??= this.#fetch();
  }

  /** Resolves once every message up to `count` has been sent (or could not be read). */
  async drain(count: number): Promise<void> {
    this.seen(count);
    while (this.#reading) await this.#reading;
  }

  async #fetch(): Promise<void> {
    try {
      while (this.#sent < this.#wanted) {
        const messages = await this.#options.read(this.#sent, READ_LIMIT);
        if (messages.length === 0) return;
        for (const message of messages) {
          this.#sent = Math.max(this.#sent, message.seq);
          if (message.kind === 'elicitation_complete') {
            this.#options.completeElicitation?.(message.elicitationId);
            continue;
          }
          const { level } = this.#options;
          if (!level || !isLogLevel(message.level) || !logLevelPasses(message.level, level)) continue;
          this.#options.send({
            jsonrpc: '2.0',
            method: 'notifications/message',
            params: {
              level: message.level,
              ...(message.logger === null ? {} : { logger: message.logger }),
              data: message.data,
            },
          });
        }
      }
    } catch (error) {
      // Best effort, like progress: a read that fails (an outage) costs messages, never the answer.
      this.#options.log?.({ error: (error as Error).message }, "a durable task's log messages could not be read");
    } finally {
      this.#reading = null;
    }
  }
}
