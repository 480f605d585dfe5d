// /api/docs in a real browser: Swagger UI loads the server's OpenAPI document, and "Try it out"
// on GET /health executes against this server and shows 200 with a healthy body.
//
// Environment: BASE_URL, CHROMIUM (optional; /usr/bin/chromium by default).

import { env, fail, openBrowser, run } from './common.mjs';

// The opblock of GET /health: its path element carries the raw path in data-path (the text has
// <wbr> breaks); a version without data-path is matched on its text.
function healthBlock(page) {
  return page
    .locator('.opblock.opblock-get')
    .filter({
      has: page.locator('.opblock-summary-path[data-path="/health"], .opblock-summary-path:text-is("/health")'),
    })
    .first();
}

await run('docs', async (step, opened) => {
  const baseUrl = env('BASE_URL').replace(/\/$/, '');

  step('open the browser');
  const session = await openBrowser(baseUrl);
  opened(session);
  const { page } = session;

  step('open /api/docs');
  const response = await page.goto(`${baseUrl}/api/docs`);
  if (!response || response.status() !== 200) {
    fail(`GET /api/docs answered ${response ? response.status() : 'nothing'}`);
  }

  step('wait for the operations');
  try {
    await page.waitForSelector('.opblock-tag-section, .opblock', { timeout: 20000 });
  } catch (_) {
    const error = await page.textContent('body').catch(() => '');
    fail(`Swagger UI listed no operations; the page says: ${error.trim().slice(0, 300)}`);
  }
  const operations = await page.$$eval('.opblock', (blocks) => blocks.length);

  step('find GET /health');
  const block = healthBlock(page);
  if (!(await block.count())) {
    // Tags may start collapsed (docExpansion "none"): open them one by one until it shows.
    const tags = page.locator('.opblock-tag-section:not(.is-open) .opblock-tag');
    for (let i = await tags.count(); i > 0 && !(await block.count()); i -= 1) {
      await tags.first().click();
    }
  }
  if (!(await block.count())) {
    const paths = await page.$$eval('.opblock-summary-path', (all) =>
      all.map((p) => (p.getAttribute('data-path') || p.textContent).replace(/\u200b/g, '')),
    );
    fail(`no GET /health operation among ${JSON.stringify(paths)}`);
  }

  step('expand GET /health');
  await block.scrollIntoViewIfNeeded();
  if (!(await block.evaluate((b) => b.classList.contains('is-open')))) {
    await block.locator('.opblock-summary').first().click();
  }
  const tryOut = block.locator('button.try-out__btn');
  await tryOut.waitFor({ state: 'visible' });

  step('Try it out');
  // With tryItOutEnabled the operation opens in try-out mode and the button reads "Cancel".
  const execute = block.locator('button.execute');
  if (!(await execute.isVisible())) {
    if (!/try it out/i.test(await tryOut.textContent())) {
      fail(`the try-out button reads "${(await tryOut.textContent()).trim()}"`);
    }
    await tryOut.click();
  }
  await execute.waitFor({ state: 'visible' });

  step('Execute');
  const [health] = await Promise.all([
    page.waitForResponse((r) => new URL(r.url()).pathname === '/health', { timeout: 15000 }),
    execute.click(),
  ]);
  if (new URL(health.url()).host !== new URL(baseUrl).host) {
    fail(`Execute called ${health.url()}, not this server`);
  }

  step('the rendered response');
  const live = block.locator('.live-responses-table');
  let status = '';
  let body = '';
  try {
    await live.locator('tr.response .response-col_status').first().waitFor({ timeout: 15000 });
    status = (await live.locator('tr.response .response-col_status').first().textContent()).trim();
    const bodyElement = live.locator('tr.response .response-col_description pre').first();
    body = (await bodyElement.count()) ? await bodyElement.textContent() : '';
  } catch (_) {
    fail('Swagger UI rendered no server response after Execute');
  }
  if (!/^200\b/.test(status)) {
    fail(`the rendered response code is "${status}", expected 200 (body: ${body.slice(0, 300)})`);
  }
  if (!body.includes('healthy')) {
    fail(`the rendered response body does not say healthy: ${body.slice(0, 300)}`);
  }

  step('requests stay on the server');
  session.checkClean();

  return `${operations} operations listed; GET /health executed from Swagger UI: 200, body says healthy; no request left ${new URL(baseUrl).host}`;
});
