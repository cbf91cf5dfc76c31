import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, onTestFinished } from 'vitest';

/** Helpers for the dashboard's end-to-end tests: the built UI, Debian's Chromium, screenshots. */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const UI_INDEX = join(ROOT, 'dist', 'ui', 'index.html');

/** Debian's `chromium` package; HOOKLINE_CHROMIUM points elsewhere. `.ci/run` installs it when missing. */
export const CHROMIUM_PATH = process.env.HOOKLINE_CHROMIUM ?? '/usr/bin/chromium';

export const ARTIFACTS_DIR = join(ROOT, 'test-artifacts', 'dashboard');
const README_SCREENSHOTS_DIR = join(ROOT, 'docs', 'screenshots');

/** The two widths the dashboard is checked at: a laptop, and a phone held upright. */
export const WIDE = { width: 1280, height: 860 };
export const NARROW = { width: 390, height: 844 };

function newestMtime(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Builds dist/ui (`node scripts/build-ui.mjs`, well under a second) when it is missing or older than web/ or src/sdk. */
export function ensureUiBuilt(): void {
  const built = existsSync(UI_INDEX) ? statSync(UI_INDEX).mtimeMs : 0;
  if (built >= Math.max(newestMtime(join(ROOT, 'web')), newestMtime(join(ROOT, 'src', 'sdk')))) return;
  const result = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-ui.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`building the dashboard failed:\n${result.stdout}\n${result.stderr}`);
}

/**
 * Headless Chromium from the system package (playwright-core downloads no browser). Playwright
 * gives every launch a fresh temporary profile (its own --user-data-dir), removed on close.
 * `javaScript: false` turns scripting off in the browser's settings, as a user would: unlike
 * Playwright's per-context `javaScriptEnabled: false`, the page then renders its `<noscript>`.
 */
/**
 * One Chromium for a whole test file: the UI built if stale and the browser launched before its
 * tests, closed after them. Call it at the file's top level; the getter gives the browser.
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    ensureUiBuilt();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error('useChromium: the browser is launched in beforeAll; use it inside a test');
    return browser;
  };
}

export async function launchChromium(options: { javaScript?: boolean } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's package (apt-get install -y chromium) or set HOOKLINE_CHROMIUM`);
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...(options.javaScript === false ? ['--blink-settings=scriptEnabled=false'] : [])],
  });
}

/**
 * Saves a screenshot to test-artifacts/dashboard/<name>.png. With HOOKLINE_UPDATE_SCREENSHOTS=1
 * (`npm run screenshots`) it is also copied to docs/screenshots/, the README's pictures; a plain
 * test run leaves those alone. `readme: false` keeps an intermediate state out of the README's set.
 */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean; readme?: boolean } = {}): Promise<void> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name}.png`);
  // Chromium now and then answers "Unable to capture screenshot" while a frame is being produced
  // (right after a navigation); a second try gets the frame.
  for (let attempt = 1; ; attempt++) {
    try {
      await page.screenshot({ path, fullPage: options.fullPage ?? false, animations: 'disabled', caret: 'hide' });
      break;
    } catch (error) {
      if (attempt === 3 || !/Unable to capture screenshot/.test(String(error))) throw error;
      await page.waitForLoadState('load');
    }
  }
  if (process.env.HOOKLINE_UPDATE_SCREENSHOTS === '1' && options.readme !== false) {
    mkdirSync(README_SCREENSHOTS_DIR, { recursive: true });
    copyFileSync(path, join(README_SCREENSHOTS_DIR, `${name}.png`));
  }
}

/** Waits until the page's delivery table shows exactly `count` rows (0: the "no deliveries" note). */
export async function waitForRows(page: Page, count: number, timeoutMs = 15_000): Promise<string[]> {
  await page.waitForFunction((expected) => document.querySelectorAll('main tr[data-delivery-id]').length === expected, count, { timeout: timeoutMs });
  return page.locator('main tr[data-delivery-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-delivery-id')!));
}

/** Waits until the overview shows `count` deliveries in `status`, in the table and on the diagram. */
export async function waitForStateCount(page: Page, status: string, count: number, timeoutMs = 15_000): Promise<void> {
  await page.waitForFunction(
    ([state, expected]) =>
      document.querySelector(`tr[data-status="${state}"] td[data-count]`)?.getAttribute('data-count') === expected &&
      document.querySelector(`.diagram g.state[data-state="${state}"]`)?.getAttribute('data-count') === expected,
    [status, String(count)] as const,
    { timeout: timeoutMs },
  );
}

/** A fresh browser context (its own session storage), closed when the test ends, whose page errors and CSP violations are collected in `problems`. */
export async function openPage(on: Browser): Promise<{ context: BrowserContext; page: Page; problems: string[]; urls: string[] }> {
  const context = await on.newContext({ viewport: WIDE, reducedMotion: 'reduce' });
  onTestFinished(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  const urls: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Uncaught/i.test(message.text())) problems.push(`console: ${message.text()}`);
  });
  page.on('request', (request) => urls.push(request.url()));
  return { context, page, problems, urls };
}

export async function signIn(page: Page, baseUrl: string, apiKey: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('Project API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Delivery states' }).waitFor();
}
