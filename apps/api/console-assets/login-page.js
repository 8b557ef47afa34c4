// @ts-check
// /ui/login: a token (static, or an OAuth access token) in a password field becomes a
// server-side session; the cookie that names it is HttpOnly and never holds the token.
import { ApiError, request, session, setSession } from './api.js';
import { h, replaceChildren } from './dom.js';

/** Where to go after signing in: a console page of this origin only (never an open redirect). */
function nextPage(/** @type {URL} */ url) {
  const next = url.searchParams.get('next');
  return next !== null && /^\/ui(?:[/?]|$)/.test(next) && !next.startsWith('/ui/login') ? next : '/ui';
}

/** @type {import('./app.js').PageModule['render']} */
export async function render(main, { url, navigate }) {
  document.title = 'Sign in · Taskgate';
  const who = await session();
  if (!who.required || who.signedIn) {
    replaceChildren(
      main,
      h('h1', {}, 'Sign in'),
      h(
        'p',
        {},
        who.required
          ? `You are signed in as tenant ${who.tenant}. `
          : 'This server asks for no token: there is nothing to sign in to. ',
        h('a', { href: nextPage(url), 'data-link': '' }, 'Continue to the console'),
        '.',
      ),
    );
    return;
  }
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'current-password',
    required: true,
    spellcheck: 'false',
    'aria-describedby': 'token-help',
  });
  const error = h('p', { class: 'problem', role: 'alert', hidden: true });
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'login', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'Sign in to Taskgate'),
    h('label', { for: 'token' }, 'Token'),
    input,
    h(
      'p',
      { id: 'token-help', class: 'muted' },
      'A token from TASKGATE_TOKENS, or an OAuth access token for this server. It is checked once and not kept: the browser gets a session instead.',
    ),
    error,
    button,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    button.disabled = true;
    error.hidden = true;
    try {
      const opened = /** @type {import('./api.js').Session} */ (
        await request('POST', '/ui/session', { token: input.value })
      );
      input.value = '';
      setSession(opened);
      navigate(nextPage(url));
    } catch (failure) {
      error.hidden = false;
      error.textContent =
        failure instanceof ApiError && failure.status === 401
          ? `That token is not accepted: ${failure.message}`
          : failure instanceof Error
            ? failure.message
            : String(failure);
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  replaceChildren(main, form);
  input.focus();
}
