import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';

/**
 * Debian's Chromium, driven by playwright-core (no browser download): where .ci/run installs it
 * (apt-get install chromium). CHROMIUM_PATH overrides it on a machine that keeps it elsewhere.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `the console's browser tests need Chromium at ${CHROMIUM_PATH}: apt-get install chromium (as .ci/run does), or set CHROMIUM_PATH`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: FLAGS, headless: true });
}

/** What went wrong on a page while a test used it: every entry fails the test that reads it. */
export interface PageWatch {
  readonly page: Page;
  /** Script errors, console errors, failed requests and requests that left the origin. */
  readonly problems: string[];
  /** Every request the page made, by URL. */
  readonly requests: string[];
}

/**
 * A page in its own context that records what a console page must never do: a script error, an
 * error in the console, a request that failed or left `origin` (no CDN, no fonts from elsewhere).
 */
export async function watchedPage(
  browser: Browser,
  origin: string,
  options: { colorScheme?: 'light' | 'dark'; viewport?: { width: number; height: number } } = {},
): Promise<PageWatch & { context: BrowserContext }> {
  const context = await browser.newContext({
    colorScheme: options.colorScheme ?? 'light',
    viewport: options.viewport ?? { width: 1280, height: 900 },
  });
  const page = await context.newPage();
  // A wait that will not end fails with what it waited for, before the test's own timeout hides it.
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  const requests: string[] = [];
  page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  page.on('request', (request) => {
    requests.push(request.url());
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith('data:')) problems.push(`request left the origin: ${url}`);
  });
  page.on('requestfailed', (request) => {
    // A stream the page closed itself (navigating away) is aborted by the browser, not failed.
    const failure = request.failure()?.errorText ?? '';
    if (failure === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${request.url()} ${failure}`);
  });
  return { context, page, problems, requests };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's violations of impact serious or critical on the page as it is now. */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (a script tag
  // would be refused by it, as it should be).
  await page.evaluate(AXE_SOURCE);
  const results = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe;
    return axe.run();
  })) as { violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[] };
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.impact} ${violation.id}: ${violation.help} (${violation.nodes.map((node) => JSON.stringify(node.target)).join(', ')})`,
    );
}

/** Whether the element is the page's focused one. */
export function isFocused(locator: Locator): Promise<boolean> {
  // Typed by hand: the tests are compiled without the DOM's types.
  return locator.evaluate(
    (element: { readonly ownerDocument: { readonly activeElement: unknown } }) =>
      element === element.ownerDocument.activeElement,
  );
}
