// @ts-check
// /ui/outbox (admin scope): the events waiting for the relay and the ones it gave up on, per event
// type (GET /v1/outbox), the dead-lettered or pending events themselves (GET /v1/outbox/events),
// and Redeliver on a dead-lettered one (POST /v1/outbox/events/<id>/redeliver). Rows name no
// endpoint: the relay sends every event to all of its sinks, so the figures are per event type.
// The summary is read again every five seconds; the list only on demand, so a row someone is
// about to act on never moves under the keyboard.
import { ApiError, get, post } from './api.js';
import { h, jsonView, problemBox, replaceChildren, shortId, timeAgo } from './dom.js';

const REFRESH_MS = 5_000;
const STATES = /** @type {const} */ (['dead', 'pending']);
const TITLES = { dead: 'Dead-lettered events, newest first', pending: 'Pending events, oldest first' };
const TAB_LABELS = { dead: 'Dead-lettered', pending: 'Pending' };

/**
 * @typedef {{ eventType: string, pending: number, dead: number, oldestPendingAt: string | null, oldestPendingAgeSeconds: number | null, newestDeadAt: string | null }} Group
 * @typedef {{ id: string, state: 'pending' | 'dead', eventType: string, aggregateType: string, aggregateId: string, attempts: number, lastError: string | null, createdAt: string, availableAt: string, leasedBy: string | null, leasedUntil: string | null, deadAt: string | null, payload: unknown }} OutboxEvent
 * @typedef {{ events: OutboxEvent[], next: string | null }} EventPage
 */

/**
 * The page's own URL with some query parameters changed (null drops one).
 * @param {Record<string, string | null>} changes
 * @param {URLSearchParams} current
 */
function hrefWith(current, changes) {
  const query = new URLSearchParams(current);
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) query.delete(name);
    else query.set(name, value);
  }
  const text = query.toString();
  return text === '' ? '/ui/outbox' : `/ui/outbox?${text}`;
}

/** @type {import('./app.js').PageModule['render']} */
export function render(main, { url }) {
  document.title = 'Outbox · Taskgate';
  const wanted = url.searchParams.get('state');
  const state = STATES.find((value) => value === wanted) ?? 'dead';
  const eventType = url.searchParams.get('eventType') || null;
  const after = url.searchParams.get('after') || null;
  const params = url.searchParams;

  // Present from the start (empty), so that what is put in it later is announced.
  const message = h('p', { class: 'outbox-message', role: 'status' });
  const summaryFailure = h('div');
  const summaryBody = h('div', {}, h('p', { class: 'loading' }, 'Loading…'));
  const listFailure = h('div');
  const listBody = h('div', {}, h('p', { class: 'loading' }, 'Loading…'));
  const refresh = h('button', { type: 'button', class: 'quiet' }, 'Refresh list');

  /** @param {string} text @param {boolean} [failed] */
  const say = (text, failed = false) => {
    message.className = `outbox-message ${failed ? 'problem' : 'notice'}`;
    message.textContent = text;
  };

  const tabs = h(
    'nav',
    { class: 'tabs', 'aria-label': 'Which events' },
    ...STATES.map((value) =>
      h(
        'a',
        {
          href: hrefWith(params, { state: value, after: null }),
          'data-link': '',
          'aria-current': value === state ? 'page' : null,
        },
        TAB_LABELS[value],
      ),
    ),
  );
  const filter = eventType
    ? h(
        'p',
        { class: 'outbox-filter' },
        'Only ',
        h('code', {}, eventType),
        ' · ',
        h('a', { href: hrefWith(params, { eventType: null, after: null }), 'data-link': '' }, 'all event types'),
      )
    : null;

  replaceChildren(
    main,
    h('h1', {}, 'Outbox'),
    h(
      'p',
      { class: 'muted outbox-intro' },
      'Events waiting for the relay, and those it gave up on after its last attempt. The relay sends every event to ',
      'every sink it is configured with (',
      h('code', {}, 'TASKGATE_RELAY_SINKS'),
      '), so the figures are per event type; the last error names the sink that refused it.',
    ),
    message,
    h(
      'section',
      { 'aria-labelledby': 'outbox-summary-title' },
      h('h2', { id: 'outbox-summary-title' }, 'By event type'),
      summaryFailure,
      summaryBody,
    ),
    h(
      'section',
      { 'aria-labelledby': 'outbox-events-title' },
      h('div', { class: 'heading' }, h('h2', { id: 'outbox-events-title' }, TITLES[state]), refresh),
      tabs,
      filter,
      listFailure,
      listBody,
    ),
  );

  let paintedSummary = '';
  const loadSummary = async () => {
    try {
      const { groups } = /** @type {{ groups: Group[] }} */ (await get('/v1/outbox'));
      replaceChildren(summaryFailure);
      // Painted again only when a figure changed (the age always does; its time stays current
      // by itself), so a focused link in the table keeps its focus through the refreshes.
      const key = JSON.stringify(groups.map(({ oldestPendingAgeSeconds: _age, ...rest }) => rest));
      if (key === paintedSummary) return;
      paintedSummary = key;
      replaceChildren(summaryBody, summaryTable(groups, params));
    } catch (error) {
      replaceChildren(summaryFailure, problemBox(error));
    }
  };

  const loadList = async () => {
    const query = new URLSearchParams({ state, limit: '50' });
    if (eventType) query.set('eventType', eventType);
    if (after) query.set('after', after);
    try {
      const page = /** @type {EventPage} */ (await get(`/v1/outbox/events?${query}`));
      replaceChildren(listFailure);
      replaceChildren(listBody, eventTable(page, state), pager(page));
    } catch (error) {
      replaceChildren(listFailure, problemBox(error));
    }
  };

  /** @param {EventPage} page */
  const pager = (page) =>
    page.next || after
      ? h(
          'nav',
          { class: 'pager', 'aria-label': 'Pages' },
          after ? h('a', { href: hrefWith(params, { after: null }), 'data-link': '' }, '← First page') : null,
          page.next
            ? h('a', { href: hrefWith(params, { after: page.next }), 'data-link': '', rel: 'next' }, 'Next page →')
            : null,
        )
      : null;

  /** @param {EventPage} page @param {'dead' | 'pending'} shown */
  const eventTable = (page, shown) => {
    if (page.events.length === 0) {
      return h(
        'p',
        { class: 'empty' },
        shown === 'dead' ? 'No event is dead-lettered.' : 'Nothing is waiting for the relay.',
      );
    }
    return h(
      'table',
      { class: 'outbox-events' },
      h('caption', { class: 'visually-hidden' }, TITLES[shown]),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...[
            'Event',
            'Type',
            'Aggregate',
            'State',
            'Attempts',
            'Last error',
            shown === 'dead' ? 'Died' : 'Due',
            'Payload',
            'Action',
          ].map((name) => h('th', { scope: 'col' }, name)),
        ),
      ),
      h('tbody', {}, ...page.events.map((event) => eventRow(event, false))),
    );
  };

  /**
   * @param {OutboxEvent} event
   * @param {boolean} redelivered whether this page just redelivered it
   * @returns {HTMLTableRowElement}
   */
  const eventRow = (event, redelivered) => {
    const row = h('tr', { 'data-id': event.id, 'data-state': event.state });
    const described = `outbox-event-${event.id}`;
    let action;
    if (event.state === 'dead') {
      const button = h('button', { type: 'button', 'aria-describedby': described }, 'Redeliver');
      button.addEventListener('click', () => void redeliver(event, row, button));
      action = button;
    } else {
      action = h('span', { class: 'muted' }, redelivered ? 'redelivered' : '—');
    }
    replaceChildren(
      row,
      h('td', {}, shortId(event.id, { label: 'event' })),
      h('td', {}, h('code', {}, event.eventType)),
      h('td', {}, `${event.aggregateType} `, h('code', {}, event.aggregateId)),
      h(
        'td',
        { tabindex: redelivered ? -1 : null, 'data-focus': redelivered ? '' : null },
        h('span', { class: `badge outbox-${event.state}` }, event.state),
      ),
      h('td', {}, String(event.attempts)),
      h('td', { class: 'outbox-error' }, event.lastError ?? h('span', { class: 'muted' }, '—')),
      h('td', {}, whenCell(event)),
      h('td', { class: 'outbox-payload' }, payloadView(event)),
      h(
        'td',
        {},
        action,
        h('span', { id: described, class: 'visually-hidden' }, `event ${event.id}, ${event.eventType}`),
      ),
    );
    return row;
  };

  /**
   * @param {OutboxEvent} event
   * @param {HTMLTableRowElement} row
   * @param {HTMLButtonElement} button
   */
  const redeliver = async (event, row, button) => {
    button.disabled = true;
    try {
      const updated = /** @type {OutboxEvent} */ (
        await post(`/v1/outbox/events/${encodeURIComponent(event.id)}/redeliver`)
      );
      const fresh = eventRow(updated, true);
      row.replaceWith(fresh);
      // The button is gone with the old row: keep the keyboard where the change is.
      /** @type {HTMLElement | null} */ (fresh.querySelector('[data-focus]'))?.focus();
      say(`Event ${event.id} is pending again, due now: the relay delivers it next.`);
      void loadSummary();
    } catch (error) {
      button.disabled = false;
      if (error instanceof ApiError && error.status === 409) {
        say(`Event ${event.id} was not redelivered: ${error.message}`, true);
      } else if (error instanceof ApiError && error.status === 404) {
        say(`Event ${event.id} was not redelivered: there is no such event for this tenant any more.`, true);
      } else {
        say(`Event ${event.id} was not redelivered: ${error instanceof Error ? error.message : String(error)}`, true);
      }
    }
  };

  refresh.addEventListener('click', () => {
    void loadList();
    void loadSummary();
  });
  void loadSummary();
  void loadList();
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') void loadSummary();
  }, REFRESH_MS);
  return () => clearInterval(timer);
}

/**
 * The payload folded: a large one jsonView folds itself (its summary gives the size), a small one
 * behind a plain "Payload", so that rows stay one line high until asked.
 * @param {OutboxEvent} event
 */
function payloadView(event) {
  const view = jsonView(event.payload, `payload of event ${event.id}`);
  return view instanceof HTMLDetailsElement ? view : h('details', {}, h('summary', {}, 'Payload'), view);
}

/** @param {OutboxEvent} event */
function whenCell(event) {
  if (event.deadAt !== null) return timeAgo(event.deadAt);
  if (event.leasedUntil !== null && Date.parse(event.leasedUntil) > Date.now()) {
    return ['in flight', event.leasedBy ? h('span', { class: 'muted' }, ` (${event.leasedBy})`) : null];
  }
  if (Date.parse(event.availableAt) > Date.now()) return ['retry ', timeAgo(event.availableAt)];
  return ['due since ', timeAgo(event.availableAt)];
}

/**
 * @param {Group[]} groups
 * @param {URLSearchParams} params
 */
function summaryTable(groups, params) {
  if (groups.length === 0) {
    return h('p', { class: 'empty' }, 'Nothing is pending and nothing is dead-lettered.');
  }
  /** @param {number} count @param {'pending' | 'dead'} state @param {string} eventType */
  const countLink = (count, state, eventType) =>
    count === 0
      ? h('span', { class: 'muted' }, '0')
      : h(
          'a',
          {
            href: hrefWith(params, { state, eventType, after: null }),
            'data-link': '',
            'aria-label': `${count} ${state === 'dead' ? 'dead-lettered' : 'pending'} ${eventType} events`,
          },
          String(count),
        );
  return h(
    'table',
    { class: 'outbox-summary' },
    h('caption', { class: 'visually-hidden' }, 'Pending and dead-lettered events per event type'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Event type', 'Pending', 'Dead-lettered', 'Oldest pending', 'Last dead-lettered'].map((name) =>
          h('th', { scope: 'col' }, name),
        ),
      ),
    ),
    h(
      'tbody',
      {},
      ...groups.map((group) =>
        h(
          'tr',
          { 'data-event-type': group.eventType },
          h('th', { scope: 'row' }, h('code', {}, group.eventType)),
          h('td', { class: 'count' }, countLink(group.pending, 'pending', group.eventType)),
          h('td', { class: 'count' }, countLink(group.dead, 'dead', group.eventType)),
          h('td', {}, timeAgo(group.oldestPendingAt)),
          h('td', {}, timeAgo(group.newestDeadAt)),
        ),
      ),
    ),
  );
}
