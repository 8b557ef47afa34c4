// @ts-check
// /ui/catalog: every tool offered (GET /v1/tools, what MCP's tools/list answers from), with its
// schemas, its settings (clocks, retry class, task support) and which workers serve it, with how
// many of its tasks each runs at once and under which definition (GET /v1/instances). The
// workers are the fleet's, behind the admin scope: without it the page says so and shows the rest.
import { ApiError, get } from './api.js';
import { h, jsonView, problemBox, replaceChildren, shortId } from './dom.js';

const REFRESH_MS = 5_000;

/**
 * @typedef {{ name: string, title?: string, description: string, inputSchema: Record<string, unknown>, outputSchema?: Record<string, unknown>, annotations?: Record<string, unknown>, taskSupport: 'forbidden' | 'optional' | 'required', retry: 'safe' | 'conditional' | 'unsafe', idempotencyKey?: 'required' | 'optional', timeouts?: { idleMs?: number, maxMs?: number } }} Tool
 * @typedef {{ id: string, state: string, kind: string, tools: { name: string, fingerprint: string, concurrency: number | null }[] }} Instance
 */

const RETRY = {
  safe: 'safe — a lost attempt runs again, a caller may retry with a new call',
  conditional: 'conditional — runs again only under the same idempotency key',
  unsafe: 'unsafe — a lost attempt is never run again: it goes to reconciliation',
};

const TASK_SUPPORT = {
  forbidden: 'never a task over MCP (answered inline)',
  optional: 'a task when the MCP client asks for one',
  required: 'always a task over MCP',
};

/** @type {import('./app.js').PageModule['render']} */
export function render(main) {
  document.title = 'Catalog · Taskgate';
  const failure = h('div');
  const fleetNote = h('div');
  const body = h('div');
  replaceChildren(main, h('h1', {}, 'Tool catalog'), failure, fleetNote, body);
  /** Which tools' schema disclosures are open: a refresh keeps them as they were. */
  const opened = new Set();

  const load = async () => {
    try {
      const [catalog, fleet] = await Promise.all([
        /** @type {Promise<{ tools: Tool[] }>} */ (get('/v1/tools')),
        /** @type {Promise<{ instances: Instance[] } | ApiError>} */ (
          get('/v1/instances').catch((error) => {
            if (error instanceof ApiError && error.status === 403) return error;
            throw error;
          })
        ),
      ]);
      replaceChildren(failure);
      replaceChildren(
        fleetNote,
        fleet instanceof ApiError
          ? h(
              'p',
              { class: 'notice', role: 'status' },
              'Which workers serve each tool is shown with the admin scope; this sign-in does not have it.',
            )
          : null,
      );
      paint(catalog.tools, fleet instanceof ApiError ? null : fleet.instances);
    } catch (error) {
      replaceChildren(failure, problemBox(error));
    }
  };

  /** @param {Tool[]} tools @param {Instance[] | null} instances */
  const paint = (tools, instances) => {
    if (tools.length === 0) {
      replaceChildren(body, h('p', { class: 'empty' }, 'No tool is offered: no live worker has published one.'));
      return;
    }
    replaceChildren(
      body,
      h(
        'nav',
        { 'aria-label': 'Tools in the catalog', class: 'catalog-index' },
        h('ul', {}, ...tools.map((tool) => h('li', {}, h('a', { href: `#tool-${tool.name}` }, tool.name)))),
      ),
      ...tools.map((tool) => toolSection(tool, instances, opened)),
    );
  };

  void load();
  const timer = setInterval(() => {
    if (document.visibilityState === 'visible') void load();
  }, REFRESH_MS);
  return () => clearInterval(timer);
}

/**
 * @param {Tool} tool
 * @param {Instance[] | null} instances
 * @param {Set<string>} opened
 */
function toolSection(tool, instances, opened) {
  const heading = `tool-${tool.name}-title`;
  /** @param {string} name @param {import('./dom.js').Child | import('./dom.js').Child[]} value */
  const fact = (name, value) => [h('dt', {}, name), h('dd', {}, value)];
  /** @param {string} what @param {Record<string, unknown>} schema */
  const schema = (what, schema) => {
    const key = `${tool.name}\u0000${what}`;
    const details = h(
      'details',
      { class: 'schema', open: opened.has(key) },
      h('summary', {}, what),
      jsonView(schema, `${what} of ${tool.name}`),
    );
    details.addEventListener('toggle', () => {
      if (details.open) opened.add(key);
      else opened.delete(key);
    });
    return details;
  };
  const hints = Object.entries(tool.annotations ?? {}).filter(([name]) => name.endsWith('Hint'));
  return h(
    'section',
    { class: 'catalog-tool', id: `tool-${tool.name}`, 'aria-labelledby': heading, 'data-tool': tool.name },
    h(
      'h2',
      { id: heading },
      h('code', {}, tool.name),
      tool.title ? h('span', { class: 'muted' }, ` ${tool.title}`) : null,
    ),
    h('p', {}, tool.description),
    h(
      'dl',
      { class: 'facts' },
      ...fact('Retry', RETRY[tool.retry]),
      ...(tool.retry === 'conditional'
        ? fact('Idempotency key', tool.idempotencyKey === 'required' ? 'required' : 'optional')
        : []),
      ...fact('Task support', TASK_SUPPORT[tool.taskSupport]),
      ...fact('Idle clock', clock(tool.timeouts?.idleMs, 'ends it when no progress comes for')),
      ...fact('Maximum clock', clock(tool.timeouts?.maxMs, 'ends it when it has run for')),
      ...(hints.length > 0
        ? fact('Hints', hints.map(([name, value]) => `${name.replace(/Hint$/, '')}: ${String(value)}`).join(', '))
        : []),
      ...fact('Served by', servedBy(tool.name, instances)),
    ),
    schema('Input schema', tool.inputSchema),
    tool.outputSchema ? schema('Output schema', tool.outputSchema) : null,
  );
}

/** @param {number | undefined} ms @param {string} what */
function clock(ms, what) {
  // The server caps every tool's clocks (TASKGATE_MAX_CALL_MS, TASKGATE_MAX_IDLE_MS): the lower applies.
  if (ms === undefined) return h('span', { class: 'muted' }, "none of its own (the server's cap, if one is set)");
  const seconds = ms / 1000;
  return `${what} ${seconds < 120 ? `${seconds} s` : `${Math.round(seconds / 60)} min`}`;
}

/**
 * The live workers serving the tool, each with its slots for it and its definition's
 * fingerprint; two fingerprints under one name is version skew (a rolling deploy).
 * @param {string} name
 * @param {Instance[] | null} instances
 */
function servedBy(name, instances) {
  if (instances === null) return h('span', { class: 'muted' }, 'needs the admin scope');
  const serving = instances.flatMap((instance) => {
    if (instance.kind !== 'worker' || instance.state !== 'live') return [];
    const tool = instance.tools.find((entry) => entry.name === name);
    return tool ? [{ instance, tool }] : [];
  });
  if (serving.length === 0)
    return h('span', { class: 'muted' }, 'no live worker (listed while a recent one may come back)');
  const fingerprints = new Set(serving.map((entry) => entry.tool.fingerprint));
  return h(
    'ul',
    { class: 'tool-list' },
    ...serving.map(({ instance, tool }) =>
      h(
        'li',
        { class: fingerprints.size > 1 ? 'skewed' : '' },
        shortId(instance.id, { label: 'worker' }),
        ' ',
        tool.concurrency === null ? h('span', { class: 'muted' }, 'slots not reported') : `${tool.concurrency} at once`,
        ' ',
        h('span', { class: 'muted', title: tool.fingerprint }, tool.fingerprint.slice(0, 8)),
        fingerprints.size > 1 ? h('span', { class: 'badge skew' }, 'skew') : null,
      ),
    ),
  );
}
