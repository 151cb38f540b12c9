// The README's recipes on sites built by the real engines (not part of the test suite, which never installs them):
// build the sites under build/engines/ as tests/web/engines.md says, then
//   node tests/web/hosts/check_engines.mjs
// Each site's pages keep the recipe's https://HOST/, which Chromium is routed to build/wasm/site, and the site itself
// is routed from http://docs.test/. For each built
// engine: at 375 and 1280 px, scrolled top to bottom, the layout shift, every frame's size, inner scroll, link back
// and theme; the engine's own theme toggle; in-site navigation to the second page; console errors; other origins.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { launch, SITE, ROOT } from '../lib.mjs';
import { read, checkWidgets, layoutShift } from '../embed_checks.mjs';

const HOST = 'https://host/';  // the README's https://HOST/
const DOCS = 'http://docs.test/';  // the engines' site_url, where instant navigation needs one
// Requests to origin served from dir (a folder's index.html for its path).
const serveAt = (context, origin, dir) => context.route(`${origin}**`, (r) => {
  const path = decodeURIComponent(new URL(r.request().url()).pathname).slice(1);
  const file = [path, join(path, 'index.html'), `${path}.html`].map((p) => join(dir, p)).find((f) => existsSync(f) && statSync(f).isFile());
  return file ? r.fulfill({ path: file }) : r.fulfill({ status: 404, body: 'not found' });
});
const ENGINES = {
  mkdocs: {
    page: '', themes: (host) => [host, 'system', host],
    toggle: (page) => page.click('form[data-md-component=palette] label:visible'),
    nav: 'article',
  },
  sphinx: {
    page: 'index.html', themes: (host) => [host, 'system', host],
    toggle: async (page) => {
      for (let i = 0; i < 3 && await page.evaluate(() => document.body.dataset.theme) !== 'dark'; i++) await page.click('.theme-toggle:visible');
    },
  },
  docusaurus: {
    page: 'docs/memory', themes: (host) => [host, 'system', host],
    toggle: (page) => page.evaluate(() => document.querySelector('button[title*="mode"]').click()),
    nav: 'article',
  },
  vitepress: {
    page: 'index.html', themes: (host) => [host, 'system', host],
    toggle: (page) => page.evaluate(() => document.querySelector('.VPSwitchAppearance').click()),  // in the menu at 375 px
    nav: '.vp-doc',
  },
};

const browser = await launch();
let failed = 0;
for (const [name, engine] of Object.entries(ENGINES)) {
  const dir = join(ROOT, 'build/engines', name);
  if (!existsSync(dir) || !readdirSync(dir).length) { console.log(`${name}: not built, skipped`); continue; }
  const route = async (context) => { await serveAt(context, HOST, SITE); await serveAt(context, DOCS, dir); };
  try {
    for (const width of [375, 1280]) {
      const url = `${DOCS}${engine.page}`;
      const { page, context, log, scripts } = await read(browser, url, [HOST, DOCS], width, route);
      await checkWidgets(page, `${name} ${width}`, engine.themes('light'));
      const cls = await layoutShift(page);
      let note = '';
      if (width === 375) {
        await page.evaluate(() => scrollTo(0, 0));
        await engine.toggle(page);
        await checkWidgets(page, `${name} dark`, engine.themes('dark'));
        note += ', dark toggle followed';
        if (engine.nav) {
          await page.waitForTimeout(1000);  // the engine's router set up (Material's reads the sitemap first)
          await page.evaluate(() => { window.__same = true; });
          // The page's "Next page" link, clicked in the DOM (Playwright's pointer click did not always reach the
          // engines' routers after the toggle).
          await page.evaluate((box) => [...document.querySelectorAll(`${box} a`)].find((a) => a.textContent === 'Next page').click(), engine.nav);
          await page.waitForFunction(() => document.querySelector('vramcalc-widget[settings*="llama-2-13b"]'), null, { timeout: 15000 });
          await checkWidgets(page, `${name} second page`, engine.themes('dark').slice(0, 1));
          note += await page.evaluate(() => window.__same) ? ', in-site navigation (no reload) sized and themed' : ', navigation reloaded the page';
        }
      }
      const ok = cls <= 0.05 && !log.errors.length && !log.foreign.length && scripts.length === 1;
      if (!ok) failed++;
      console.log(`${ok ? 'ok' : 'FAIL'} ${name} ${width} px: layout shift ${cls.toFixed(4)}, embed.js requests ${scripts.length}${note}` +
        `${log.errors.length ? `; errors: ${log.errors.join(' | ')}` : ''}${log.foreign.length ? `; other origins: ${log.foreign}` : ''}`);
      await context.close();
    }
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}
await browser.close();
process.exit(failed ? 1 : 0);
