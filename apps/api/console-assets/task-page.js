// @ts-check
// /ui/tasks/<id>: one task — status, progress, its two clocks, arguments and outcome, timeline,
// steps and log messages — live on the task's own stream (GET /v1/tasks/:id/events), and the
// Cancel task button, which acknowledges at once and then shows the worker's ending as it comes.
import { ApiError, get, post } from './api.js';
import {
  absolute,
  copyButton,
  h,
  jsonView,
  problemBox,
  progressBar,
  replaceChildren,
  shortId,
  statusBadge,
  timeAgo,
} from './dom.js';
import { openLive } from './live.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * @typedef {import('./tasks-page.js').Task & { arguments: unknown, result: unknown, error: unknown, cancelReason: string | null, attempt: number, startedAt: string | null, expiresAt: string | null, idempotencyKey: string | null }} FullTask
 * @typedef {{ id: string, type: string, fromStatus: string | null, toStatus: string | null, attempt: number | null, reason: string | null, data: any, at: string }} TaskEvent
 * @typedef {{ idleTimeoutMs: number | null, maxTimeoutMs: number | null, idleDeadlineAt: string | null, maxDeadlineAt: string | null, inputDeadlineAt: string | null, now: string }} Clocks
 * @typedef {{ events: TaskEvent[], next: string | null, clocks: Clocks, traceParent: string | null, cancelSignal: string | null, worker: { id: string, heartbeatAt: string | null } | null, toolFingerprint: string | null }} Timeline
 */

/** @type {import('./app.js').PageModule['render']} */
export async function render(main, { match }) {
  const id = decodeURIComponent(match[1] ?? '');
  document.title = `Task ${id.slice(0, 8)} · Taskgate`;
  /** @type {FullTask} */
  let task;
  try {
    task = /** @type {FullTask} */ (await get(`/v1/tasks/${encodeURIComponent(id)}`));
  } catch (error) {
    replaceChildren(
      main,
      h('h1', {}, 'Task'),
      error instanceof ApiError && error.status === 404
        ? h(
            'p',
            { role: 'alert' },
            `There is no task ${id} for this tenant (it may have expired). `,
            h('a', { href: '/ui', 'data-link': '' }, 'Back to the tasks'),
            '.',
          )
        : problemBox(error),
    );
    return;
  }

  const header = h('div', { class: 'task-head' });
  const actions = h('div', { class: 'actions' });
  const progress = h('div', { class: 'task-progress' });
  const clocks = h('dl', { class: 'clocks' });
  const facts = h('dl', { class: 'facts' });
  const outcome = h('div', { class: 'outcome' });
  const timeline = h('ol', { class: 'timeline' });
  const steps = h('div');
  const logs = h('div');
  const failure = h('div');
  replaceChildren(
    main,
    h('p', { class: 'crumbs' }, h('a', { href: '/ui', 'data-link': '' }, '← Tasks')),
    header,
    failure,
    actions,
    h(
      'section',
      { 'aria-labelledby': 'progress-title' },
      h('h2', { id: 'progress-title' }, 'Progress and clocks'),
      progress,
      clocks,
    ),
    h('section', { 'aria-labelledby': 'facts-title' }, h('h2', { id: 'facts-title' }, 'Details'), facts),
    outcome,
    h('section', { 'aria-labelledby': 'timeline-title' }, h('h2', { id: 'timeline-title' }, 'Timeline'), timeline),
    h('section', { 'aria-labelledby': 'steps-title' }, h('h2', { id: 'steps-title' }, 'Steps'), steps),
    h('section', { 'aria-labelledby': 'logs-title' }, h('h2', { id: 'logs-title' }, 'Log messages'), logs),
  );

  /** @type {Timeline | null} */
  let detail = null;
  /** How far the browser's clock is ahead of the database's: what is left is the database's. */
  let skewMs = 0;
  let confirming = false;
  /** Which read of the timeline is the newest asked for: an older one answering later is dropped. */
  let detailReads = 0;

  /**
   * Takes a newer copy of the task. Copies arrive by two paths (the cancel's answer and the live
   * stream), and the stream's first event can have been read before the cancel committed: a copy
   * older than the one held would show the Cancel button again on a task being cancelled.
   * @param {FullTask} next
   */
  const adopt = (next) => {
    if (Date.parse(next.lastUpdatedAt) < Date.parse(task.lastUpdatedAt)) return false;
    task = next;
    return true;
  };

  const paint = () => {
    replaceChildren(
      header,
      h('h1', {}, 'Task ', shortId(task.id, { label: 'task id' })),
      h(
        'p',
        { class: 'status-line' },
        statusBadge(task.status),
        task.cancelRequestedAt !== null && !TERMINAL.has(task.status)
          ? h('span', { class: 'badge cancel-requested' }, 'cancel requested')
          : null,
        ' ',
        h('code', {}, task.tool),
        task.statusMessage ? h('span', { class: 'status-message' }, ` — ${task.statusMessage}`) : null,
      ),
    );
    paintActions();
    replaceChildren(progress, progressBar(task.progress));
    paintClocks();
    paintFacts();
    replaceChildren(
      outcome,
      h(
        'section',
        { 'aria-labelledby': 'arguments-title' },
        h('h2', { id: 'arguments-title' }, 'Arguments'),
        jsonView(task.arguments, 'arguments'),
      ),
      task.status === 'completed'
        ? h(
            'section',
            { 'aria-labelledby': 'result-title' },
            h('h2', { id: 'result-title' }, 'Result'),
            jsonView(task.result, 'result'),
          )
        : null,
      task.error !== null && task.error !== undefined
        ? h(
            'section',
            { 'aria-labelledby': 'error-title' },
            h('h2', { id: 'error-title' }, 'Error'),
            jsonView(task.error, 'error'),
          )
        : null,
    );
  };

  /** What the actions show now: they are drawn again only when it changes (focus stays where it is). */
  let drawnActions = '';
  const paintActions = () => {
    const open = !TERMINAL.has(task.status);
    const state = !open
      ? 'ended'
      : task.cancelRequestedAt !== null
        ? `requested ${task.cancelRequestedAt}`
        : confirming
          ? 'confirming'
          : 'open';
    if (state === drawnActions) return;
    drawnActions = state;
    if (!open) {
      replaceChildren(actions);
      return;
    }
    if (task.cancelRequestedAt !== null) {
      replaceChildren(
        actions,
        h(
          'p',
          { class: 'notice', role: 'status' },
          'Cancel requested ',
          timeAgo(task.cancelRequestedAt),
          task.cancelReason ? ` (${task.cancelReason})` : '',
          '. The task stops at its worker’s next checkpoint; this page shows the ending when it comes.',
        ),
      );
      return;
    }
    if (!confirming) {
      const cancel = h('button', { type: 'button', class: 'danger' }, 'Cancel task');
      cancel.addEventListener('click', () => {
        confirming = true;
        paintActions();
      });
      replaceChildren(actions, cancel);
      return;
    }
    const reason = h('input', {
      id: 'cancel-reason',
      type: 'text',
      maxlength: 500,
      placeholder: 'optional',
      autocomplete: 'off',
    });
    const confirm = h('button', { type: 'button', class: 'danger' }, 'Confirm');
    const keep = h('button', { type: 'button', class: 'quiet' }, 'Keep it running');
    confirm.addEventListener('click', async () => {
      confirm.disabled = true;
      try {
        const text = reason.value.trim();
        adopt(
          /** @type {FullTask} */ (
            await post(`/v1/tasks/${encodeURIComponent(task.id)}/cancel`, text ? { reason: text } : {})
          ),
        );
        confirming = false;
        paint();
        void loadDetail();
      } catch (error) {
        confirm.disabled = false;
        replaceChildren(failure, problemBox(error));
      }
    });
    keep.addEventListener('click', () => {
      confirming = false;
      paintActions();
    });
    replaceChildren(
      actions,
      h(
        'div',
        { class: 'confirm', role: 'group', 'aria-labelledby': 'confirm-title' },
        h(
          'p',
          { id: 'confirm-title' },
          'Cancel this task? Its worker is asked to stop; what it already did stays done.',
        ),
        h('label', { for: 'cancel-reason' }, 'Reason'),
        reason,
        confirm,
        keep,
      ),
    );
    confirm.focus();
  };

  const paintClocks = () => {
    if (detail === null) return;
    const c = detail.clocks;
    const now = Date.now() - skewMs;
    /** @param {string} name @param {number | null} limitMs @param {string | null} deadline */
    const clock = (name, limitMs, deadline) => {
      if (limitMs === null && deadline === null) return [h('dt', {}, name), h('dd', { class: 'muted' }, 'none')];
      const left = deadline === null ? null : new Date(deadline).getTime() - now;
      const running = !TERMINAL.has(task.status) && left !== null;
      return [
        h('dt', {}, name),
        h(
          'dd',
          {},
          limitMs === null ? '' : `${formatDuration(limitMs)} `,
          running
            ? h(
                'span',
                { class: left !== null && left < 0 ? 'overdue' : '' },
                left !== null && left < 0
                  ? `(past, ${formatDuration(-left)} ago)`
                  : `(${formatDuration(left ?? 0)} left)`,
              )
            : h('span', { class: 'muted' }, TERMINAL.has(task.status) ? '(ended)' : '(not started)'),
          running && limitMs !== null && left !== null
            ? h('meter', { min: 0, max: limitMs, value: Math.max(0, left), 'aria-label': `${name}: time left` })
            : null,
        ),
      ];
    };
    replaceChildren(
      clocks,
      ...clock('Idle clock', c.idleTimeoutMs, c.idleDeadlineAt),
      ...clock('Max clock', c.maxTimeoutMs, c.maxDeadlineAt),
      ...(c.inputDeadlineAt !== null ? clock('Waiting for input until', null, c.inputDeadlineAt) : []),
    );
  };

  const paintFacts = () => {
    const traceId = detail?.traceParent?.split('-')[1] ?? null;
    /** @param {string} term @param {import('./dom.js').Child | import('./dom.js').Child[]} value */
    const fact = (term, value) => [h('dt', {}, term), h('dd', {}, value)];
    replaceChildren(
      facts,
      ...fact('Created', timeAgo(task.createdAt)),
      ...fact('Started', timeAgo(task.startedAt)),
      ...fact('Finished', timeAgo(task.finishedAt)),
      ...fact('Attempt', String(task.attempt)),
      ...fact(
        'Idempotency key',
        task.idempotencyKey === null
          ? h('span', { class: 'muted' }, '—')
          : [h('code', {}, task.idempotencyKey), copyButton(task.idempotencyKey, 'Copy idempotency key')],
      ),
      ...fact(
        'Trace id',
        traceId === null ? h('span', { class: 'muted' }, '—') : shortId(traceId, { label: 'trace id' }),
      ),
      ...fact(
        'Worker',
        detail?.worker
          ? [shortId(detail.worker.id, { label: 'worker' }), ' heartbeat ', timeAgo(detail.worker.heartbeatAt)]
          : h('span', { class: 'muted' }, '—'),
      ),
      ...fact('Cancel', cancelFact()),
      ...fact('Expires', timeAgo(task.expiresAt)),
      ...fact(
        'Tool fingerprint',
        detail?.toolFingerprint
          ? shortId(detail.toolFingerprint, { label: 'tool fingerprint' })
          : h('span', { class: 'muted' }, '—'),
      ),
    );
  };

  const cancelFact = () => {
    if (task.cancelRequestedAt === null) return h('span', { class: 'muted' }, 'not requested');
    const observed = observedAt();
    return h(
      'span',
      {},
      'requested ',
      timeAgo(task.cancelRequestedAt),
      detail?.cancelSignal ? ` via ${detail.cancelSignal}` : '',
      observed ? ', observed by the worker ' : '',
      observed ? timeAgo(observed) : null,
    );
  };

  const observedAt = () => detail?.events.find((event) => event.type === 'cancel_observed')?.at ?? null;

  const loadDetail = async () => {
    const ticket = ++detailReads;
    try {
      const [read, readSteps, readLogs] = await Promise.all([
        /** @type {Promise<Timeline>} */ (get(`/v1/tasks/${encodeURIComponent(task.id)}/timeline`)),
        /** @type {Promise<{ steps: any[] }>} */ (get(`/v1/tasks/${encodeURIComponent(task.id)}/steps`)),
        /** @type {Promise<{ messages: any[], next: string | null }>} */ (
          get(`/v1/tasks/${encodeURIComponent(task.id)}/logs`)
        ),
      ]);
      if (ticket !== detailReads) return;
      detail = read;
      skewMs = Date.now() - new Date(read.clocks.now).getTime();
      replaceChildren(failure);
      paintClocks();
      paintFacts();
      // In the order they happened: an event's id is the order it was written in, and some are
      // written after the fact (a task's `created` event can follow its first cancel's id).
      const events = [...read.events].sort(
        (a, b) => Date.parse(a.at) - Date.parse(b.at) || Number(BigInt(a.id) - BigInt(b.id)),
      );
      replaceChildren(timeline, ...events.map(timelineEntry));
      replaceChildren(steps, stepsTable(readSteps.steps));
      replaceChildren(logs, logList(readLogs.messages));
    } catch (error) {
      if (ticket === detailReads) replaceChildren(failure, problemBox(error));
    }
  };

  paint();
  await loadDetail();
  const ticker = setInterval(paintClocks, 1000);

  /** @type {import('./live.js').Live | null} */
  let live = null;
  if (!TERMINAL.has(task.status)) {
    live = openLive(`/v1/tasks/${encodeURIComponent(task.id)}/events`, ['status', 'progress'], (event, data) => {
      const statusChanged = data.status !== task.status || data.cancelRequestedAt !== task.cancelRequestedAt;
      if (!adopt(data)) return;
      if (event === 'progress' && !statusChanged) {
        replaceChildren(progress, progressBar(task.progress));
        return;
      }
      paint();
      void loadDetail();
      // The stream ends after the terminal status; an EventSource would open it again.
      if (TERMINAL.has(task.status)) live?.close();
    });
  }
  return () => {
    clearInterval(ticker);
    live?.close();
  };
}

/** @param {number} ms */
function formatDuration(ms) {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  return `${hours} h ${minutes % 60} min`;
}

/** @param {TaskEvent} event */
function timelineEntry(event) {
  const worker = typeof event.data?.worker === 'string' ? event.data.worker : null;
  /** @type {import('./dom.js').Child[]} */
  let what;
  switch (event.type) {
    case 'created':
      what = ['Created'];
      break;
    case 'status_changed':
      what = ['Status ', statusBadge(event.fromStatus ?? '?'), ' → ', statusBadge(event.toStatus ?? '?')];
      break;
    case 'cancel_requested':
      what = ['Cancel requested'];
      break;
    case 'cancel_observed':
      what = ['Cancel observed by the worker'];
      break;
    case 'attempt_started':
      what = [`Attempt ${event.attempt ?? '?'} started`];
      break;
    case 'attempt_lost':
      what = [`Attempt ${event.attempt ?? '?'} lost (its worker went silent)`];
      break;
    case 'attempt_released':
      what = [`Attempt ${event.attempt ?? '?'} handed back`];
      break;
    default:
      what = [event.type];
  }
  return h(
    'li',
    { 'data-type': event.type },
    h('time', { datetime: event.at, title: absolute(event.at) }, new Date(event.at).toLocaleTimeString()),
    ' ',
    h('span', { class: 'what' }, ...what),
    worker ? [' on ', shortId(worker, { label: 'worker' })] : null,
    event.reason ? h('span', { class: 'reason' }, ` — ${event.reason}`) : null,
  );
}

/** @param {{ name: string, state: string, irreversible: boolean, attempt: number, result: unknown, at: string }[]} list */
function stepsTable(list) {
  if (list.length === 0) return h('p', { class: 'muted' }, 'No durable steps recorded.');
  return h(
    'table',
    {},
    h(
      'thead',
      {},
      h('tr', {}, ...['Step', 'State', 'Attempt', 'Recorded', 'Result'].map((name) => h('th', { scope: 'col' }, name))),
    ),
    h(
      'tbody',
      {},
      ...list.map((step) =>
        h(
          'tr',
          {},
          h(
            'td',
            {},
            h('code', {}, step.name),
            step.irreversible ? h('span', { class: 'badge irreversible' }, 'irreversible') : null,
          ),
          h(
            'td',
            {},
            step.state === 'started' ? h('span', { class: 'badge status-failed' }, 'started, outcome unknown') : 'done',
          ),
          h('td', {}, String(step.attempt)),
          h('td', {}, timeAgo(step.at)),
          h(
            'td',
            {},
            step.state === 'done'
              ? jsonView(step.result, `result of ${step.name}`)
              : h('span', { class: 'muted' }, '—'),
          ),
        ),
      ),
    ),
  );
}

/** @param {{ seq: number, level: string, logger: string | null, data: unknown }[]} messages */
function logList(messages) {
  if (messages.length === 0) return h('p', { class: 'muted' }, 'No log messages.');
  return h(
    'ol',
    { class: 'logs' },
    ...messages.map((message) =>
      h(
        'li',
        { 'data-level': message.level },
        h('span', { class: `badge level-${message.level}` }, message.level),
        message.logger ? h('code', {}, ` ${message.logger} `) : ' ',
        typeof message.data === 'string' ? message.data : JSON.stringify(message.data),
      ),
    ),
  );
}
