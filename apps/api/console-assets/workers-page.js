// @ts-check
// /ui/workers: the fleet (GET /v1/instances, admin scope): every API and worker instance live or
// gone within ten minutes, their tools with fingerprints — a tool served under two definitions
// (version skew) is marked — the tasks each worker holds, and their heartbeats. Read again every
// five seconds while the page is shown (one small request; instances have no watch to hear).
import { get } from './api.js';
import { h, problemBox, replaceChildren, shortId, timeAgo } from './dom.js';

const REFRESH_MS = 5_000;

/**
 * @typedef {{ id: string, kind: 'api' | 'worker', host: string, pid: number, state: 'live' | 'silent' | 'stopped', startedAt: string, heartbeatAt: string, stoppedAt: string | null, tools: { name: string, fingerprint: string }[], holding: number }} Instance
 * @typedef {{ instances: Instance[], skew: { tool: string, fingerprints: string[] }[] }} Fleet
 */

/** @type {import('./app.js').PageModule['render']} */
export function render(main) {
  document.title = 'Workers · Taskgate';
  const skew = h('div');
  const body = h('div');
  const failure = h('div');
  replaceChildren(main, h('h1', {}, 'Workers'), failure, skew, body);

  const load = async () => {
    try {
      const fleet = /** @type {Fleet} */ (await get('/v1/instances'));
      replaceChildren(failure);
      paint(fleet);
    } catch (error) {
      replaceChildren(failure, problemBox(error));
    }
  };

  /** @param {Fleet} fleet */
  const paint = (fleet) => {
    const skewed = new Set(fleet.skew.map((entry) => entry.tool));
    replaceChildren(
      skew,
      fleet.skew.length === 0
        ? null
        : h(
            'div',
            { class: 'banner', role: 'status' },
            h('strong', {}, 'Version skew: '),
            ...fleet.skew.map((entry, index) => [
              index > 0 ? '; ' : '',
              h('code', {}, entry.tool),
              ` is served under ${entry.fingerprints.length} definitions (${entry.fingerprints.map((f) => f.slice(0, 8)).join(', ')})`,
            ]),
            '. Calls may meet either until the deploy finishes.',
          ),
    );
    if (fleet.instances.length === 0) {
      replaceChildren(body, h('p', { class: 'empty' }, 'No instance has heartbeated in the last ten minutes.'));
      return;
    }
    replaceChildren(
      body,
      h(
        'table',
        {},
        h('caption', { class: 'visually-hidden' }, 'Instances, newest first'),
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ...['Instance', 'Role', 'State', 'Host', 'Started', 'Heartbeat', 'Holding', 'Tools'].map((name) =>
              h('th', { scope: 'col' }, name),
            ),
          ),
        ),
        h(
          'tbody',
          {},
          ...fleet.instances.map((instance) =>
            h(
              'tr',
              { 'data-id': instance.id, 'data-state': instance.state },
              h('td', {}, shortId(instance.id, { label: 'instance' })),
              h('td', {}, instance.kind),
              h('td', {}, h('span', { class: `badge state-${instance.state}` }, instance.state)),
              h('td', {}, h('code', {}, `${instance.host}:${instance.pid}`)),
              h('td', {}, timeAgo(instance.startedAt)),
              h(
                'td',
                {},
                instance.stoppedAt ? ['stopped ', timeAgo(instance.stoppedAt)] : timeAgo(instance.heartbeatAt),
              ),
              h(
                'td',
                {},
                instance.kind === 'worker'
                  ? `${instance.holding} ${instance.holding === 1 ? 'task' : 'tasks'}`
                  : h('span', { class: 'muted' }, '—'),
              ),
              h(
                'td',
                { class: 'tools-cell' },
                instance.tools.length === 0
                  ? h('span', { class: 'muted' }, '—')
                  : h(
                      'ul',
                      { class: 'tool-list' },
                      ...instance.tools.map((tool) =>
                        h(
                          'li',
                          { class: skewed.has(tool.name) ? 'skewed' : '' },
                          h('code', {}, tool.name),
                          ' ',
                          h('span', { class: 'muted', title: tool.fingerprint }, tool.fingerprint.slice(0, 8)),
                          skewed.has(tool.name) ? h('span', { class: 'badge skew' }, 'skew') : null,
                        ),
                      ),
                    ),
              ),
            ),
          ),
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
