// @ts-check
// /ui/tenants: an operator's choice of the tenant its pages act for (GET /v1/tenants: the tenants
// that have tasks), or any tenant typed by name. The choice goes into the URL (?tenant=), so a
// page acting for a tenant can be linked and reloaded like any other.
import { get } from './api.js';
import { h, problemBox, replaceChildren } from './dom.js';

const TENANT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** @type {import('./app.js').PageModule['render']} */
export async function render(main, { url, navigate }) {
  document.title = 'Tenants · Taskgate';
  const next = url.searchParams.get('next');
  // Back to the page that asked, or the tasks; only a console path (no other origin, no //host).
  const target = next?.startsWith('/ui') && !next.startsWith('//') ? new URL(next, location.origin) : null;
  /** @param {string} tenant */
  const hrefFor = (tenant) => {
    const goTo = target ?? new URL('/ui', location.origin);
    goTo.searchParams.set('tenant', tenant);
    return goTo.pathname + goTo.search;
  };
  const list = h('div');
  const failure = h('div');
  const input = h('input', {
    id: 'tenant-name',
    name: 'tenant',
    type: 'text',
    required: true,
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: 63,
    list: 'tenant-names',
  });
  const names = h('datalist', { id: 'tenant-names' });
  const message = h('p', { role: 'status', class: 'muted' });
  const form = h(
    'form',
    { class: 'tenant-form' },
    h('label', { for: 'tenant-name' }, 'Tenant'),
    input,
    names,
    h('button', { type: 'submit' }, 'Open'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const tenant = input.value.trim();
    if (!TENANT.test(tenant)) {
      message.textContent = "A tenant's name is letters, digits, '.', '_' or '-', at most 63.";
      input.focus();
      return;
    }
    navigate(hrefFor(tenant));
  });
  replaceChildren(
    main,
    h('h1', {}, 'Choose a tenant'),
    h(
      'p',
      {},
      'An operator token acts for one tenant at a time. Pick one that has tasks, or type its name; the workers page needs none.',
    ),
    form,
    message,
    failure,
    list,
  );
  input.focus();
  try {
    const { tenants, next: more } = /** @type {{ tenants: string[], next: string | null }} */ (
      await get('/v1/tenants?limit=500')
    );
    replaceChildren(names, ...tenants.map((tenant) => h('option', { value: tenant })));
    replaceChildren(
      list,
      tenants.length === 0
        ? h('p', { class: 'empty' }, 'No tenant has a task yet.')
        : [
            h('h2', {}, 'Tenants with tasks'),
            h(
              'ul',
              { class: 'tenant-list' },
              ...tenants.map((tenant) =>
                h('li', {}, h('a', { href: hrefFor(tenant), 'data-link': '', 'data-tenant': tenant }, tenant)),
              ),
            ),
            more === null ? null : h('p', { class: 'muted' }, 'More tenants than these: type the name above.'),
          ],
    );
  } catch (error) {
    replaceChildren(failure, problemBox(error));
  }
}
