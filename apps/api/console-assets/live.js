// @ts-check
// The one live stream of a page: an EventSource on a /v1 events route. The browser reconnects an
// EventSource by itself after a dropped connection; when the server refuses the stream (a 4xx,
// a restart that answers 503) the EventSource closes, and this reopens it after a jittered,
// growing delay (as @taskgate/client does), so a hundred open pages do not all come back in the
// same instant. Every (re)open starts with the server's snapshot, which the page re-renders
// from: nothing missed while away stays missed.

import { apiPath } from './api.js';

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;

/**
 * @typedef {{ close(): void }} Live
 * @typedef {(event: string, data: any) => void} OnEvent
 */

/**
 * @param {string} url
 * @param {readonly string[]} events the event names to hear
 * @param {OnEvent} onEvent
 * @param {{ onState?: (state: 'live' | 'reconnecting' | 'ended') => void, onRefused?: () => Promise<boolean> }} [options]
 *   onRefused: asked after a refusal; false stops reconnecting (the session ended, say)
 * @returns {Live}
 */
export function openLive(url, events, onEvent, options = {}) {
  let attempt = 0;
  let closed = false;
  /** @type {EventSource | null} */
  let source = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;

  const open = () => {
    if (closed) return;
    const opened = new EventSource(apiPath(url));
    source = opened;
    opened.addEventListener('open', () => {
      attempt = 0;
      options.onState?.('live');
    });
    for (const name of events) {
      opened.addEventListener(name, (event) => {
        const message = /** @type {MessageEvent<string>} */ (event);
        onEvent(name, JSON.parse(message.data));
      });
    }
    opened.addEventListener('error', async () => {
      if (closed) return;
      // CONNECTING: the browser retries by itself. CLOSED: refused, or the stream ended.
      if (opened.readyState !== EventSource.CLOSED) {
        options.onState?.('reconnecting');
        return;
      }
      options.onState?.('reconnecting');
      if (options.onRefused && !(await options.onRefused())) {
        options.onState?.('ended');
        return;
      }
      const ceiling = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** attempt);
      attempt += 1;
      timer = setTimeout(open, ceiling / 2 + Math.random() * (ceiling / 2));
    });
  };
  open();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      source?.close();
    },
  };
}

/**
 * Applies updates once per animation frame, the latest per key: a burst of changes to a
 * thousand rows costs one layout, not a thousand.
 * @template T
 * @param {(batch: Map<string, T>) => void} apply
 * @param {(earlier: T, later: T) => T} [merge] what a key's two updates in one frame become (the later)
 */
export function frameBatcher(apply, merge = (_earlier, later) => later) {
  /** @type {Map<string, T>} */
  let pending = new Map();
  let scheduled = false;
  return {
    /** @param {string} key @param {T} value */
    push(key, value) {
      const earlier = pending.get(key);
      pending.set(key, earlier === undefined ? value : merge(earlier, value));
      if (scheduled) return;
      scheduled = true;
      requestAnimationFrame(() => {
        scheduled = false;
        const batch = pending;
        pending = new Map();
        apply(batch);
      });
    },
  };
}
