// The checks of a documentation page holding widgets, shared by embed_hosts.test.mjs and hosts/check_engines.mjs:
// the frames, their sizes, themes and links; the page's layout shift as the browser reports it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, launch, openPage } from './lib.mjs';

// The calculator's site, a documentation site of a second origin (a temporary folder to write pages in), Chromium.
export async function twoOrigins() {
  const site = await serve();
  const docsDir = mkdtempSync(join(tmpdir(), 'vramcalc-docs-'));
  const docs = await serve(docsDir);
  const browser = await launch();
  const close = async () => {
    await browser.close();
    await site.close();
    await docs.close();
    rmSync(docsDir, { recursive: true, force: true });
  };
  return { site, docs, docsDir, browser, close };
}

// The widgets' frames (in shadow roots), top to bottom, with the element that holds each.
export async function widgets(page) {
  const els = await page.$$('iframe');
  const rows = await Promise.all(els.map(async (el) => ({ el, top: await el.evaluate((x) => x.getBoundingClientRect().top + scrollY) })));
  return Promise.all(rows.sort((a, b) => a.top - b.top).map(async ({ el }) => ({ el, frame: await el.contentFrame() })));
}

// Every frame rendered, as tall as its view, nothing scrolling inside, the link back in view, in its theme. (The waits
// poll on a timer: a frame out of view runs no animation frames, Playwright's default polling.)
export async function checkWidgets(page, label, themes) {
  const heights = await page.evaluate(() => customElements.get('vramcalc-widget').heights);
  const list = await widgets(page);
  assert.equal(list.length, themes.length, `${label}: widgets`);
  for (const [i, { el, frame }] of list.entries()) {
    const w = `${label}, widget ${i + 1}`;
    await frame.waitForFunction(() => document.body.dataset.ready === 'true' && document.documentElement.classList.contains('hosted'),
      null, { timeout: 20000, polling: 100 });
    const inner = await frame.evaluate(() => {
      const link = document.getElementById('open-full').getBoundingClientRect();
      return { view: document.body.classList.contains('view-compact') ? 'compact' : 'full', innerHeight,
        scrollHeight: document.documentElement.scrollHeight, scrollWidth: document.documentElement.scrollWidth,
        clientWidth: document.documentElement.clientWidth, link: [link.top, link.bottom, link.width],
        theme: document.documentElement.dataset.theme };
    });
    const outer = await el.evaluate((x) => x.getBoundingClientRect().height);
    assert.equal(outer, heights[inner.view], `${w}: as tall as its view`);
    assert.equal(inner.innerHeight, heights[inner.view], w);
    assert.ok(inner.scrollHeight <= inner.innerHeight && inner.scrollWidth <= inner.clientWidth, `${w}: nothing scrolls inside`);
    assert.ok(inner.link[0] >= 0 && inner.link[1] <= inner.innerHeight && inner.link[2] > 100, `${w}: the link back in view`);
    await frame.waitForFunction((t) => (document.documentElement.dataset.theme || 'system') === t, themes[i], { timeout: 5000, polling: 100 })
      .catch(() => assert.fail(`${w}: theme ${inner.theme}, expected ${themes[i]}`));
  }
}

// Opens the host page at a width, records its layout shifts from the start, scrolls it top to bottom as a reader.
// origins: those it may load from; route(context): requests routed elsewhere. Returns openPage's {page, context, log}
// and the embed.js requests of the page.
export async function read(browser, url, origins, width, route) {
  const scripts = [];
  const opened = await openPage(browser, url, {
    origins, ready: false, viewport: { width, height: 800 },
    setup: async (context, page) => {
      if (route) await route(context);
      await recordShifts(context);
      page.on('request', (r) => { if (r.frame() === page.mainFrame() && r.url().endsWith('/embed.js')) scripts.push(r.url()); });
    },
  });
  const { page } = opened;
  await (await widgets(page))[0].frame.waitForFunction(() => document.body.dataset.ready === 'true', null, { timeout: 20000, polling: 100 });
  const bottom = await page.evaluate(() => document.documentElement.scrollHeight - innerHeight);
  for (let y = 0; y <= bottom + 400; y += 400) {
    await page.evaluate((top) => scrollTo(0, top), y);
    await page.waitForTimeout(150);
  }
  return { ...opened, scripts };
}

// Records every page's layout-shift entries without recent input from its start, for layoutShift().
export function recordShifts(context) {
  return context.addInitScript(() => {
    window.__shifts = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shifts.push(e.value);
    }).observe({ type: 'layout-shift', buffered: true });
  });
}

// The sum of the page's layout-shift entries (recorded by recordShifts, as read() does): at least
// the cumulative layout shift, which takes the worst window of them.
export async function layoutShift(page) {
  return (await page.evaluate(() => window.__shifts)).reduce((a, b) => a + b, 0);
}
