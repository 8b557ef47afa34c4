// @ts-check
// The console's one way to the REST API: same-origin fetches with the session cookie, the CSRF
// header on every request that changes state, and problem+json turned into errors that say why.

/**
 * @typedef {{ required: boolean, signedIn: boolean, tenant: string | null, operator: boolean, scopes: string[] | null, csrf: string | null, expiresAt: string | null }} Session
 */

/** A refusal or failure from the API: the problem document's code and detail. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} detail
   */
  constructor(status, code, detail) {
    super(detail);
    this.status = status;
    this.code = code;
  }
}

/** @type {Session | null} */
let current = null;

/** Who this browser is signed in as (asked once per page load, and after sign-in or out). */
export async function session(refresh = false) {
  if (current === null || refresh) current = /** @type {Session} */ (await request('GET', '/ui/session'));
  return current;
}

/** @param {Session | null} value */
export function setSession(value) {
  current = value;
}

/** The tenant an operator's session acts for on this page (from its URL), or null. */
let acting = /** @type {string | null} */ (null);

/** @param {string | null} tenant */
export function setActingTenant(tenant) {
  acting = tenant;
}

/**
 * A /v1 path as this page sends it: an operator's requests name their tenant, in the query (an
 * EventSource can send no header, and one way for every request is simpler to check).
 * @param {string} path
 */
export function apiPath(path) {
  if (acting === null || !path.startsWith('/v1/')) return path;
  return `${path}${path.includes('?') ? '&' : '?'}tenant=${encodeURIComponent(acting)}`;
}

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {Promise<unknown>}
 */
export async function request(method, path, body) {
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && current?.csrf) headers['x-taskgate-csrf'] = current.csrf;
  let response;
  try {
    response = await fetch(apiPath(path), {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'TG_NETWORK', 'The server cannot be reached. Is Taskgate running?');
  }
  if (response.status === 204) return null;
  const text = await response.text();
  /** @type {any} */
  let parsed = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    throw new ApiError(
      response.status,
      typeof parsed?.code === 'string' ? parsed.code : `HTTP_${response.status}`,
      typeof parsed?.detail === 'string' ? parsed.detail : `The server answered ${response.status}.`,
    );
  }
  return parsed;
}

/** @param {string} path */
export const get = (path) => request('GET', path);
/** @param {string} path @param {unknown} [body] */
export const post = (path, body) => request('POST', path, body ?? {});
