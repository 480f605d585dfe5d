// The web app's operator pages in a real browser: an admin uploads a plugin version, activates
// it, rolls it back, then activates the kill switch, which a signed-in user's page (another
// browser profile) shows at once, and lifts it again.
//
// Environment: BASE_URL, ADMIN_EMAIL, USER_EMAIL, PASSWORD, WASM and MANIFEST (the component and
// plugin.toml of a new version of the `risk-guards` plugin), ARTIFACTS, CHROMIUM (optional).

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { env, fail, openApp, run, waitData } from './common.mjs';

const BASE = env('BASE_URL');
const PASSWORD = env('PASSWORD');
const ARTIFACTS = env('ARTIFACTS');
const PLUGIN = 'risk-guards';
mkdirSync(ARTIFACTS, { recursive: true });

const shot = (page, name) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

async function signIn(page, email) {
  await page.goto(`${BASE}/`);
  await page.fill('#signin-form input[name=email]', email);
  await page.fill('#signin-form input[name=password]', PASSWORD);
  await page.click('#signin-form button[type=submit]');
  await page.waitForSelector('[data-page=dashboard]');
}

async function activeVersion(page) {
  return (await page.textContent('#admin-plugin-active')).trim();
}

await run('admin', async (step, opened) => {
  const app = await openApp(BASE);
  const admin = await app.newPage();
  opened({ page: admin, browser: app.browser });
  const user = await app.newPage(undefined, 'user');

  step('the user is signed in with a running bot, trading allowed');
  await signIn(user, env('USER_EMAIL'));
  await waitData(user, '#bot-line', { status: 'running' }, 'the user\'s bot runs');
  await waitData(user, '#live', { state: 'live' }, 'the user\'s page is live');
  if (await user.isVisible('#kill-banner')) fail('the kill-switch banner shows before any switch');
  if (await user.isVisible('#nav a:text-is("Admin")')) fail('a user sees the Admin page');

  step('the admin signs in and opens the plugins');
  await signIn(admin, env('ADMIN_EMAIL'));
  await admin.click('#nav a:text-is("Admin")');
  await waitData(admin, '#kill-switch', { state: 'ready' }, 'the overview shows the kill switch');
  await admin.click('#admin-tabs a:text-is("Plugins")');
  await waitData(admin, '#admin-plugins', { state: 'ready' }, 'the plugin list loads');
  await shot(admin, '01-plugins');

  step('upload a new version');
  await admin.setInputFiles('#plugin-wasm', env('WASM'));
  await admin.setInputFiles('#plugin-manifest', env('MANIFEST'));
  await admin.waitForFunction(() => document.querySelector('#plugin-manifest-preview')?.textContent.includes('0.2.0'));
  await admin.click('#plugin-upload');
  await admin.waitForSelector(`.toast.success:has-text("${PLUGIN}"), .toast.success:has-text("Risk guards")`);

  step('activate it on the plugin\'s page');
  await admin.goto(`${BASE}/#/admin/plugins/${PLUGIN}`);
  await waitData(admin, '#admin-plugin', { state: 'ready' }, 'the plugin page loads');
  await admin.waitForSelector('#plugin-versions tr[data-id="0.2.0"]');
  if ((await activeVersion(admin)) !== '0.1.0') fail(`before activation the active version reads ${await activeVersion(admin)}`);
  await admin.click('#plugin-versions tr[data-id="0.2.0"] button[data-action=activate]');
  await admin.click('dialog.confirm button[value=confirm]');
  await admin.waitForFunction(() => document.querySelector('#admin-plugin-active')?.textContent.trim() === '0.2.0');
  await shot(admin, '02-plugin-activated');

  step('roll it back');
  await admin.click('#plugin-rollback');
  await admin.click('dialog.confirm button[value=confirm]');
  await admin.waitForFunction(() => document.querySelector('#admin-plugin-active')?.textContent.trim() === '0.1.0');
  await shot(admin, '03-plugin-rolled-back');

  step('activate the kill switch');
  await admin.click('#admin-tabs a:text-is("Overview")');
  await waitData(admin, '#kill-switch', { state: 'ready' }, 'the kill switch loads');
  await admin.click('#kill-switch-activate');
  await admin.fill('#kill-reason', 'Exchange incident drill');
  const pressed = Date.now();
  await admin.click('dialog.confirm button[value=confirm]');

  step('the user\'s page shows it at once');
  await user.waitForSelector('#kill-banner:not([hidden])', { timeout: 5000 });
  const shownAfter = Date.now() - pressed;
  const banner = await user.textContent('#kill-banner');
  if (!banner.includes('Exchange incident drill')) fail(`the banner reads: ${banner}`);
  if (shownAfter > 1000) fail(`the banner took ${shownAfter} ms to show`);
  await waitData(user, '#bot-line', { status: 'stopped' }, 'the user\'s bot reads stopped');
  await admin.waitForSelector('#kill-switch-status:text-is("active")');
  await shot(user, '04-user-kill-switch');
  await shot(admin, '05-admin-kill-switch');

  step('lift it');
  await admin.click('#kill-switch-lift');
  await admin.click('dialog.confirm button[value=confirm]');
  await user.waitForSelector('#kill-banner', { state: 'hidden', timeout: 5000 });
  await admin.waitForSelector('#kill-switch-status:text-is("off")');

  step('every page draws what the API returns, at 1280 px and at 390 px');
  // Each page's main containers reach `ready` or `empty` (an API error leaves them at `error`),
  // and on a phone nothing is wider than the screen.
  const phone = { width: 390, height: 844 };
  const userPhone = await app.newPage(phone, 'user');
  const adminPhone = await app.newPage(phone);
  const pages = [
    ['user', 'dashboard', ['#figures', '#recent']],
    ['user', 'bot', ['#bot-status-card']],
    ['user', 'chart/BTC-USD', ['#chart']],
    ['user', 'history', ['#history']],
    ['user', 'ledger', ['#ledger']],
    ['user', 'performance', ['#performance-metrics', '#performance-trades', '#account-stats']],
    ['user', 'brokers', ['#brokers']],
    ['user', 'settings', ['#settings', '#webhooks']],
    ['user', 'subscription', ['#subscription-current', '#subscription-usage', '#plans']],
    ['admin', 'admin/plugins', ['#admin-plugins']],
    ['admin', `admin/plugins/${PLUGIN}`, ['#admin-plugin']],
    ['admin', 'admin', ['#admin-metrics', '#admin-alarms']],
    ['admin', 'admin/audit', ['#admin-audit']],
    ['admin', 'admin/users', ['#admin-users']],
  ];
  for (const [who, path, containers] of pages) {
    const tabs = who === 'user' ? [user, userPhone] : [admin, adminPhone];
    for (const tab of tabs) {
      await tab.goto(`${BASE}/#/${path}`);
      for (const container of containers) await waitData(tab, container, { state: { oneOf: ['ready', 'empty'] } }, `#/${path}`);
    }
    const overflow = await tabs[1].evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (overflow > 0) fail(`#/${path} is ${overflow} px wider than a 390 px screen`);
  }
  // From the list (the last page visited) to one user's page.
  await admin.click('#admin-users tr[data-id] a');
  await waitData(admin, '#admin-user', { state: 'ready' }, 'a user\'s page');

  app.checkClean();
  return `uploaded, activated and rolled back ${PLUGIN} 0.2.0; the user's page showed the kill switch ${shownAfter} ms after the click`;
});
