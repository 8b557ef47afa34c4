import { templateVariables } from '@taskgate/sdk';

/**
 * A level-1 RFC 6570 template (`notes://{folder}/{id}`) turned into a matcher. Simple expansion
 * percent-encodes everything but the unreserved characters, so a URI the template produced has
 * only unreserved or %XX characters where a variable was: that is all a variable matches, and it
 * is handed over decoded — so it may hold a "/" (from %2F): a handler that makes a path of it must
 * check it. A variable that does not decode (a lone surrogate's bytes), or decodes to a NUL, is no
 * match.
 */
export class UriTemplate {
  readonly template: string;
  readonly variables: readonly string[];
  readonly #pattern: RegExp;

  constructor(template: string) {
    const variables = templateVariables(template);
    if ('problem' in variables) throw new TypeError(`URI template ${template}: ${variables.problem}`);
    this.template = template;
    this.variables = variables;
    const source = template
      .split(/\{[A-Za-z0-9_]+\}/)
      .map((literal) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('((?:[A-Za-z0-9\\-._~]|%[0-9A-Fa-f]{2})+)');
    this.#pattern = new RegExp(`^${source}$`);
  }

  /** The decoded variables when `uri` is one of the template's URIs, else null. */
  match(uri: string): Record<string, string> | null {
    const found = this.#pattern.exec(uri);
    if (found === null) return null;
    const values: Record<string, string> = {};
    for (const [index, name] of this.variables.entries()) {
      let value: string;
      try {
        value = decodeURIComponent(found[index + 1] as string);
      } catch {
        return null;
      }
      // NUL reaches no handler, as in every other input (a `%00` is the only way to spell one here).
      if (value.includes('\u0000')) return null;
      values[name] = value;
    }
    return values;
  }
}
