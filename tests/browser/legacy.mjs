// A client written for the ORIGINAL backend, served by tradehost from its own origin
// (TRADEHOST_WEB_DIR=tests/browser/legacy-client), driven in a real browser: register, dashboard,
// trading toggle, brokers, login. The client (legacy-client/) is a fixture that reproduces the
// original's documented behaviour (companion-shapes.md A.17/A.18) and knows nothing of tradehost.
//
// Environment: BASE_URL, EMAIL (not yet registered), PASSWORD, BROKER_DONE_FILE, VENUE_API_KEY and
// VENUE_API_SECRET (keys of the Binance simulator the server's binance plugin is pointed at),
// CHROMIUM (optional). Half-way, once the user exists, the script prints a line READY_FOR_BROKER and waits
// for the file BROKER_DONE_FILE to exist: the Rust test (tests/tests/browser_legacy.rs) connects the
// paper broker for the user through the API meanwhile (the original's broker form offers only real
// exchanges).

import { existsSync } from 'node:fs';

import { env, fail, openBrowser, run } from './common.mjs';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `check` (in node) until it is true, or fails with `what`.
async function until(check, what, ms = 15000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) {
      fail(`timed out waiting for ${what}`);
    }
    await sleep(50);
  }
}

// Waits until the element's trimmed text is `expected`.
async function expectText(page, selector, expected, what) {
  try {
    await page.waitForFunction(
      ([s, value]) => document.querySelector(s)?.textContent.trim() === value,
      [selector, expected],
      { timeout: 10000 },
    );
  } catch (_) {
    const shown = await page.$eval(selector, (e) => e.textContent.trim()).catch(() => '(no element)');
    fail(`${what}: ${selector} shows "${shown}", expected "${expected}"`);
  }
}

async function expectVisible(page, selector, visible, what) {
  try {
    await page.waitForSelector(selector, { state: visible ? 'visible' : 'hidden', timeout: 10000 });
  } catch (_) {
    fail(`${what}: ${selector} is ${visible ? 'not visible' : 'still visible'}`);
  }
}

const path = (response) => new URL(response.url()).pathname;

// The response to `method path`, and the click that causes it.
async function clickFor(page, selector, method, route) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => path(r) === route && r.request().method() === method, { timeout: 10000 }),
    page.click(selector),
  ]);
  return response;
}

async function brokerNames(page) {
  return page.$$eval('#brokers-list li[data-broker]', (items) => items.map((li) => li.dataset.broker));
}

// Opens the Brokers tab (which reloads the list) and waits until it shows `expected`.
async function expectBrokers(page, expected, what) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => path(r) === '/api/user/brokers', { timeout: 10000 }),
    page.click('#tab-brokers'),
  ]);
  if (response.status() !== 200) {
    fail(`${what}: GET /api/user/brokers answered ${response.status()}: ${await response.text()}`);
  }
  await expectText(page, '#broker-count', String(expected.length), what);
  const names = await brokerNames(page);
  if (JSON.stringify(names) !== JSON.stringify(expected)) {
    fail(`${what}: the Brokers tab lists ${JSON.stringify(names)}, expected ${JSON.stringify(expected)}`);
  }
  await expectVisible(page, '#brokers-empty', expected.length === 0, what);
}

async function expectTrading(page, on, engine, what) {
  await expectText(page, '#trading-status-text', on ? 'Trading ON' : 'Trading OFF', what);
  await expectText(page, '#engine-status', engine, what);
  if ((await page.isChecked('#trading-toggle')) !== on) {
    fail(`${what}: the toggle is ${on ? 'off' : 'on'}`);
  }
}

await run('legacy', async (step, opened) => {
  const baseUrl = env('BASE_URL').replace(/\/$/, '');
  const origin = new URL(baseUrl).origin;
  const email = env('EMAIL');
  const password = env('PASSWORD');
  const doneFile = env('BROKER_DONE_FILE');
  const venueKey = env('VENUE_API_KEY');
  const venueSecret = env('VENUE_API_SECRET');

  step('open the browser');
  const session = await openBrowser(baseUrl);
  opened(session);
  const { page } = session;

  // Every dialog, answered with OK (confirm() included).
  const dialogs = [];
  page.on('dialog', async (dialog) => {
    dialogs.push({ type: dialog.type(), message: dialog.message() });
    await dialog.accept();
  });
  const nextDialog = async (seen, what) => {
    await until(() => dialogs.length > seen, what, 10000);
    return dialogs[seen];
  };
  // The client's own error logs for a response it could not use.
  const clientErrors = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /^Error loading/.test(message.text())) {
      clientErrors.push(message.text());
    }
  });
  // Every request: its origin, and the API calls' method, path and headers.
  const requests = [];
  const api = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    requests.push(url.origin);
    if (url.pathname.startsWith('/api/')) {
      api.push({ method: request.method(), path: url.pathname, headers: request.headers(), body: request.postData() });
    }
  });
  const safety = [];
  const assets = {};
  page.on('response', (response) => {
    const route = path(response);
    if (route === '/api/safety/status') {
      safety.push({ status: response.status(), auth: response.request().headers().authorization });
    } else if (route.startsWith('/static/')) {
      assets[route] = response.status();
    }
  });

  step('open the client at /');
  const opening = await page.goto(`${baseUrl}/`);
  if (!opening || opening.status() !== 200 || !/text\/html/.test(opening.headers()['content-type'] || '')) {
    fail(`GET / answered ${opening ? `${opening.status()} ${opening.headers()['content-type']}` : 'nothing'}`);
  }
  await expectVisible(page, '#login-form', true, 'the auth screen');
  await expectVisible(page, '#dashboard-screen', false, 'the auth screen');
  for (const asset of ['/static/css/style.css', '/static/js/app.js']) {
    if (assets[asset] !== 200) {
      fail(`the relative asset ../${asset.slice(1)} answered ${assets[asset]}`);
    }
  }
  const base = await page.evaluate(() => API_BASE_URL);
  if (base !== origin) {
    fail(`API_BASE_URL is ${base}, the page's origin ${origin}`);
  }

  step('register through the form, asking for the pro tier');
  await page.click('#show-register');
  await page.fill('#register-email', email);
  await page.fill('#register-password', password);
  await page.selectOption('#register-tier', 'pro');
  const registered = await clickFor(page, '#register-submit', 'POST', '/api/auth/register');
  const sent = JSON.parse(registered.request().postData());
  if (sent.subscription_tier !== 'pro') {
    fail(`the form sent ${JSON.stringify(sent)}`);
  }
  if (registered.status() !== 200) {
    fail(`POST /api/auth/register answered ${registered.status()}: ${await registered.text()}`);
  }
  const answer = await registered.json();

  step('the dashboard after registering');
  await expectVisible(page, '#dashboard-screen', true, 'after registering');
  await expectText(page, '#user-email', email, 'the profile');
  await expectText(page, '#user-tier', 'free', 'the tier (paid tiers only come through billing)');
  const token = await page.evaluate(() => localStorage.getItem('nija_token'));
  if (!token || token !== answer.access_token) {
    fail(`localStorage.nija_token is ${JSON.stringify(token)}, not the access_token of the answer`);
  }
  await expectText(page, '#total-trades', '0', 'the statistics');
  await expectText(page, '#win-rate', '0.0%', 'the statistics');
  await expectText(page, '#total-pnl', '$0.00', 'the statistics');
  await expectText(page, '#active-positions', '0', 'the statistics');
  await expectTrading(page, false, 'not_initialized', 'the status of a new user');
  await expectText(page, '#last-activity', 'Never', 'the status of a new user');

  step('trading ON without a broker fails and reverts');
  let seen = dialogs.length;
  const refused = await clickFor(page, '#trading-toggle', 'POST', '/api/start_bot');
  if (refused.status() !== 400) {
    fail(`POST /api/start_bot without a broker answered ${refused.status()}: ${await refused.text()}`);
  }
  const startCall = api.findLast((call) => call.path === '/api/start_bot');
  if (startCall.body || startCall.headers['content-type'] !== 'application/json') {
    fail(`start_bot was sent as ${JSON.stringify(startCall)}`);
  }
  let dialog = await nextDialog(seen, 'the alert of a refused start');
  if (dialog.type !== 'alert' || !/Failed to toggle trading/.test(dialog.message)) {
    fail(`after a refused start the page showed ${JSON.stringify(dialog)}`);
  }
  await expectTrading(page, false, 'not_initialized', 'after a refused start');

  step('the test connects the paper broker');
  console.log('READY_FOR_BROKER');
  await until(() => existsSync(doneFile), `${doneFile} (the paper broker connected by the Rust test)`, 30000);

  step('reload: paper in the Brokers tab');
  await page.reload();
  await expectVisible(page, '#dashboard-screen', true, 'after a reload');
  await expectText(page, '#user-email', email, 'after a reload');
  await expectBrokers(page, ['paper'], 'with paper connected');

  step('trading ON');
  await page.click('#tab-dashboard');
  await expectTrading(page, false, 'not_initialized', 'before the start');
  const started = await clickFor(page, '#trading-toggle', 'POST', '/api/start_bot');
  if (started.status() !== 200) {
    fail(`POST /api/start_bot answered ${started.status()}: ${await started.text()}`);
  }
  await page.waitForResponse((r) => path(r) === '/api/status', { timeout: 5000 });
  await expectTrading(page, true, 'running', 'a second after the start');

  step('last activity is a date');
  // The bot scans every 0.2 s; the status is read on each dashboard load.
  let activity = 'Never';
  for (let attempt = 0; attempt < 20 && activity === 'Never'; attempt++) {
    await sleep(300);
    await page.reload();
    await expectTrading(page, true, 'running', 'after a reload while running');
    activity = (await page.textContent('#last-activity')).trim();
  }
  if (activity === 'Never' || /invalid/i.test(activity)) {
    fail(`#last-activity shows "${activity}" while the bot runs`);
  }

  step('trading OFF');
  const stopped = await clickFor(page, '#trading-toggle', 'POST', '/api/stop_bot');
  if (stopped.status() !== 200) {
    fail(`POST /api/stop_bot answered ${stopped.status()}: ${await stopped.text()}`);
  }
  await page.waitForResponse((r) => path(r) === '/api/status', { timeout: 5000 });
  await expectTrading(page, false, 'stopped', 'a second after the stop');

  step('binance with a secret the venue refuses fails and changes nothing');
  await expectBrokers(page, ['paper'], 'before adding binance');
  await page.selectOption('#broker-name', 'binance');
  await page.fill('#broker-api-key', venueKey);
  await page.fill('#broker-api-secret', 'not-the-secret');
  seen = dialogs.length;
  const refusedVenue = await clickFor(page, '#add-broker-submit', 'POST', '/api/user/brokers/binance');
  const venueSent = JSON.parse(refusedVenue.request().postData());
  if (JSON.stringify(Object.keys(venueSent).sort()) !== '["api_key","api_secret"]') {
    fail(`the broker form sent ${JSON.stringify(venueSent)}`);
  }
  if (refusedVenue.ok()) {
    fail(`POST /api/user/brokers/binance with a wrong secret answered ${refusedVenue.status()}: ${await refusedVenue.text()}`);
  }
  const refusedDetail = (await refusedVenue.json()).detail;
  if (typeof refusedDetail !== 'string' || !refusedDetail) {
    fail(`the refusal of binance has no string detail: ${await refusedVenue.text()}`);
  }
  dialog = await nextDialog(seen, 'the alert of a refused broker');
  if (dialog.type !== 'alert' || dialog.message !== 'Failed to add broker credentials. Please try again.') {
    fail(`after a refused broker the page showed ${JSON.stringify(dialog)}`);
  }
  await expectBrokers(page, ['paper'], 'after the refused binance');

  step("binance with the venue's keys connects (the venue is a local simulator)");
  await page.selectOption('#broker-name', 'binance');
  await page.fill('#broker-api-key', venueKey);
  await page.fill('#broker-api-secret', venueSecret);
  seen = dialogs.length;
  const added = await clickFor(page, '#add-broker-submit', 'POST', '/api/user/brokers/binance');
  if (!added.ok()) {
    fail(`POST /api/user/brokers/binance answered ${added.status()}: ${await added.text()}`);
  }
  dialog = await nextDialog(seen, 'the alert of an added broker');
  if (dialog.type !== 'alert' || dialog.message !== 'binance credentials added successfully!') {
    fail(`after adding binance the page showed ${JSON.stringify(dialog)}`);
  }
  await expectBrokers(page, ['paper', 'binance'], 'after adding binance');

  step('remove binance with the Remove button');
  seen = dialogs.length;
  const removedVenue = await clickFor(page, '#brokers-list li[data-broker="binance"] button', 'DELETE', '/api/user/brokers/binance');
  dialog = dialogs[seen];
  if (!dialog || dialog.type !== 'confirm' || !/binance/.test(dialog.message)) {
    fail(`the Remove button asked ${JSON.stringify(dialog)}`);
  }
  if (removedVenue.status() !== 200) {
    fail(`DELETE /api/user/brokers/binance answered ${removedVenue.status()}: ${await removedVenue.text()}`);
  }
  await expectBrokers(page, ['paper'], 'after removing binance');

  step('remove paper with the Remove button');
  seen = dialogs.length;
  const removed = await clickFor(page, '#brokers-list li[data-broker="paper"] button', 'DELETE', '/api/user/brokers/paper');
  dialog = dialogs[seen];
  if (!dialog || dialog.type !== 'confirm' || !/paper/.test(dialog.message)) {
    fail(`the Remove button asked ${JSON.stringify(dialog)}`);
  }
  if (removed.status() !== 200) {
    fail(`DELETE /api/user/brokers/paper answered ${removed.status()}: ${await removed.text()}`);
  }
  await expectText(page, '#broker-count', '0', 'after removing paper');
  await expectVisible(page, '#brokers-empty', true, 'after removing paper');
  if ((await brokerNames(page)).length) {
    fail(`the list still shows ${JSON.stringify(await brokerNames(page))}`);
  }
  await sleep(200);
  if (dialogs.length !== seen + 1) {
    fail(`removing paper also showed ${JSON.stringify(dialogs.slice(seen + 1))}`);
  }

  step('a wrong password on the login form');
  await page.evaluate(() => localStorage.clear());
  await page.reload();
  await expectVisible(page, '#login-form', true, 'without a token');
  await expectVisible(page, '#dashboard-screen', false, 'without a token');
  await page.fill('#login-email', email);
  await page.fill('#login-password', `${password}-wrong`);
  const wrong = await clickFor(page, '#login-submit', 'POST', '/api/auth/login');
  if (wrong.status() !== 401) {
    fail(`a wrong password answered ${wrong.status()}: ${await wrong.text()}`);
  }
  await expectVisible(page, '#auth-error', true, 'a wrong password');
  await expectText(page, '#auth-error', 'Invalid credentials', 'a wrong password');
  if (await page.evaluate(() => localStorage.getItem('nija_token'))) {
    fail('a token was stored after a wrong password');
  }

  step('the right password');
  await page.fill('#login-password', password);
  const right = await clickFor(page, '#login-submit', 'POST', '/api/auth/login');
  if (right.status() !== 200) {
    fail(`the right password answered ${right.status()}: ${await right.text()}`);
  }
  await expectVisible(page, '#dashboard-screen', true, 'after signing in');
  await expectText(page, '#user-email', email, 'after signing in');
  await expectText(page, '#user-tier', 'free', 'after signing in');
  await expectTrading(page, false, 'stopped', 'after signing in');
  if ((await page.evaluate(() => localStorage.getItem('nija_token'))) !== (await right.json()).access_token) {
    fail('localStorage.nija_token is not the access_token of the login');
  }

  step("the original's safety poll describes the signed-in caller");
  const polled = safety.length;
  await until(() => safety.length >= polled + 2, 'two more GET /api/safety/status polls (every 5 s)', 15000);
  const odd = safety.filter((s) => s.status !== 200 || s.auth);
  if (odd.length) {
    fail(`GET /api/safety/status: ${JSON.stringify(odd)} (expected 200, sent without a token)`);
  }
  await expectVisible(page, '#dashboard-screen', true, 'after the safety polls');
  await expectTrading(page, false, 'stopped', 'after the safety polls');
  if (await page.isDisabled('#trading-toggle')) {
    fail('the safety poll disabled the trading toggle');
  }

  step('requests');
  const unsigned = api.filter(
    (call) =>
      !['/api/auth/login', '/api/auth/register', '/api/safety/status'].includes(call.path) &&
      !(call.headers.authorization || '').startsWith('Bearer '),
  );
  if (unsigned.length) {
    fail(`API calls without a token: ${unsigned.map((c) => `${c.method} ${c.path}`).join(', ')}`);
  }
  const elsewhere = requests.filter((o) => o !== origin && o !== 'null');
  if (elsewhere.length) {
    fail(`requests to other origins: ${[...new Set(elsewhere)].join(', ')}`);
  }
  if (clientErrors.length) {
    fail(`the client could not use an answer:\n  ${clientErrors.join('\n  ')}`);
  }
  if (dialogs.length !== 5) {
    fail(`unexpected dialogs: ${JSON.stringify(dialogs)}`);
  }
  session.checkClean();

  const routes = [...new Set(api.map((c) => `${c.method} ${c.path}`))].sort();
  return `registered (pro asked, free shown), stats and status read, start refused without a broker and reverted, paper started (last activity ${activity}) and stopped, binance refused with a wrong secret (${refusedVenue.status()} "${refusedDetail}"), connected with the venue's keys and removed, paper removed, wrong password "Invalid credentials", signed in again; ${safety.length} safety polls answered for the signed-in caller; ${api.length} API calls (${routes.join(', ')}), all to ${origin}; no page error`;
});
