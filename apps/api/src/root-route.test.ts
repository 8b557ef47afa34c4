import { describe, expect, it } from 'vitest';
import { prefersHtml } from './root-route.ts';

describe('prefersHtml', () => {
  it("takes a browser's Accept for HTML and curl's, a JSON client's or none for JSON", () => {
    expect(prefersHtml('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8')).toBe(true);
    expect(prefersHtml('text/*')).toBe(true);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml('application/json')).toBe(false);
    expect(prefersHtml('application/json, text/html;q=0.5')).toBe(false);
    expect(prefersHtml('text/html;q=0')).toBe(false);
    expect(prefersHtml(undefined)).toBe(false);
  });
});
