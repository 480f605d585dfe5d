// The web app in a real browser, as a new user: register, connect the paper broker, start a bot,
// watch its first trade arrive on the dashboard and on the chart (two tabs, no reload), close
// the position by hand, export the history as CSV, switch theme, read the dashboard at phone
// width, come back after the access token expired (refreshed without a sign-in), sign out.
//
// Environment: BASE_URL, EMAIL, PASSWORD (a new user's), ARTIFACTS (a directory for screenshots
// and the downloaded export), CHROMIUM (optional).

import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { env, fail, openApp, run, waitData } from './common.mjs';

const BASE = env('BASE_URL');
const EMAIL = env('EMAIL');
const PASSWORD = env('PASSWORD');
const ARTIFACTS = env('ARTIFACTS');
mkdirSync(ARTIFACTS, { recursive: true });

const SYMBOL = 'ETH-USD';

async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

// The platform API from outside the browser (what a TradingView alert or the test needs).
async function api(method, path, body, token) {
  const response = await fetch(`${BASE}/api/v1${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = await response.json();
  if (!payload.success) fail(`${method} ${path}: ${response.status} ${JSON.stringify(payload.error)}`);
  return payload.data;
}

const nav = (page, label) => page.click(`#nav a:text-is("${label}")`);

await run('app', async (step, opened) => {
  const app = await openApp(BASE);
  const page = await app.newPage();
  opened({ page, browser: app.browser });

  step('the app opens on the sign-in page');
  await page.goto(`${BASE}/`);
  await page.waitForSelector('#signin-form');

  step('register');
  await page.click('a[href="#/register"]');
  await page.fill('#register-form input[name=full_name]', 'Ada Trader');
  await page.fill('#register-form input[name=email]', EMAIL);
  await page.fill('#register-form input[name=password]', PASSWORD);
  await page.check('#accept-terms');
  await page.click('#register-form button[type=submit]');
  await page.waitForSelector('[data-page=dashboard]');
  await waitData(page, '#bot-line', { status: 'stopped' }, 'the new user\'s bot reads stopped');
  await waitData(page, '#positions', { state: 'ready', count: 0 }, 'no positions yet');
  await shot(page, '01-dashboard-new-user');

  step('connect the paper broker');
  await nav(page, 'Brokers');
  await waitData(page, '#brokers', { state: 'ready' }, 'the broker list loads');
  await page.selectOption('#connect-broker', 'paper');
  await page.fill('#connect-key', 'paper-key-1234');
  await page.fill('#connect-secret', 'paper-secret');
  await page.click('#connect-submit');
  await waitData(page, '#brokers', { count: 1 }, 'the paper broker is listed');
  const masked = await page.textContent('#brokers-table code');
  if (masked.includes('paper-key-1234')) fail(`the key is shown in full: ${masked}`);
  await shot(page, '02-brokers');

  step('start the bot');
  await nav(page, 'Bot');
  await page.waitForSelector('#start-form');
  await page.fill('#start-symbols', SYMBOL);
  await page.click('#start-bot');
  await waitData(page, '#bot-status-card', { status: 'running' }, 'the bot runs', 25000);
  await shot(page, '03-bot-running');

  step('open the chart in a second tab');
  const chart = await app.newPage();
  await chart.goto(`${BASE}/#/chart/${SYMBOL}`);
  await waitData(chart, '#chart', { state: 'ready', bars: { min: 1 } }, 'the chart draws candles');
  await waitData(chart, '#positions', { state: 'ready', count: 0 }, 'the chart shows no position');

  step('back on the dashboard, wait for live updates');
  await nav(page, 'Dashboard');
  await waitData(page, '#recent', { state: 'ready', count: 0 }, 'no trades yet');
  await waitData(page, '#live', { state: 'live' }, 'the live stream is connected');
  await waitData(chart, '#live', { state: 'live' }, 'the chart tab\'s live stream is connected');
  for (const p of [page, chart]) await p.evaluate(() => { window.stillLoaded = true; });

  step('a signal opens a position');
  const { access_token: token } = await api('POST', '/auth/login', { email: EMAIL, password: PASSWORD });
  const { webhook_key: key } = await api('POST', '/config/webhook-key', {}, token);
  await api('POST', '/webhooks/signals', { api_key: key, symbol: SYMBOL, action: 'buy', size_usd: 200 });
  let positionId = null;
  for (let tries = 0; !positionId && tries < 100; tries += 1) {
    const { positions } = await api('GET', `/account/positions?symbol=${SYMBOL}`, undefined, token);
    positionId = positions[0]?.position_id;
    if (!positionId) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (!positionId) fail(`no ${SYMBOL} position 10 s after the signal`);

  step('the trade appears on the dashboard without a reload');
  await waitData(page, '#positions', { count: 1 }, 'the position appears on the dashboard');
  await page.waitForSelector(`#positions-table tr[data-id="${positionId}"]`);
  await waitData(page, '#recent', { count: { min: 1 } }, 'the trade appears among the latest trades');
  await page.waitForSelector(`#recent-table tr[data-id="${positionId}"]`);

  step('the trade appears on the chart without a reload');
  await waitData(chart, '#chart', { entries: { has: positionId } }, 'the entry is marked on the chart');
  await waitData(chart, '#chart', { lines: { min: 1 } }, 'the entry price is drawn as a line');
  await waitData(chart, '#positions', { count: 1 }, 'the chart tab lists the position');
  for (const p of [page, chart]) {
    if (!(await p.evaluate(() => window.stillLoaded === true))) fail('a tab reloaded');
  }
  await shot(page, '04-dashboard-first-trade');
  await shot(chart, '05-chart-entry');

  step('close the position by hand on the chart');
  await chart.click(`button[data-action=close][data-position="${positionId}"]`);
  await chart.waitForSelector('dialog.confirm');
  await shot(chart, '06-close-confirmation');
  await chart.click('dialog.confirm button[value=confirm]');
  await waitData(chart, '#positions', { count: 0 }, 'the position is gone from the chart tab', 20000);
  await waitData(page, '#positions', { count: 0 }, 'the position is gone from the dashboard');
  const history = await api('GET', `/account/history?symbol=${SYMBOL}&status=closed`, undefined, token);
  const closed = history.trades[0];
  if (!closed || closed.exit_reason !== 'manual') fail(`the API's closed trade: ${JSON.stringify(closed)}`);
  await waitData(chart, '#chart', { exits: { has: closed.trade_id } }, 'the exit is marked on the chart');
  await shot(chart, '07-chart-exit');

  step('export the history as CSV');
  await nav(page, 'History');
  await waitData(page, '#history', { state: 'ready', count: { min: 1 } }, 'the history lists the trade');
  await page.waitForSelector(`#history-table tr[data-id="${closed.trade_id}"]`);
  await page.selectOption('#export-format', 'csv');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const file = join(ARTIFACTS, 'history-export.csv');
  await download.saveAs(file);
  const csv = readFileSync(file, 'utf8');
  const lines = csv.trim().split('\n');
  if (lines.length < 2 || !csv.includes(SYMBOL)) fail(`the export has no ${SYMBOL} trade:\n${csv}`);
  await shot(page, '08-history');

  step('performance charts the closed trade');
  await nav(page, 'Performance');
  await waitData(page, '#performance-metrics', { state: 'ready' }, 'the performance figures load');
  await waitData(page, '#equity-chart', { points: { min: 1 } }, 'the equity curve is drawn');
  await waitData(page, '#drawdown-chart', { points: { min: 1 } }, 'the drawdown is drawn');
  await waitData(page, '#daily-pnl-chart', { points: { min: 1 } }, 'the daily P&L is drawn');
  await shot(page, '09-performance');

  step('dark theme');
  await page.click('#theme');
  if ((await page.getAttribute('html', 'data-theme')) !== 'dark') fail('the theme did not change');
  await nav(page, 'Dashboard');
  await waitData(page, '#figures', { state: 'ready' }, 'the dashboard figures load');
  await shot(page, '10-dashboard-dark');

  step('the dashboard at phone width');
  const phone = await app.newPage({ width: 390, height: 844 });
  await phone.goto(`${BASE}/#/dashboard`);
  await waitData(phone, '#figures', { state: 'ready' }, 'the phone dashboard loads');
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (overflow > 0) fail(`the dashboard is ${overflow} px wider than a 390 px screen`);
  await shot(phone, '11-dashboard-phone');
  await phone.close();
  await chart.close();

  step('keyboard: Tab walks the skip link and the navigation, with a visible focus ring');
  await page.bringToFront();
  await page.focus('.skip');
  const focusTrail = [];
  for (let i = 0; i < 3; i += 1) {
    await page.keyboard.press('Tab');
    focusTrail.push(await page.evaluate(() => {
      const element = document.activeElement;
      return `${element.tagName}:${element.textContent.trim()}:${getComputedStyle(element).outlineStyle}`;
    }));
  }
  const expectedTrail = ['A:tradehost:solid', 'A:Dashboard:solid', 'A:Bot:solid'];
  if (focusTrail.join('|') !== expectedTrail.join('|')) fail(`Tab went ${JSON.stringify(focusTrail)}, expected ${JSON.stringify(expectedTrail)}`);

  step('back after the access token expired');
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('tradehost.session')));
  const exp = JSON.parse(Buffer.from(stored.access_token.split('.')[1], 'base64url').toString()).exp * 1000;
  await page.goto('about:blank');
  const wait = exp - Date.now() + 1500;
  if (wait > 60000) fail(`the access token lives ${Math.round(wait / 1000)} s; run with a short JWT_EXPIRATION_HOURS`);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
  const expired = await fetch(`${BASE}/api/v1/auth/me`, { headers: { Authorization: `Bearer ${stored.access_token}` } });
  if (expired.status !== 401) fail(`the old access token still works (${expired.status})`);
  const since = Date.now();
  await page.goto(`${BASE}/#/history`);
  await waitData(page, '#history', { state: 'ready', count: { min: 1 } }, 'the history loads with a refreshed token');
  if (await page.$('#signin-form')) fail('the app asked to sign in again');
  const refreshed = app.requests.filter((r) => r.at >= since && r.path === '/api/v1/auth/refresh');
  if (refreshed.length !== 1) fail(`expected one token refresh, saw ${refreshed.length}`);

  step('sign out');
  await page.click('#sign-out');
  await page.waitForSelector('#signin-form');
  const after = await page.evaluate(() => localStorage.getItem('tradehost.session'));
  if (after) fail('the session is still stored after signing out');

  app.checkClean();
  return `registered, traded ${SYMBOL} live on two tabs, closed by hand, exported ${lines.length - 1} rows, refreshed an expired token; screenshots in ${ARTIFACTS}`;
});
