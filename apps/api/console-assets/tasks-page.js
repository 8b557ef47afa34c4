// @ts-check
// /ui: the tasks, newest first, live. The filters live in the URL (a filtered list can be linked
// and reloaded); the page holds one stream, GET /v1/tasks/events, whose snapshot is the page
// and whose events change it in place, applied once per animation frame.
import { ApiError, get } from './api.js';
import { h, problemBox, progressBar, replaceChildren, shortId, statusBadge, timeAgo } from './dom.js';
import { frameBatcher, openLive } from './live.js';

const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
/** @type {readonly [string, string, number][]} */
const SINCE = [
  ['', 'Any time', 0],
  ['15m', 'Last 15 minutes', 15 * 60_000],
  ['1h', 'Last hour', 60 * 60_000],
  ['24h', 'Last 24 hours', 24 * 60 * 60_000],
  ['7d', 'Last 7 days', 7 * 24 * 60 * 60_000],
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PAGE_SIZES = ['50', '100', '250', '1000'];

/**
 * @typedef {{ id: string, tool: string, status: string, statusMessage: string | null, progress: { value: number, total: number | null, message: string | null } | null, cancelRequestedAt: string | null, createdAt: string, lastUpdatedAt: string, finishedAt: string | null }} Task
 */

/** The REST query of this page's URL: its filters, page size and cursor. */
function listQuery(/** @type {URL} */ url) {
  const query = new URLSearchParams();
  const status = url.searchParams.get('status');
  if (status && STATUSES.includes(status)) query.set('status', status);
  const tool = url.searchParams.get('tool');
  if (tool) query.set('tool', tool);
  const since = SINCE.find(([key]) => key !== '' && key === url.searchParams.get('since'));
  // Fixed when the page opens: the stream's filter does not move under the page.
  if (since) query.set('createdAfter', new Date(Date.now() - since[2]).toISOString());
  const search = (url.searchParams.get('q') ?? '').trim();
  if (search !== '') query.set(UUID.test(search) ? 'id' : 'idempotencyKey', search);
  const limit = url.searchParams.get('limit');
  query.set('limit', limit && PAGE_SIZES.includes(limit) ? limit : '100');
  const cursor = url.searchParams.get('cursor');
  if (cursor) query.set('cursor', cursor);
  return query;
}

/** @type {import('./app.js').PageModule['render']} */
export function render(main, { url, navigate }) {
  document.title = 'Tasks · Taskgate';
  const query = listQuery(url);
  const onFirstPage = !query.has('cursor');

  const filters = filterForm(url, navigate);
  const state = h('span', { class: 'live-state', role: 'status' }, 'Connecting…');
  const banner = h('p', { class: 'banner', hidden: true });
  const body = h('tbody');
  const table = h(
    'table',
    { class: 'tasks' },
    h('caption', { class: 'visually-hidden' }, 'Tasks, newest first'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['Task', 'Tool', 'Status', 'Progress', 'Created', 'Updated'].map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    body,
  );
  const empty = h(
    'p',
    { class: 'empty', hidden: true },
    'No tasks match. ',
    onFirstPage ? 'New ones appear here as they are created.' : '',
  );
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const failure = h('div');
  replaceChildren(
    main,
    h('div', { class: 'heading' }, h('h1', {}, 'Tasks'), state),
    filters,
    failure,
    banner,
    h('div', { class: 'table-wrap' }, table),
    empty,
    pager,
  );

  /** Each row, the task it shows, and a change not drawn yet because the row is off screen. */
  /** @type {Map<string, { row: HTMLTableRowElement, task: Task, pending: Task | null }>} */
  const rows = new Map();
  // Only rows on screen (or near it) are redrawn as their tasks change; one off screen is redrawn
  // when it comes into view. A thousand rows changing at once then cost the few dozen shown.
  /** @type {Set<string>} */
  const onScreen = new Set();
  const visibility = new IntersectionObserver(
    (entries) => {
      for (const entry of entries) {
        const id = String(/** @type {HTMLElement} */ (entry.target).dataset.id);
        if (!entry.isIntersecting) {
          onScreen.delete(id);
          continue;
        }
        onScreen.add(id);
        const shown = rows.get(id);
        if (shown?.pending) {
          fillRow(shown.row, shown.pending, shown.task);
          shown.task = shown.pending;
          shown.pending = null;
        }
      }
    },
    { rootMargin: '400px 0px' },
  );
  /** @param {string} id @param {HTMLTableRowElement} row @param {Task} task */
  const track = (id, row, task) => {
    rows.set(id, { row, task, pending: null });
    visibility.observe(row);
  };
  /** @param {string} id */
  const untrack = (id) => {
    const shown = rows.get(id);
    if (!shown) return;
    visibility.unobserve(shown.row);
    shown.row.remove();
    rows.delete(id);
    onScreen.delete(id);
  };
  let newSinceOpened = 0;
  let painted = false;
  const limit = Number(query.get('limit'));

  const renderPager = (/** @type {string | null} */ nextCursor) => {
    const base = new URL(url);
    base.searchParams.delete('cursor');
    const older = new URL(base);
    if (nextCursor) older.searchParams.set('cursor', nextCursor);
    replaceChildren(
      pager,
      onFirstPage ? null : h('a', { href: base.pathname + base.search, 'data-link': '' }, '← Newest'),
      nextCursor ? h('a', { href: older.pathname + older.search, 'data-link': '', rel: 'next' }, 'Older →') : null,
    );
  };

  const showEmpty = () => {
    empty.hidden = rows.size > 0;
    table.hidden = rows.size === 0;
  };

  const updates = frameBatcher(
    /** @param {Map<string, { kind: 'task' | 'created' | 'gone', task: Task }>} batch */
    (batch) => {
      for (const [id, change] of batch) {
        const shown = rows.get(id);
        if (change.kind === 'gone') {
          untrack(id);
        } else if (shown && onScreen.has(id)) {
          fillRow(shown.row, change.task, shown.task);
          shown.task = change.task;
          shown.pending = null;
        } else if (shown) {
          // Not even its data-status: an attribute written on a thousand rows restyles them all.
          shown.pending = change.task;
        } else if (change.kind === 'created' && onFirstPage) {
          const row = h('tr', { 'data-id': id });
          fillRow(row, change.task);
          insertByCreation(body, row, change.task, rows);
          track(id, row, change.task);
          // The page keeps its size: the oldest rows leave, as they do on the server's side.
          while (rows.size > limit) untrack(String(/** @type {HTMLElement} */ (body.lastElementChild).dataset.id));
        }
      }
      showEmpty();
    },
    // A task created and changed within one frame is still new to the page.
    (earlier, later) =>
      earlier.kind === 'created' && later.kind === 'task'
        ? { kind: /** @type {const} */ ('created'), task: later.task }
        : later,
  );

  const live = openLive(
    `/v1/tasks/events?${query}`,
    ['snapshot', 'tasks', 'created', 'gone', 'refetch'],
    (event, data) => {
      if (event === 'snapshot') {
        replaceChildren(failure);
        visibility.disconnect();
        rows.clear();
        onScreen.clear();
        body.replaceChildren();
        for (const task of /** @type {Task[]} */ (data.tasks)) {
          const row = h('tr', { 'data-id': task.id });
          fillRow(row, task);
          body.append(row);
          track(task.id, row, task);
        }
        renderPager(data.nextCursor);
        showEmpty();
        if (!painted) {
          painted = true;
          // What the benchmark measures: the first page painted (bench/console-list.ts).
          requestAnimationFrame(() => performance.mark('taskgate:tasks-painted'));
        }
      } else if (event === 'refetch') {
        // Changes were dropped while this page was not reading: the stream's next snapshot repairs it.
        live.close();
        navigate(url.pathname + url.search);
      } else if (event === 'created' && !onFirstPage) {
        newSinceOpened += 1;
        banner.hidden = false;
        const newest = new URL(url);
        newest.searchParams.delete('cursor');
        replaceChildren(
          banner,
          `${newSinceOpened} new ${newSinceOpened === 1 ? 'task' : 'tasks'} since this page was opened. `,
          h('a', { href: newest.pathname + newest.search, 'data-link': '' }, 'Show the newest'),
        );
      } else if (event === 'tasks') {
        for (const task of /** @type {Task[]} */ (data.tasks)) updates.push(task.id, { kind: 'task', task });
      } else {
        updates.push(data.id, { kind: /** @type {'created' | 'gone'} */ (event), task: data });
      }
    },
    {
      onState: (value) => {
        state.textContent = value === 'live' ? 'Live' : value === 'reconnecting' ? 'Reconnecting…' : 'Not live';
        state.dataset.state = value;
      },
      onRefused: async () => {
        // A refusal that is the query's (a 400) or the session's (401, 403) does not heal by
        // retrying; an outage (503, a restart's refused connection) does: the stream is tried
        // again, with the backoff, and the page says what is wrong meanwhile.
        try {
          await get(`/v1/tasks?${query}`);
          return true;
        } catch (error) {
          replaceChildren(failure, problemBox(error));
          return error instanceof ApiError && (error.status === 0 || error.status >= 500);
        }
      },
    },
  );
  return () => {
    live.close();
    visibility.disconnect();
  };
}

/**
 * Draws a task's row, or brings a drawn one up to date in place: only the cells whose values
 * changed are touched, and a progress bar moves rather than being built again — a thousand rows
 * changing at once then cost a thousand small writes, not a thousand rows rebuilt.
 * @param {HTMLTableRowElement} row
 * @param {Task} task
 * @param {Task} [before] what the row shows now
 */
function fillRow(row, task, before) {
  row.dataset.status = task.status;
  if (before === undefined || row.cells.length !== 6) {
    // The cells that change hold a box of fixed size (console.css `.cell`): what changes inside it
    // is laid out there, not across the whole table.
    replaceChildren(
      row,
      h('td', {}, shortId(task.id, { href: `/ui/tasks/${task.id}`, label: 'task' })),
      h('td', {}, h('code', {}, task.tool)),
      h('td', {}, h('div', { class: 'cell' }, statusCell(task))),
      h('td', {}, h('div', { class: 'cell' }, progressBar(task.progress))),
      h('td', {}, timeAgo(task.createdAt)),
      h('td', {}, h('div', { class: 'cell' }, timeAgo(task.finishedAt ?? task.lastUpdatedAt))),
    );
    return;
  }
  const [status, progress, updated] = [2, 3, 5].map(
    (index) => /** @type {HTMLElement} */ (row.cells[index]?.firstElementChild),
  );
  if (
    before.status !== task.status ||
    before.statusMessage !== task.statusMessage ||
    (before.cancelRequestedAt === null) !== (task.cancelRequestedAt === null)
  ) {
    replaceChildren(/** @type {HTMLElement} */ (status), statusCell(task));
  }
  if (!moveProgress(/** @type {HTMLElement} */ (progress), before.progress, task.progress)) {
    replaceChildren(/** @type {HTMLElement} */ (progress), progressBar(task.progress));
  }
  const when = task.finishedAt ?? task.lastUpdatedAt;
  const time = updated?.querySelector('time');
  if (time && time.getAttribute('datetime') !== when)
    replaceChildren(/** @type {HTMLElement} */ (updated), timeAgo(when));
}

/** @param {Task} task */
function statusCell(task) {
  return [
    statusBadge(task.status),
    task.cancelRequestedAt !== null && task.status === 'working'
      ? h('span', { class: 'badge cancel-requested' }, 'cancel requested')
      : null,
    task.statusMessage ? h('span', { class: 'status-message', title: task.statusMessage }, task.statusMessage) : null,
  ];
}

/**
 * Moves a drawn progress bar to new figures; false when it cannot (none drawn, or the shape changed).
 * @param {HTMLElement} cell
 * @param {Task['progress']} before
 * @param {Task['progress']} after
 */
function moveProgress(cell, before, after) {
  if (before === null || after === null || before.total === null || after.total === null || after.total <= 0) {
    return JSON.stringify(before) === JSON.stringify(after);
  }
  const bar = cell.querySelector('progress');
  const figure = cell.querySelector('.figure');
  if (!bar || !figure || Boolean(before.message) !== Boolean(after.message)) return false;
  const percent = Math.floor(Math.max(0, Math.min(100, (after.value / after.total) * 100)));
  bar.max = after.total;
  bar.value = after.value;
  bar.setAttribute('aria-label', `${percent}% done`);
  figure.textContent = `${percent}%`;
  const message = cell.querySelector('.message');
  if (message && after.message) message.textContent = after.message;
  return true;
}

/**
 * Inserts a new row where its creation time puts it (newest first).
 * @param {HTMLTableSectionElement} body
 * @param {HTMLTableRowElement} row
 * @param {Task} task
 * @param {Map<string, { row: HTMLTableRowElement, task: Task, pending: Task | null }>} rows
 */
function insertByCreation(body, row, task, rows) {
  for (const child of body.children) {
    const other = rows.get(String(/** @type {HTMLElement} */ (child).dataset.id));
    if (
      other &&
      (other.task.createdAt < task.createdAt || (other.task.createdAt === task.createdAt && other.task.id < task.id))
    ) {
      body.insertBefore(row, child);
      return;
    }
  }
  body.append(row);
}

/**
 * The filters, as a form whose submission is the page's URL.
 * @param {URL} url
 * @param {(href: string) => void} navigate
 */
function filterForm(url, navigate) {
  const params = url.searchParams;
  const status = h(
    'select',
    { id: 'filter-status', name: 'status' },
    h('option', { value: '' }, 'Any status'),
    ...STATUSES.map((value) =>
      h('option', { value, selected: params.get('status') === value }, value.replace('_', ' ')),
    ),
  );
  const tool = h('select', { id: 'filter-tool', name: 'tool' }, h('option', { value: '' }, 'Any tool'));
  const chosenTool = params.get('tool');
  if (chosenTool) tool.append(h('option', { value: chosenTool, selected: true }, chosenTool));
  // The catalog's tools, for the choice (the list works before it arrives).
  void get('/v1/tools')
    .then((answer) => {
      for (const entry of /** @type {{ tools: { name: string }[] }} */ (answer).tools) {
        if (entry.name !== chosenTool) tool.append(h('option', { value: entry.name }, entry.name));
      }
    })
    .catch(() => {});
  const since = h(
    'select',
    { id: 'filter-since', name: 'since' },
    ...SINCE.map(([value, label]) => h('option', { value, selected: (params.get('since') ?? '') === value }, label)),
  );
  const search = h('input', {
    id: 'filter-q',
    name: 'q',
    type: 'search',
    value: params.get('q') ?? '',
    placeholder: 'Task id or idempotency key',
    autocomplete: 'off',
    spellcheck: 'false',
  });
  const size = h(
    'select',
    { id: 'filter-limit', name: 'limit' },
    ...PAGE_SIZES.map((value) =>
      h('option', { value, selected: (params.get('limit') ?? '100') === value }, `${value} per page`),
    ),
  );
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter tasks' },
    h('label', { for: 'filter-status' }, 'Status'),
    status,
    h('label', { for: 'filter-tool' }, 'Tool'),
    tool,
    h('label', { for: 'filter-since' }, 'Created'),
    since,
    h('label', { for: 'filter-q' }, 'Search'),
    search,
    h('label', { for: 'filter-limit', class: 'visually-hidden' }, 'Page size'),
    size,
    h('button', { type: 'submit' }, 'Apply'),
  );
  const apply = () => {
    const next = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (typeof value === 'string' && value.trim() !== '' && !(name === 'limit' && value === '100'))
        next.set(name, value.trim());
    }
    const text = next.toString();
    navigate(`/ui${text ? `?${text}` : ''}`);
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
  for (const select of [status, tool, since, size]) select.addEventListener('change', apply);
  return form;
}
