// Shared by the browser tests: launching Debian's chromium through playwright-core, watching
// that nothing leaves the server's origin, and failing with a readable message.

import { chromium } from 'playwright-core';

export class Failure extends Error {}

export function fail(message) {
  throw new Failure(message);
}

export function env(name) {
  const value = process.env[name];
  if (!value) {
    fail(`the environment variable ${name} is not set`);
  }
  return value;
}

// A browser on one page that records every request to another host, page errors and CSP
// violations.
export async function openBrowser(baseUrl) {
  const base = new URL(baseUrl);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({
    viewport: { width: 1400, height: 900 },
    acceptDownloads: true,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const foreign = [];
  const problems = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    // data: and blob: URLs never leave the browser.
    if (url.protocol === 'data:' || url.protocol === 'blob:' || url.protocol === 'about:') {
      return;
    }
    if (url.host !== base.host) {
      foreign.push(`${request.method()} ${request.url()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content.Security.Policy|Refused to/i.test(message.text())) {
      problems.push(`console: ${message.text()}`);
    }
  });
  return {
    browser,
    page,
    // Fails when the page asked another host for anything, threw, or broke its CSP.
    checkClean() {
      if (foreign.length) {
        fail(`requests left ${base.host}:\n  ${foreign.join('\n  ')}`);
      }
      if (problems.length) {
        fail(`the page reported problems:\n  ${problems.join('\n  ')}`);
      }
    },
  };
}

// Runs `body(step)` and exits 0 with `summary`, or non-zero with the failed step and message.
export async function run(name, body) {
  let current = 'start';
  const step = (label) => {
    current = label;
  };
  let session = null;
  try {
    const summary = await body(step, (opened) => {
      session = opened;
    });
    console.log(`${name}: ok: ${summary}`);
    process.exitCode = 0;
  } catch (error) {
    const message = error instanceof Failure ? error.message : error && error.stack ? error.stack : String(error);
    console.error(`${name}: FAILED at "${current}": ${message}`);
    if (session) {
      try {
        const shot = `/tmp/${name}-failure.png`;
        await session.page.screenshot({ path: shot, fullPage: true });
        console.error(`${name}: screenshot of the page: ${shot}`);
      } catch (_) {
        // no screenshot
      }
    }
    process.exitCode = 1;
  } finally {
    if (session) {
      await session.browser.close().catch(() => {});
    }
  }
}

// A browser for the web app's journeys, stricter than `openBrowser`: every page opened through
// it fails the run on any console error, page error, failed request, HTTP error answer or request
// to another host. `newPage(viewport, profile)` opens a tab in a named browser profile (tabs of
// one profile share a session).
export async function openApp(baseUrl) {
  const base = new URL(baseUrl);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const problems = [];
  const requests = [];
  const watch = (page, label) => {
    page.setDefaultTimeout(15000);
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (['data:', 'blob:', 'about:'].includes(url.protocol)) return;
      requests.push({ page: label, method: request.method(), path: url.pathname, at: Date.now() });
      if (url.host !== base.host) problems.push(`${label}: request to another host: ${request.method()} ${request.url()}`);
    });
    page.on('requestfailed', (request) => {
      // A download handed to the browser's download manager reads as aborted; it is not a failure.
      if (request.failure()?.errorText === 'net::ERR_ABORTED' && new URL(request.url()).pathname.startsWith('/api/v1/analytics/export/')) return;
      problems.push(`${label}: request failed: ${request.method()} ${request.url()} (${request.failure()?.errorText})`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${label}: HTTP ${response.status()} for ${response.request().method()} ${response.url()}`);
    });
    page.on('pageerror', (error) => problems.push(`${label}: page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${label}: console error: ${message.text()}`);
    });
    return page;
  };
  let opened = 0;
  // Another person's browser profile (own storage, own session), by name.
  const profiles = new Map([['main', context]]);
  return {
    browser,
    context,
    requests,
    async newPage(viewport, profile = 'main') {
      opened += 1;
      if (!profiles.has(profile)) {
        profiles.set(profile, await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true }));
      }
      const page = await profiles.get(profile).newPage();
      if (viewport) await page.setViewportSize(viewport);
      return watch(page, `tab ${opened}`);
    },
    checkClean() {
      if (problems.length) fail(`the app reported problems:\n  ${problems.join('\n  ')}`);
    },
  };
}

// Waits until the data attributes of the element matched by `selector` meet `conditions`: a
// value to equal, {min: n} (a number at least n), {has: word} (a space-separated list holding
// it) or {oneOf: [values]}. The page's CSP forbids evaluating strings, so the conditions travel as data.
export async function waitData(page, selector, conditions, what, timeout = 15000) {
  try {
    await page.waitForFunction(([s, wanted]) => {
      const element = document.querySelector(s);
      if (!element) return false;
      return Object.entries(wanted).every(([name, want]) => {
        const value = element.dataset[name];
        if (want && typeof want === 'object' && 'min' in want) return Number(value) >= want.min;
        if (want && typeof want === 'object' && 'has' in want) return (value || '').split(' ').includes(want.has);
        if (want && typeof want === 'object' && 'oneOf' in want) return want.oneOf.includes(value);
        return value === String(want);
      });
    }, [selector, conditions], { timeout });
  } catch (error) {
    const state = await page.evaluate((s) => {
      const element = document.querySelector(s);
      return element ? JSON.stringify(element.dataset) : 'absent';
    }, selector);
    const toasts = await page.$$eval('.toast', (items) => items.map((i) => i.textContent).join(' | '));
    fail(`${what}: ${selector} is ${state}, wanted ${JSON.stringify(conditions)}${toasts ? `; messages: ${toasts}` : ''} (${error.message.split('\n')[0]})`);
  }
}
