// @ts-check
// /ui/reconciliation and /ui/reconciliation/<id> (admin scope): the calls that left something for
// a person to decide — a lost attempt of a call nobody may retry blindly, an irreversible step
// with no record of how it went, effects left by a task that then failed — and resolving one with
// a note of what was found and done, and by whom (GET and POST /v1/reconciliation-items).
import { get, post } from './api.js';
import { h, jsonView, problemBox, replaceChildren, shortId, timeAgo } from './dom.js';

/**
 * @typedef {{ id: string, taskId: string, tool: string, idempotencyKey: string | null, kind: 'unknown_outcome' | 'abandoned_with_effects', reason: string, details: Record<string, unknown>, createdAt: string, resolvedAt: string | null, resolution: string | null, resolvedBy: string | null }} Item
 */

const STATES = /** @type {const} */ (['open', 'resolved', 'all']);
const KINDS = { unknown_outcome: 'outcome unknown', abandoned_with_effects: 'abandoned with effects' };

/** @type {import('./app.js').PageModule['render']} */
export async function render(main, { url, match }) {
  const id = match[1] ? decodeURIComponent(match[1]) : null;
  if (id !== null) return detail(main, id);
  document.title = 'Reconciliation · Taskgate';
  const wanted = url.searchParams.get('state');
  const state = STATES.find((value) => value === wanted) ?? 'open';
  const before = url.searchParams.get('before');
  const query = new URLSearchParams({ state, limit: '100' });
  if (before) query.set('before', before);
  const tabs = h(
    'nav',
    { class: 'tabs', 'aria-label': 'Which items' },
    ...STATES.map((value) =>
      h(
        'a',
        { href: `/ui/reconciliation?state=${value}`, 'data-link': '', 'aria-current': value === state ? 'page' : null },
        value,
      ),
    ),
  );
  replaceChildren(main, h('h1', {}, 'Reconciliation'), tabs, h('p', { class: 'loading', role: 'status' }, 'Loading…'));
  /** @type {{ items: Item[], next: string | null }} */
  let page;
  try {
    page = /** @type {{ items: Item[], next: string | null }} */ (await get(`/v1/reconciliation-items?${query}`));
  } catch (error) {
    replaceChildren(main, h('h1', {}, 'Reconciliation'), tabs, problemBox(error));
    return;
  }
  const list =
    page.items.length === 0
      ? h('p', { class: 'empty' }, state === 'open' ? 'Nothing is waiting for a decision.' : 'No items.')
      : h(
          'table',
          {},
          h('caption', { class: 'visually-hidden' }, `Reconciliation items (${state}), newest first`),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...['Item', 'Kind', 'Tool', 'Task', 'Why', 'Opened', 'Resolved'].map((name) =>
                h('th', { scope: 'col' }, name),
              ),
            ),
          ),
          h(
            'tbody',
            {},
            ...page.items.map((item) =>
              h(
                'tr',
                { 'data-id': item.id },
                h('td', {}, h('a', { href: `/ui/reconciliation/${item.id}`, 'data-link': '' }, `#${item.id}`)),
                h('td', {}, h('span', { class: `badge kind-${item.kind}` }, KINDS[item.kind])),
                h('td', {}, h('code', {}, item.tool)),
                h('td', {}, shortId(item.taskId, { href: `/ui/tasks/${item.taskId}`, label: 'task' })),
                h('td', { class: 'reason-cell' }, item.reason),
                h('td', {}, timeAgo(item.createdAt)),
                h(
                  'td',
                  {},
                  item.resolvedAt
                    ? [timeAgo(item.resolvedAt), ` by ${item.resolvedBy}`]
                    : h('span', { class: 'muted' }, 'open'),
                ),
              ),
            ),
          ),
        );
  const older = page.next
    ? h(
        'nav',
        { class: 'pager', 'aria-label': 'Pages' },
        h(
          'a',
          { href: `/ui/reconciliation?state=${state}&before=${page.next}`, 'data-link': '', rel: 'next' },
          'Older →',
        ),
      )
    : null;
  replaceChildren(main, h('h1', {}, 'Reconciliation'), tabs, list, older);
}

/**
 * @param {HTMLElement} main
 * @param {string} id
 */
async function detail(main, id) {
  document.title = `Item #${id} · Reconciliation · Taskgate`;
  /** @type {Item} */
  let item;
  try {
    item = /** @type {Item} */ (await get(`/v1/reconciliation-items/${encodeURIComponent(id)}`));
  } catch (error) {
    replaceChildren(
      main,
      h('p', { class: 'crumbs' }, h('a', { href: '/ui/reconciliation', 'data-link': '' }, '← Reconciliation')),
      problemBox(error),
    );
    return;
  }
  const outcome = h('div');
  const paint = () => {
    replaceChildren(
      main,
      h('p', { class: 'crumbs' }, h('a', { href: '/ui/reconciliation', 'data-link': '' }, '← Reconciliation')),
      h('h1', {}, `Item #${item.id}`),
      h(
        'p',
        { class: 'status-line' },
        h('span', { class: `badge kind-${item.kind}` }, KINDS[item.kind]),
        ' ',
        h('code', {}, item.tool),
        ` — ${item.reason}`,
      ),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Task'),
        h('dd', {}, shortId(item.taskId, { href: `/ui/tasks/${item.taskId}`, label: 'task' })),
        h('dt', {}, 'Idempotency key'),
        h('dd', {}, item.idempotencyKey ?? h('span', { class: 'muted' }, '—')),
        h('dt', {}, 'Opened'),
        h('dd', {}, timeAgo(item.createdAt)),
        h('dt', {}, 'Resolved'),
        h(
          'dd',
          {},
          item.resolvedAt
            ? [timeAgo(item.resolvedAt), ` by ${item.resolvedBy}`]
            : h('span', { class: 'muted' }, 'not yet'),
        ),
      ),
      h(
        'section',
        { 'aria-labelledby': 'known-title' },
        h('h2', { id: 'known-title' }, 'What was known when it opened'),
        jsonView(item.details, 'details'),
      ),
      item.resolvedAt
        ? h(
            'section',
            { 'aria-labelledby': 'resolution-title' },
            h('h2', { id: 'resolution-title' }, 'Resolution'),
            h('p', { class: 'resolution' }, item.resolution ?? ''),
          )
        : resolveForm(),
      outcome,
    );
  };
  const resolveForm = () => {
    const who = h('input', {
      id: 'resolved-by',
      name: 'resolvedBy',
      required: true,
      maxlength: 200,
      autocomplete: 'name',
    });
    const what = h('textarea', { id: 'resolution', name: 'resolution', required: true, maxlength: 4000, rows: 4 });
    const submit = h('button', { type: 'submit' }, 'Resolve');
    const form = h(
      'form',
      { class: 'resolve', 'aria-labelledby': 'resolve-title' },
      h('h2', { id: 'resolve-title' }, 'Resolve'),
      h('label', { for: 'resolution' }, 'What was found and done'),
      what,
      h('label', { for: 'resolved-by' }, 'Your name'),
      who,
      submit,
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      submit.disabled = true;
      try {
        item = /** @type {Item} */ (
          await post(`/v1/reconciliation-items/${encodeURIComponent(item.id)}/resolve`, {
            resolution: what.value,
            resolvedBy: who.value,
          })
        );
        paint();
      } catch (error) {
        submit.disabled = false;
        replaceChildren(outcome, problemBox(error));
      }
    });
    return form;
  };
  paint();
}
