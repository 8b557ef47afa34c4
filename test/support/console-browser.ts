import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { launchChromium, type PageWatch, watchedPage } from './browser.ts';

export type PageOptions = Parameters<typeof watchedPage>[2];

/** One Chromium for a test file, and the one watched page a test uses at a time. */
export interface ConsoleBrowser {
  readonly browser: Browser;
  /** The page the running test uses (its requests, its problems), or null before it opens one. */
  readonly watch: (PageWatch & { readonly context: BrowserContext }) | null;
  /** A watched page, not yet anywhere: for a test that goes somewhere itself. */
  page(options?: PageOptions): Promise<Page>;
  /** A watched page at `path` on the console's origin. */
  open(path: string, options?: PageOptions): Promise<Page>;
  /**
   * A watched page signed in through /ui/login with `token`, sent on to `next`; resolves once it
   * is at `landsOn` (default `next`; null: wherever sign-in leads, for the caller to await).
   */
  signIn(token: string, next: string, options?: PageOptions & { readonly landsOn?: string | null }): Promise<Page>;
  /**
   * Ends the page now, and fails unless it kept every rule (for a test that walks many pages);
   * `expected`: the problems the test caused on purpose (a 404 it asked for).
   */
  closePage(expected?: (problem: string) => boolean): Promise<void>;
  /** Takes back the page's problems so far that the test caused on purpose (a refused sign-in's 401). */
  forgive(expected: (problem: string) => boolean): void;
}

/**
 * The harness every console test file shares: Chromium launched before the file's tests and
 * closed after them; after each test its page is closed and the test fails if the page broke a
 * rule (a script error, a failed request, a request to another origin). `origin` is read when a
 * page opens: the file's server is listening by then.
 */
export function useConsoleBrowser(origin: () => string): ConsoleBrowser {
  let browser: Browser | null = null;
  let watch: (PageWatch & { context: BrowserContext }) | null = null;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterEach(async () => {
    const problems = watch?.problems ?? [];
    await watch?.context.close();
    watch = null;
    expect(problems).toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
  });
  const launched = () => {
    if (browser === null) throw new Error('the browser is launched before the tests run (beforeAll)');
    return browser;
  };
  const harness: ConsoleBrowser = {
    get browser() {
      return launched();
    },
    get watch() {
      return watch;
    },
    async page(options = {}) {
      // One page per test: a second one closes the first, checked as afterEach would.
      if (watch !== null) await harness.closePage();
      watch = await watchedPage(launched(), origin(), options);
      return watch.page;
    },
    async open(path, options = {}) {
      const page = await harness.page(options);
      await page.goto(`${origin()}${path}`);
      return page;
    },
    async signIn(token, next, options = {}) {
      const { landsOn, ...pageOptions } = options;
      const page = await harness.page(pageOptions);
      await page.goto(`${origin()}/ui/login?next=${encodeURIComponent(next)}`);
      await page.getByLabel('Token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      if (landsOn !== null) await page.waitForURL(`${origin()}${landsOn ?? next}`);
      return page;
    },
    forgive(expected) {
      const problems = watch?.problems;
      if (problems) problems.splice(0, problems.length, ...problems.filter((problem) => !expected(problem)));
    },
    async closePage(expected = () => false) {
      const problems = (watch?.problems ?? []).filter((problem) => !expected(problem));
      await watch?.context.close();
      watch = null;
      expect(problems).toEqual([]);
    },
  };
  return harness;
}
