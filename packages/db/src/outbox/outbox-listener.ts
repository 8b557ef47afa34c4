import type { BackoffOptions } from '@taskgate/reliability';
import { ChannelListener } from '../channel-listener.ts';

/** The channel migrations/0003's statement trigger notifies on every INSERT into outbox. */
export const OUTBOX_CHANNEL = 'taskgate_outbox';

type LogFn = (fields: Record<string, unknown>, message: string) => void;

export interface OutboxListenerOptions {
  readonly connectionString: string;
  readonly applicationName: string;
  readonly logger: { readonly info?: LogFn; readonly warn: LogFn };
  /** Called for every notification, and after each (re)connect: rows may have arrived unheard. */
  readonly onWake: () => void;
  readonly reconnectBackoff?: BackoffOptions;
}

/**
 * LISTEN on OUTBOX_CHANNEL. The notification is only a wake-up hint (its payload is empty); the
 * relay polls as well, so a notification lost while reconnecting delays delivery by one poll.
 */
export class OutboxListener {
  readonly #listener: ChannelListener;

  constructor(options: OutboxListenerOptions) {
    this.#listener = new ChannelListener({
      connectionString: options.connectionString,
      applicationName: options.applicationName,
      channel: OUTBOX_CHANNEL,
      name: 'outbox listener',
      logger: options.logger,
      onNotification: () => options.onWake(),
      onConnected: () => options.onWake(),
      ...(options.reconnectBackoff === undefined ? {} : { reconnectBackoff: options.reconnectBackoff }),
    });
  }

  /** Whether the LISTEN connection is up now. */
  get connected(): boolean {
    return this.#listener.connected;
  }

  start(): Promise<void> {
    return this.#listener.start();
  }

  stop(): Promise<void> {
    return this.#listener.stop();
  }
}
