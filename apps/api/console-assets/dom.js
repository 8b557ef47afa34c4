// @ts-check
// Element helpers for the console's pages. Text is always set as text (textContent), never as
// markup: a value a tool returned cannot become part of the page.
import { ApiError } from './api.js';

/**
 * @typedef {string | number | Node | null | undefined | false} Child
 * @typedef {Record<string, string | number | boolean | null | undefined | EventListener>} Attributes
 */

/**
 * An element with attributes (`on…` ones are listeners) and children (strings become text).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attributes} [attributes]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/**
 * @param {Element | DocumentFragment} parent
 * @param {(Child | Child[])[]} children
 */
export function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
  }
}

/** @param {Element} element @param {...(Child | Child[])} children */
export function replaceChildren(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

const RELATIVE = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
const ABSOLUTE = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * "3 minutes ago", "in 20 seconds".
 * @param {number} ms how long before now (negative: after)
 */
export function relative(ms) {
  const seconds = Math.round(-ms / 1000);
  const steps = /** @type {const} */ ([
    [60, 'second'],
    [60, 'minute'],
    [24, 'hour'],
    [7, 'day'],
    [Number.POSITIVE_INFINITY, 'week'],
  ]);
  let value = seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return RELATIVE.format(value, unit);
    value = Math.round(value / size);
  }
  return RELATIVE.format(value, 'week');
}

/**
 * A time shown relative to now, the absolute one on hover (title) and to assistive technology
 * (datetime); kept current by refreshTimes.
 * @param {string | null} iso
 */
export function timeAgo(iso) {
  if (iso === null) return h('span', { class: 'muted' }, '—');
  const at = new Date(iso);
  return h(
    'time',
    { datetime: iso, title: ABSOLUTE.format(at), 'data-relative': '' },
    relative(Date.now() - at.getTime()),
  );
}

/** Brings every relative time on the page up to date (the app calls it every few seconds). */
export function refreshTimes() {
  for (const element of document.querySelectorAll('time[data-relative]')) {
    const iso = element.getAttribute('datetime');
    if (iso !== null) element.textContent = relative(Date.now() - new Date(iso).getTime());
  }
}

/** @param {string} iso */
export function absolute(iso) {
  return ABSOLUTE.format(new Date(iso));
}

/**
 * An id shortened to its first 8 characters, the whole one on hover, with a button that copies it.
 * @param {string} id
 * @param {{ href?: string, label?: string }} [options]
 */
export function shortId(id, options = {}) {
  const label = options.label ?? 'id';
  const text = h('code', { title: id }, shorten(id));
  return h(
    'span',
    { class: 'id' },
    options.href ? h('a', { href: options.href, 'data-link': '', 'aria-label': `${label} ${id}` }, text) : text,
    copyButton(id, `Copy ${label} ${id}`),
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A UUID or a 64-digit fingerprint by its first 8 characters; a name-like id (worker-1a2b3c4d)
 * whole up to 24 characters, its start beyond.
 * @param {string} id
 */
export function shorten(id) {
  if (UUID.test(id) || /^[0-9a-f]{32,}$/i.test(id)) return id.slice(0, 8);
  return id.length <= 24 ? id : `${id.slice(0, 20)}…`;
}

/**
 * @param {string} value
 * @param {string} label the button's accessible name
 */
export function copyButton(value, label) {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': label, title: 'Copy' }, copyIcon());
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value);
      toast('Copied');
    } catch {
      toast('The browser did not allow copying');
    }
  });
  return button;
}

/** Two overlapping sheets, drawn (no icon font: nothing is fetched from elsewhere). */
function copyIcon() {
  return svg(
    'svg',
    { viewBox: '0 0 16 16', width: 13, height: 13, 'aria-hidden': 'true' },
    ...[
      [5, 1],
      [1, 5],
    ].map(([x, y]) =>
      svg('rect', { x, y, width: 10, height: 10, rx: 2, fill: 'none', stroke: 'currentColor', 'stroke-width': 1.5 }),
    ),
  );
}

/**
 * An SVG element (the charts, the icons): attributes as given, children appended; strings become
 * text, as in h().
 * @param {string} tag
 * @param {Record<string, string | number | null | undefined>} [attributes]
 * @param {...(Child | Child[])} children
 * @returns {SVGElement}
 */
export function svg(tag, attributes = {}, ...children) {
  const element = /** @type {SVGElement} */ (document.createElementNS('http://www.w3.org/2000/svg', tag));
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== null && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

/** @param {string} message */
export function toast(message) {
  const region = document.getElementById('toast');
  if (!region) return;
  region.textContent = message;
  region.classList.add('shown');
  clearTimeout(Number(region.dataset.timer));
  region.dataset.timer = String(setTimeout(() => region.classList.remove('shown'), 2500));
}

/** JSON longer than this is folded: the page stays readable with a large result. */
const FOLD_CHARACTERS = 2_000;

/**
 * A JSON value shown readably (indented), folded behind a disclosure when large.
 * @param {unknown} value
 * @param {string} label what it is, for the disclosure ("arguments")
 */
export function jsonView(value, label) {
  const text = JSON.stringify(value, null, 2) ?? 'undefined';
  const pre = h('pre', { class: 'json', tabindex: 0, 'aria-label': label }, text);
  if (text.length <= FOLD_CHARACTERS) return pre;
  const size = new Blob([text]).size;
  return h(
    'details',
    { class: 'fold' },
    h('summary', {}, `Show ${label} (${size >= 10_240 ? `${Math.round(size / 1024)} KiB` : `${size} bytes`})`),
    pre,
  );
}

/**
 * The status of a task as a badge (text, not colour alone).
 * @param {string} status
 */
export function statusBadge(status) {
  return h('span', { class: `badge status-${status}` }, status.replace('_', ' '));
}

/**
 * A progress bar with its figures as text.
 * @param {{ value: number, total: number | null, message: string | null } | null} progress
 */
export function progressBar(progress) {
  if (progress === null) return h('span', { class: 'muted' }, '—');
  const wrapper = h('span', { class: 'progress' });
  if (progress.total !== null && progress.total > 0) {
    const percent = Math.max(0, Math.min(100, (progress.value / progress.total) * 100));
    wrapper.append(
      h('progress', { max: progress.total, value: progress.value, 'aria-label': `${Math.floor(percent)}% done` }),
      h('span', { class: 'figure' }, `${Math.floor(percent)}%`),
    );
  } else {
    wrapper.append(h('span', { class: 'figure' }, String(progress.value)));
  }
  if (progress.message) wrapper.append(h('span', { class: 'message' }, progress.message));
  return wrapper;
}

/**
 * What went wrong, as the API said it.
 * @param {unknown} error
 */
export function problemBox(error) {
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError ? error.code : null;
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('strong', {}, 'Something went wrong. '),
    message,
    code ? h('span', { class: 'muted' }, ` (${code})`) : null,
  );
}
