// @ts-check
// The console's shell: a router over history.pushState (every page has its own URL and
// reloads), the sign-in gate, the navigation and sign-out. Each page is a module with
// `render(main, params)` that returns what ends it (its live stream) when the page changes.
import { request, session, setActingTenant, setSession } from './api.js';
import { h, problemBox, refreshTimes, replaceChildren } from './dom.js';

/**
 * @typedef {{ url: URL, match: RegExpMatchArray, navigate: (href: string) => void }} PageContext
 * @typedef {{ render(main: HTMLElement, context: PageContext): (void | (() => void)) | Promise<void | (() => void)>, title?: string }} PageModule
 */

/** @type {readonly [RegExp, string, () => Promise<PageModule>][]} */
const ROUTES = [
  [/^\/ui\/?$/, 'tasks', () => import('./tasks-page.js')],
  [/^\/ui\/tasks\/([^/]+)\/?$/, 'tasks', () => import('./task-page.js')],
  [/^\/ui\/tools\/?$/, 'tools', () => import('./tools-page.js')],
  [/^\/ui\/catalog\/?$/, 'catalog', () => import('./catalog-page.js')],
  [/^\/ui\/workers\/?$/, 'workers', () => import('./workers-page.js')],
  [/^\/ui\/reconciliation(?:\/([^/]+))?\/?$/, 'reconciliation', () => import('./reconciliation-page.js')],
  [/^\/ui\/outbox\/?$/, 'outbox', () => import('./outbox-page.js')],
  [/^\/ui\/tenants\/?$/, 'tenants', () => import('./tenants-page.js')],
  [/^\/ui\/login\/?$/, '', () => import('./login-page.js')],
];

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
/** @type {(() => void) | void} */
let leave;
let generation = 0;

/** Sections an operator's page shows without a tenant: the fleet's, and the choice of tenant. */
const TENANTLESS = new Set(['workers', 'tenants', '']);
/** The tenant an operator's pages act for: from the URL, kept while moving between pages. */
let actingTenant = /** @type {string | null} */ (null);

/** @param {string} href */
function navigate(href) {
  history.pushState(null, '', href);
  void show();
}

async function show() {
  const mine = ++generation;
  shown = location.pathname + location.search;
  if (typeof leave === 'function') leave();
  leave = undefined;
  const url = new URL(location.href);
  const route = ROUTES.find(([pattern]) => pattern.test(url.pathname));
  // The page's module loads while the session is asked for (both are needed before anything shows).
  const [who, page] = await Promise.all([
    session().catch((error) => /** @type {Error} */ (error)),
    route?.[2]().catch((error) => /** @type {Error} */ (error)),
  ]);
  if (mine !== generation) return;
  if (who instanceof Error) {
    replaceChildren(main, h('h1', {}, 'Taskgate'), problemBox(who));
    return;
  }
  if (who.operator) {
    // The URL names the tenant (a link carries it, a reload keeps it); a link within the console
    // that does not is given the one the page had.
    const named = url.searchParams.get('tenant');
    if (named !== null && named !== '') actingTenant = named;
    else if (actingTenant !== null && route?.[1] !== 'tenants') {
      url.searchParams.set('tenant', actingTenant);
      history.replaceState(null, '', url.pathname + url.search + url.hash);
    }
    setActingTenant(actingTenant);
    if (actingTenant === null && route !== undefined && !TENANTLESS.has(route[1])) {
      const next = url.pathname + url.search;
      history.replaceState(null, '', `/ui/tenants?next=${encodeURIComponent(next)}`);
      return show();
    }
  } else {
    setActingTenant(null);
  }
  shown = location.pathname + location.search;
  showWho(who);
  if (route === undefined) {
    document.title = 'Not found · Taskgate';
    replaceChildren(
      main,
      h('h1', {}, 'No such page'),
      h(
        'p',
        {},
        'The console has no page at ',
        h('code', {}, url.pathname),
        '. ',
        h('a', { href: '/ui', 'data-link': '' }, 'Go to the tasks'),
        '.',
      ),
    );
    return;
  }
  const [pattern, section] = route;
  const isLogin = section === '';
  // No session: show nothing of the data, lead to sign-in (and back here after it).
  if (who.required && !who.signedIn && !isLogin) {
    const next = url.pathname + url.search;
    history.replaceState(null, '', `/ui/login?next=${encodeURIComponent(next)}`);
    return show();
  }
  for (const link of document.querySelectorAll('#nav a')) {
    if (link instanceof HTMLElement && link.dataset.section === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (page === undefined || page instanceof Error) {
    replaceChildren(main, problemBox(page ?? new Error('the page did not load')));
    return;
  }
  const match = /** @type {RegExpMatchArray} */ (url.pathname.match(pattern));
  main.replaceChildren();
  try {
    leave = await page.render(main, { url, match, navigate });
  } catch (error) {
    replaceChildren(main, problemBox(error));
  }
  if (mine !== generation && typeof leave === 'function') leave();
}

/** @param {import('./api.js').Session} who */
function showWho(who) {
  const box = /** @type {HTMLElement} */ (document.getElementById('who'));
  const tenant = /** @type {HTMLElement} */ (document.getElementById('who-tenant'));
  const signOut = /** @type {HTMLButtonElement} */ (document.getElementById('sign-out'));
  const nav = /** @type {HTMLElement} */ (document.getElementById('nav'));
  box.hidden = !who.signedIn;
  nav.hidden = !who.signedIn;
  if (who.operator) {
    replaceChildren(
      tenant,
      'Operator',
      actingTenant === null ? '' : [' · tenant ', h('code', {}, actingTenant)],
      ' ',
      h('a', { href: '/ui/tenants', 'data-link': '' }, actingTenant === null ? 'Choose a tenant' : 'Switch'),
    );
  } else {
    tenant.textContent = who.tenant === null ? '' : `Tenant ${who.tenant}`;
  }
  signOut.hidden = !who.required;
}

document.addEventListener('click', (event) => {
  const target = event.target instanceof Element ? event.target.closest('a[data-link]') : null;
  if (!(target instanceof HTMLAnchorElement)) return;
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey)
    return;
  if (target.origin !== location.origin) return;
  event.preventDefault();
  navigate(target.pathname + target.search);
});
// A link within the page (the catalog's index) changes only the fragment: the page stays.
let shown = '';
window.addEventListener('popstate', () => {
  if (location.pathname + location.search === shown) return;
  void show();
});

document.getElementById('sign-out')?.addEventListener('click', async () => {
  try {
    await request('DELETE', '/ui/session');
  } finally {
    setSession(null);
    navigate('/ui/login');
  }
});

setInterval(refreshTimes, 10_000);
void show();
