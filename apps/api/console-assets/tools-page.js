// @ts-check
// /ui/tools: per tool, what is open now (queued, running, waiting for input, the oldest queued
// task's age) and what ended in the last hour (completed, failed, cancelled, run time and cancel
// latency percentiles), with two small charts per tool over the hour: what ended per bucket, and
// the run time's p50 and p99 per bucket. From GET /v1/tools/stats, read again every five seconds
// while the page is shown: one aggregate read, where a watch of every task would be a stream of
// every change only to count them.
import { get } from './api.js';
import { absolute, h, problemBox, replaceChildren, svg } from './dom.js';

const REFRESH_MS = 5_000;
const CHART = { width: 120, height: 34, gap: 1 };

/**
 * @typedef {{ p50Ms: number | null, p99Ms: number | null }} Percentiles
 * @typedef {{ completed: number, failed: number, cancelled: number, duration: Percentiles, cancelLatency: Percentiles }} Counts
 * @typedef {Counts & { name: string, served: boolean, queued: number, running: number, inputRequired: number, oldestQueuedAt: string | null, buckets: (Counts & { start: string })[] }} ToolStats
 * @typedef {{ now: string, since: string, bucketMs: number, tools: ToolStats[] }} Stats
 */

/** @type {import('./app.js').PageModule['render']} */
export function render(main) {
  document.title = 'Tools · Taskgate';
  const summary = h('p', { class: 'muted' });
  const body = h('div');
  const failure = h('div');
  replaceChildren(main, h('h1', {}, 'Tools'), summary, legend(), failure, body);

  const load = async () => {
    try {
      const stats = /** @type {Stats} */ (await get('/v1/tools/stats'));
      replaceChildren(failure);
      paint(stats);
    } catch (error) {
      replaceChildren(failure, problemBox(error));
    }
  };

  /** @param {Stats} stats */
  const paint = (stats) => {
    const minutes = Math.round(stats.bucketMs / 60_000);
    replaceChildren(
      summary,
      'Open tasks now; what ended since ',
      h('time', { datetime: stats.since, title: absolute(stats.since) }, new Date(stats.since).toLocaleTimeString()),
      ` (the last hour, in ${minutes}-minute buckets). Run time is from a worker's start to the end; cancel latency from the request to the cancelled end.`,
    );
    if (stats.tools.length === 0) {
      replaceChildren(body, h('p', { class: 'empty' }, 'No tool is served, and no task has run.'));
      return;
    }
    const skew = Date.now() - Date.parse(stats.now);
    replaceChildren(
      body,
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'tool-stats' },
          h('caption', { class: 'visually-hidden' }, 'Tools: open tasks now and tasks ended in the last hour'),
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ...[
                'Tool',
                'Queued',
                'Running',
                'Awaiting input',
                'Oldest queued',
                'Completed',
                'Failed',
                'Cancelled',
                `Ended per ${minutes} min`,
                'Run p50 / p99',
                'Run time',
                'Cancel p50 / p99',
              ].map((name) => h('th', { scope: 'col' }, name)),
            ),
          ),
          h('tbody', {}, ...stats.tools.map((tool) => row(tool, minutes, skew))),
        ),
      ),
    );
  };

  void load();
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') void load();
  }, REFRESH_MS);
  return () => clearInterval(timer);
}

/**
 * @param {ToolStats} tool
 * @param {number} minutes the bucket's length
 * @param {number} skew how far the browser's clock is ahead of the database's
 */
function row(tool, minutes, skew) {
  const tasks = `/ui?tool=${encodeURIComponent(tool.name)}`;
  return h(
    'tr',
    { 'data-tool': tool.name },
    h(
      'th',
      { scope: 'row' },
      h('a', { href: tasks, 'data-link': '' }, h('code', {}, tool.name)),
      tool.served ? null : h('span', { class: 'badge', title: 'no live or recent worker serves it' }, 'not served'),
    ),
    h('td', { class: 'num', 'data-field': 'queued' }, String(tool.queued)),
    h('td', { class: 'num', 'data-field': 'running' }, String(tool.running)),
    h('td', { class: 'num', 'data-field': 'inputRequired' }, String(tool.inputRequired)),
    h(
      'td',
      { 'data-field': 'oldestQueued' },
      tool.oldestQueuedAt === null
        ? h('span', { class: 'muted' }, '—')
        : h(
            'span',
            { title: absolute(tool.oldestQueuedAt) },
            formatMs(Date.now() - skew - Date.parse(tool.oldestQueuedAt)),
          ),
    ),
    h('td', { class: 'num', 'data-field': 'completed' }, String(tool.completed)),
    h('td', { class: 'num', 'data-field': 'failed' }, String(tool.failed)),
    h('td', { class: 'num', 'data-field': 'cancelled' }, String(tool.cancelled)),
    h('td', { class: 'chart-cell' }, endedChart(tool, minutes)),
    h('td', { 'data-field': 'duration' }, percentiles(tool.duration)),
    h('td', { class: 'chart-cell' }, durationChart(tool, minutes)),
    h('td', { 'data-field': 'cancelLatency' }, percentiles(tool.cancelLatency)),
  );
}

/** @param {Percentiles} p */
function percentiles(p) {
  if (p.p50Ms === null) return h('span', { class: 'muted' }, '—');
  return `${formatMs(p.p50Ms)} / ${formatMs(p.p99Ms ?? p.p50Ms)}`;
}

/**
 * Stacked bars, one per bucket: completed, failed, cancelled. Its name says in words what it
 * shows; each bar's title gives its bucket's counts on hover.
 * @param {ToolStats} tool
 * @param {number} minutes
 */
function endedChart(tool, minutes) {
  const totals = tool.buckets.map((b) => b.completed + b.failed + b.cancelled);
  const highest = Math.max(0, ...totals);
  const step = CHART.width / tool.buckets.length;
  const bars = tool.buckets.flatMap((bucket, index) => {
    const total = totals[index] ?? 0;
    if (total === 0) return [];
    let y = CHART.height;
    /** @type {SVGElement[]} */
    const parts = [];
    for (const [kind, count] of /** @type {const} */ ([
      ['completed', bucket.completed],
      ['failed', bucket.failed],
      ['cancelled', bucket.cancelled],
    ])) {
      if (count === 0) continue;
      const height = Math.max(1, (count / highest) * CHART.height);
      y -= height;
      parts.push(
        svg('rect', {
          class: `c-${kind}`,
          x: (index * step).toFixed(1),
          y: y.toFixed(1),
          width: (step - CHART.gap).toFixed(1),
          height: height.toFixed(1),
        }),
      );
    }
    return [
      svg(
        'g',
        {},
        svg(
          'title',
          {},
          `${new Date(bucket.start).toLocaleTimeString()}: ${bucket.completed} completed, ${bucket.failed} failed, ${bucket.cancelled} cancelled`,
        ),
        ...parts,
      ),
    ];
  });
  const label =
    highest === 0
      ? 'No task ended in the last hour'
      : `Ended per ${minutes} minutes over the last hour: ${tool.completed} completed, ${tool.failed} failed, ${tool.cancelled} cancelled; at most ${highest} in one bucket`;
  return chart(label, [
    svg('line', { class: 'axis', x1: 0, y1: CHART.height, x2: CHART.width, y2: CHART.height }),
    ...bars,
  ]);
}

/**
 * The run time's p50 and p99 per bucket, as two lines; a bucket where nothing ended is a gap.
 * @param {ToolStats} tool
 * @param {number} minutes
 */
function durationChart(tool, minutes) {
  const values = tool.buckets.flatMap((b) => [b.duration.p50Ms, b.duration.p99Ms]).filter((v) => v !== null);
  const highest = Math.max(0, ...values);
  if (highest === 0 && values.length === 0) return chart('No run time to show in the last hour', []);
  const step = CHART.width / tool.buckets.length;
  /** @param {'p50Ms' | 'p99Ms'} which */
  const line = (which) => {
    /** @type {string[][]} */
    const runs = [[]];
    tool.buckets.forEach((bucket, index) => {
      const value = bucket.duration[which];
      const current = /** @type {string[]} */ (runs[runs.length - 1]);
      if (value === null) {
        if (current.length > 0) runs.push([]);
        return;
      }
      const x = index * step + step / 2;
      const y = CHART.height - 1 - (highest === 0 ? 0 : (value / highest) * (CHART.height - 2));
      current.push(`${x.toFixed(1)},${y.toFixed(1)}`);
    });
    return runs
      .filter((points) => points.length > 0)
      .map((points) =>
        points.length === 1
          ? svg('circle', {
              class: `l-${which.slice(0, 3)} dot`,
              cx: points[0]?.split(',')[0],
              cy: points[0]?.split(',')[1],
              r: 1.5,
            })
          : svg('polyline', { class: `l-${which.slice(0, 3)}`, points: points.join(' ') }),
      );
  };
  const label = `Run time per ${minutes} minutes over the last hour: p50 ${formatMs(tool.duration.p50Ms ?? 0)}, p99 ${formatMs(tool.duration.p99Ms ?? 0)}; highest p99 in one bucket ${formatMs(highest)}`;
  return chart(label, [...line('p50Ms'), ...line('p99Ms')]);
}

/**
 * @param {string} label what the chart shows, in words (its accessible name)
 * @param {SVGElement[]} children
 */
function chart(label, children) {
  return svg(
    'svg',
    {
      class: 'chart',
      role: 'img',
      'aria-label': label,
      viewBox: `0 0 ${CHART.width} ${CHART.height}`,
      width: CHART.width,
      height: CHART.height,
    },
    ...children,
  );
}

/** The chart's colours, named. */
function legend() {
  /** @param {string} kind @param {string} text */
  const swatch = (kind, text) =>
    h(
      'li',
      {},
      svg(
        'svg',
        { width: 10, height: 10, viewBox: '0 0 10 10', 'aria-hidden': 'true' },
        svg('rect', { class: kind, x: 0, y: 0, width: 10, height: 10, rx: 2 }),
      ),
      ` ${text}`,
    );
  return h(
    'ul',
    { class: 'legend', 'aria-label': 'Chart colours' },
    swatch('c-completed', 'completed'),
    swatch('c-failed', 'failed'),
    swatch('c-cancelled', 'cancelled'),
    swatch('l-p50 swatch', 'run time p50'),
    swatch('l-p99 swatch', 'run time p99'),
  );
}

/** @param {number} ms */
function formatMs(ms) {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.round((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
