// The /trades page in a real browser: sign in through the form, and compare what the page shows
// with what the API returned (the EXPECT file written by tests/tests/browser.rs).
//
// Environment: BASE_URL, EMAIL, PASSWORD, EXPECT (a JSON file: {total_trades, open_positions:
// [position ids], trades: [trade ids], ledger: [ledger ids]}, each list in the API's order),
// CHROMIUM (optional; /usr/bin/chromium by default), SCREENSHOT (optional: a path prefix for PNGs of
// each tab).

import { readFileSync } from 'node:fs';

import { env, fail, openBrowser, run } from './common.mjs';

const TABLES = {
  positions: { table: '#positions-table', empty: '#positions-empty', text: 'No open positions' },
  history: { table: '#history-table', empty: '#history-empty', text: 'No trade history' },
  ledger: { table: '#ledger-table', empty: '#ledger-empty', text: 'No ledger transactions' },
};

function sameList(actual, expected) {
  return actual.length === expected.length && actual.every((value, i) => value === expected[i]);
}

// Waits until the tab's table has drawn an answer (optionally to a query containing `query`),
// and returns the rows' data-ids.
async function tableIds(page, name, query) {
  const { table } = TABLES[name];
  try {
    await page.waitForFunction(
      ([selector, part]) => {
        const element = document.querySelector(selector);
        return (
          element &&
          element.dataset.state === 'ready' &&
          (!part || (element.dataset.query || '').includes(part))
        );
      },
      [table, query || null],
      { timeout: 15000 },
    );
  } catch (_) {
    const state = await page.$eval(table, (e) => `${e.dataset.state} (${e.dataset.query || 'no query'})`);
    const error = await page.$eval('#error', (e) => (e.hidden ? '' : e.textContent));
    fail(`${table} did not show an answer${query ? ` to ${query}` : ''}: state ${state}${error ? `; #error: ${error}` : ''}`);
  }
  return page.$$eval(`${table} tbody tr`, (rows) => rows.map((row) => row.dataset.id));
}

async function expectIds(page, name, expected, what) {
  const ids = await tableIds(page, name);
  if (!sameList(ids, expected)) {
    fail(`${what}: the page shows ${JSON.stringify(ids)}, the API returned ${JSON.stringify(expected)}`);
  }
  const emptyShown = await page.isVisible(TABLES[name].empty);
  if (emptyShown !== (expected.length === 0)) {
    fail(`${what}: the empty state is ${emptyShown ? 'shown' : 'hidden'} with ${expected.length} rows`);
  }
  return ids;
}

async function expectTotalTrades(page, expected) {
  try {
    await page.waitForFunction(
      (value) => document.querySelector('#stats-total-trades')?.textContent.trim() === value,
      String(expected),
      { timeout: 15000 },
    );
  } catch (_) {
    const shown = await page.textContent('#stats-total-trades');
    fail(`the Total trades card shows "${shown}", the API says ${expected}`);
  }
}

// With SCREENSHOT=<prefix>, a PNG of the page at <prefix>-<what>.png.
async function screenshot(page, what) {
  if (process.env.SCREENSHOT) {
    await page.screenshot({ path: `${process.env.SCREENSHOT}-${what}.png`, fullPage: true });
  }
}

async function selectTab(page, name) {
  await page.click(`#tab-${name}`);
  const selected = await page.getAttribute(`#tab-${name}`, 'aria-selected');
  if (selected !== 'true') {
    fail(`#tab-${name} is not selected after a click`);
  }
}

await run('trades', async (step, opened) => {
  const baseUrl = env('BASE_URL').replace(/\/$/, '');
  const email = env('EMAIL');
  const password = env('PASSWORD');
  const expected = JSON.parse(readFileSync(env('EXPECT'), 'utf8'));
  const asStrings = (list) => (list || []).map(String);
  const positions = asStrings(expected.open_positions);
  const trades = asStrings(expected.trades);
  const ledger = asStrings(expected.ledger);
  if (!positions.length || !trades.length || !ledger.length) {
    fail(`the EXPECT file should list at least one of each row: ${JSON.stringify(expected)}`);
  }

  step('open the browser');
  const session = await openBrowser(baseUrl);
  opened(session);
  const { page } = session;

  step('open /trades');
  const response = await page.goto(`${baseUrl}/trades`);
  if (!response || response.status() !== 200) {
    fail(`GET /trades answered ${response ? response.status() : 'nothing'}`);
  }
  await page.waitForSelector('#login-form', { state: 'visible' });
  if (await page.isVisible('#positions-table')) {
    fail('the tables are visible before signing in');
  }

  step('sign in through the form');
  await page.fill('#login-email', email);
  await page.fill('#login-password', password);
  await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/api/auth/login')),
    page.click('#login-form button[type="submit"]'),
  ]);
  await page.waitForSelector('#login-form', { state: 'hidden' });
  const stored = await page.evaluate(() => localStorage.getItem('tradehost_token'));
  if (!stored) {
    fail('the token was not stored in localStorage.tradehost_token');
  }

  step('statistics');
  await expectTotalTrades(page, expected.total_trades);

  step('open positions');
  await expectIds(page, 'positions', positions, 'open positions');

  step('trade history');
  await selectTab(page, 'history');
  await expectIds(page, 'history', trades, 'trade history');
  await screenshot(page, 'history');

  step('raw ledger');
  await selectTab(page, 'ledger');
  await expectIds(page, 'ledger', ledger, 'ledger');
  await screenshot(page, 'ledger');

  step('export the ledger as CSV');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-csv')]);
  const name = download.suggestedFilename();
  if (!/^tradehost_trade_ledger_\d{8}_\d{6}\.csv$/.test(name)) {
    fail(`the CSV download is named ${name}`);
  }
  const path = await download.path();
  const csv = readFileSync(path, 'utf8');
  const lines = csv.split('\r\n').filter((line) => line !== '');
  if (!lines[0].startsWith('id,timestamp,user_id,symbol,side,action,')) {
    fail(`the CSV starts with ${JSON.stringify(lines[0])}`);
  }
  // Both are newest first, but rows of the same instant may come in either order.
  const csvIds = lines.slice(1).map((line) => line.split(',')[0].replace(/^"|"$/g, ''));
  if (!sameList([...csvIds].sort(), [...ledger].sort())) {
    fail(`the CSV lists ledger ids ${JSON.stringify(csvIds)}, the API returned ${JSON.stringify(ledger)}`);
  }

  step('a symbol filter that matches nothing');
  const nothing = 'NO-SUCH-SYMBOL';
  await page.fill('#symbol-filter', nothing);
  const filtered = await tableIds(page, 'ledger', `symbol=${nothing}`);
  if (filtered.length) {
    fail(`the ledger still shows ${JSON.stringify(filtered)} for symbol ${nothing}`);
  }
  if (!(await page.isVisible(TABLES.ledger.empty))) {
    fail('the ledger does not say "No ledger transactions" when the filter matches nothing');
  }
  const emptyText = (await page.textContent(TABLES.ledger.empty)).trim();
  if (emptyText !== TABLES.ledger.text) {
    fail(`the empty ledger says "${emptyText}"`);
  }
  await selectTab(page, 'positions');
  if ((await tableIds(page, 'positions', `symbol=${nothing}`)).length) {
    fail('the positions table ignores the symbol filter');
  }

  step('clear the filter');
  await page.fill('#symbol-filter', '');
  await page.waitForFunction(() => !(document.querySelector('#positions-table').dataset.query || '').includes('symbol='));
  await expectIds(page, 'positions', positions, 'open positions without a filter');

  step('reload keeps the session');
  await page.reload();
  await page.waitForSelector('#app', { state: 'visible' });
  if (await page.isVisible('#login-form')) {
    fail('the sign-in form is shown again after a reload');
  }
  await expectTotalTrades(page, expected.total_trades);
  await expectIds(page, 'positions', positions, 'open positions after a reload');
  const refreshed = (await page.textContent('#last-refresh')).trim();
  if (!/\d/.test(refreshed)) {
    fail(`#last-refresh shows no time: "${refreshed}"`);
  }

  await screenshot(page, 'positions');

  step('export the trade history as PDF');
  await selectTab(page, 'history');
  await tableIds(page, 'history');
  const [pdf] = await Promise.all([page.waitForEvent('download'), page.click('#export-pdf')]);
  if (!/^tradehost_completed_trades_.*\.pdf$/.test(pdf.suggestedFilename())) {
    fail(`the PDF download is named ${pdf.suggestedFilename()}`);
  }
  const magic = readFileSync(await pdf.path()).subarray(0, 5).toString('latin1');
  if (magic !== '%PDF-') {
    fail(`the PDF download starts with ${JSON.stringify(magic)}`);
  }

  step('a refused token shows the form');
  await page.evaluate(() => localStorage.setItem('tradehost_token', 'not-a-token'));
  await page.reload();
  await page.waitForSelector('#login-form', { state: 'visible' });
  if (await page.evaluate(() => localStorage.getItem('tradehost_token'))) {
    fail('the refused token is still in localStorage');
  }
  const refusal = (await page.textContent('#error')).trim();
  if (!refusal) {
    fail('no message is shown when the token is refused');
  }

  step('sign in again and sign out');
  await page.fill('#login-email', email);
  await page.fill('#login-password', password);
  await page.click('#login-form button[type="submit"]');
  await expectTotalTrades(page, expected.total_trades);
  await page.click('#sign-out');
  await page.waitForSelector('#login-form', { state: 'visible' });
  if (await page.evaluate(() => localStorage.getItem('tradehost_token'))) {
    fail('the token is still in localStorage after Sign out');
  }
  if (await page.$$eval('#positions-table tbody tr', (rows) => rows.length)) {
    fail('the rows stay in the page after Sign out');
  }

  step('requests stay on the server');
  session.checkClean();

  return `signed in, ${expected.total_trades} total trades, ${positions.length} open positions, ${trades.length} trades, ${ledger.length} ledger rows shown; CSV and PDF export, symbol filter, reload, refused token and sign-out checked; no request left ${new URL(baseUrl).host}`;
});
