// Widgets on a documentation page served from a second origin: the page's own "Copy embed code" (two widget elements
// and an iframe, each with embed.js), at 360, 760 and 1400 px, light and dark: each frame as tall as its content (no
// inner scrollbar), in its theme, with a link back that opens the full page in the same state.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openPage, settle, requireSite, requireCli, requirePlaywright, cli, ARTIFACTS } from './lib.mjs';
import { twoOrigins } from './embed_checks.mjs';

let site;
let docs;
let browser;
let docsDir;
let close;
before(async () => {
  requireSite();
  requireCli();
  requirePlaywright();
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ site, docs, docsDir, browser, close } = await twoOrigins());
});
after(() => close?.());

// A documentation page with its own light and dark styles (the system's, or a .dark class of its own toggle).
const docsPage = (widgets) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>Fine-tuning guide</title>
<style>
  body { font: 16px/1.5 sans-serif; margin: 0 auto; max-width: 880px; padding: 16px; background: #fff; color: #1b1b1b; }
  @media (prefers-color-scheme: dark) { body { background: #16181d; color: #e8e8e8; } }
  html.dark body { background: #16181d; color: #e8e8e8; }
  .widget { margin: 16px 0; border: 1px solid #8884; border-radius: 8px; }
</style></head><body>
<h1>Fine-tuning guide</h1>
<p>How much GPU memory does LoRA on Llama 2 7B take? The estimate below updates with the calculator.</p>
<div class="widget">${widgets[0]}</div>
<p>QLoRA brings Mistral 7B onto a 24 GB card:</p>
<div class="widget">${widgets[1]}</div>
<p>GPT-2 on a T4, as an iframe:</p>
<div class="widget">${widgets[2]}</div>
<p>End of the guide.</p>
</body></html>`;

const lum = (rgb) => {
  const [r, g, b] = rgb.match(/\d+/g).map(Number);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};

// The widgets' frames (those in shadow roots too), top to bottom.
async function widgetFrames(page) {
  const els = await page.$$('iframe');
  const tops = await Promise.all(els.map((el) => el.evaluate((x) => x.getBoundingClientRect().top + scrollY)));
  return Promise.all(els.map((el, i) => [tops[i], el]).sort((a, b) => a[0] - b[0]).map(([, el]) => el.contentFrame()));
}

// Waits until every frame, scrolled into view as a reader would (Chromium pauses the rendering of cross-origin
// frames out of view, and with it their resize observers), has reported its height and been sized to it.
async function sized(page, n) {
  const frames = await widgetFrames(page);
  assert.equal(frames.length, n);
  for (const f of frames) {
    const el = await f.frameElement();
    const deadline = Date.now() + 15000;
    for (;;) {
      await el.scrollIntoViewIfNeeded();
      const inner = await f.evaluate(() => ({
        ready: document.body.dataset.ready === 'true', hosted: document.documentElement.classList.contains('hosted'),
        content: Math.ceil(document.body.getBoundingClientRect().height),
      })).catch(() => null);
      const outer = await el.evaluate((x) => x.clientHeight);
      if (inner && inner.ready && inner.hosted && outer === inner.content) break;
      if (Date.now() > deadline) throw new Error(`a frame was not sized: ${JSON.stringify({ ...inner, outer })}`);
      await page.waitForTimeout(50);
    }
  }
}

// The embed code the page offers for its current settings, with the given theme and view.
async function embedCode(page, form, theme, view) {
  if (await page.isHidden('#embed-box')) await page.click('#copy-embed');
  await page.selectOption('#embed-theme', theme);
  await page.selectOption('#embed-view', view);
  return page.inputValue(form === 'div' ? '#embed-div' : '#embed-iframe');
}

test('widgets on a documentation page of another origin: sized to their content, themed, linked back', async () => {
  // The three widgets, copied from the page itself.
  const { page: full, context: fullContext } = await openPage(browser, site.url + '?model=llama-2-7b&gpu=a100-80gb&finetune=lora');
  const code1 = await embedCode(full, 'div', '', 'full');
  assert.match(code1, /^<vramcalc-widget settings="model=llama-2-7b&amp;gpu=a100-80gb&amp;finetune=lora"><\/vramcalc-widget>\n<script src="http:\/\/127\.0\.0\.1:\d+\/embed\.js"><\/script>$/);
  await full.fill('#f-model', 'mistral-7b');
  await full.selectOption('#f-gpu', 'l4');
  await full.selectOption('#f-finetune', 'qlora');
  await settle(full);
  const code2 = await embedCode(full, 'div', 'dark', 'compact');
  assert.match(code2, /settings="model=mistral-7b&amp;gpu=l4&amp;finetune=qlora&amp;theme=dark&amp;view=compact"/);
  const bytes2 = await full.getAttribute('#total', 'data-bytes');
  await full.fill('#f-model', 'gpt2');
  await full.selectOption('#f-gpu', 't4');
  await full.selectOption('#f-finetune', 'full');
  await settle(full);
  assert.equal(await full.inputValue('#f-seq_len'), '1024', 'GPT-2 brings the sequence down to its 1024 positions');
  const code3 = await embedCode(full, 'iframe', 'auto', 'full');
  assert.match(code3, /^<iframe data-vramcalc src="http:\/\/127\.0\.0\.1:\d+\/\?model=gpt2&amp;gpu=t4&amp;seq_len=1024&amp;embed=1&amp;theme=auto" /);
  const bytes3 = await full.getAttribute('#total', 'data-bytes');
  await fullContext.close();
  writeFileSync(join(docsDir, 'index.html'), docsPage([code1, code2, code3]));

  const origins = [site.url, docs.url];
  const { page, context, log } = await openPage(browser, docs.url, { origins, ready: false });
  const expected = { 1: (scheme) => scheme, 2: () => 'dark', 3: (scheme) => scheme };  // host's, dark, the system's
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [360, 760, 1400]) {
      await page.setViewportSize({ width, height: 900 });
      await sized(page, 3);
      const label = `${scheme}, ${width} px`;
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), `${label}: no sideways scroll`);
      const frames = await widgetFrames(page);
      assert.equal(frames.length, 3, label);
      for (const [i, frame] of frames.entries()) {
        const el = await frame.frameElement();
        const box = await el.boundingBox();
        const inner = await frame.evaluate(() => ({
          scrollHeight: document.documentElement.scrollHeight, scrollWidth: document.documentElement.scrollWidth,
          clientWidth: document.documentElement.clientWidth, innerWidth, innerHeight,
          overflow: getComputedStyle(document.documentElement).overflowY,
          background: getComputedStyle(document.body).backgroundColor,
          compact: document.body.classList.contains('view-compact'), name: window.name,
        }));
        const w = `${label}, widget ${i + 1}`;
        assert.ok(box.x >= 0 && box.x + box.width <= width, `${w}: inside the page's width`);
        assert.ok(box.height >= inner.scrollHeight, `${w}: frame ${box.height} px for ${inner.scrollHeight} px of content`);
        assert.ok(inner.innerHeight >= inner.scrollHeight, `${w}: no inner vertical scroll`);
        assert.ok(inner.scrollWidth <= inner.clientWidth, `${w}: no inner sideways scroll`);
        assert.equal(inner.clientWidth, inner.innerWidth, `${w}: no scrollbar`);
        assert.equal(inner.overflow, 'hidden', `${w}: sized by embed.js, so no scrollbar can appear`);
        assert.equal(lum(inner.background) < 128 ? 'dark' : 'light', expected[i + 1](scheme), `${w}: theme`);
        assert.equal(inner.compact, i === 1, `${w}: view`);
        assert.equal(await frame.isVisible('#total'), true, w);
        assert.equal(await frame.isVisible('#open-full'), true, `${w}: the link back`);
        assert.equal(await frame.isVisible('#legend'), i !== 1, `${w}: the compact view has no legend`);
      }
      if (width === 760) {
        // The whole documentation page, frames painted: a viewport as tall as the page.
        const height = await page.evaluate(() => document.documentElement.scrollHeight);
        await page.setViewportSize({ width, height });
        await sized(page, 3);
        await page.screenshot({ path: join(ARTIFACTS, `embed-docs-${scheme}.png`) });
        await page.setViewportSize({ width, height: 900 });
      }
    }
  }

  // The host page's own dark toggle: the widget that follows the host turns dark, the one on the system's scheme not.
  await page.emulateMedia({ colorScheme: 'light' });
  await page.evaluate(() => document.documentElement.classList.add('dark'));
  const frames = await widgetFrames(page);
  const bg = (f) => f.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await frames[0].waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  assert.ok(lum(await bg(frames[0])) < 128, 'widget 1 follows the host page’s toggle');
  assert.ok(lum(await bg(frames[2])) >= 128, 'widget 3 follows the system’s scheme');

  // A height message from anywhere but the frame is ignored.
  const before = await page.$$eval('iframe', (f) => f.map((x) => x.style.height));
  await page.evaluate(() => window.postMessage({ type: 'vramcalc:height', id: 'vramcalc-1', height: 5, hosted: true }, '*'));
  await page.waitForTimeout(100);
  assert.deepEqual(await page.$$eval('iframe', (f) => f.map((x) => x.style.height)), before);

  // The link back: the full page, in the same state (without the embed's own settings).
  for (const [i, query, bytes] of [[1, '?model=mistral-7b&gpu=l4&finetune=qlora', bytes2], [2, '?model=gpt2&gpu=t4&seq_len=1024', bytes3]]) {
    const frame = frames[i];
    assert.equal(await frame.getAttribute('#total', 'data-bytes'), bytes);
    // The frame into view first (Chromium does not render a cross-origin frame out of view, so nothing in it settles).
    await (await frame.frameElement()).scrollIntoViewIfNeeded();
    await frame.locator('#open-full').scrollIntoViewIfNeeded();
    const [popup] = await Promise.all([context.waitForEvent('page'), frame.click('#open-full')]);
    await popup.waitForSelector('body[data-ready=true]', { timeout: 15000 });
    assert.equal(new URL(popup.url()).origin + '/', site.url);
    assert.equal(new URL(popup.url()).search, query, `widget ${i + 1}: the link back`);
    assert.equal(await popup.getAttribute('#total', 'data-bytes'), bytes);
    assert.equal(await popup.evaluate(() => document.body.classList.contains('embed')), false);
    assert.equal(await popup.isVisible('#inputs'), true);
    const config = await popup.textContent('#config-json');
    assert.equal(String(JSON.parse(cli('estimate', config).stdout).total_bytes), bytes, 'the CLI agrees');
    await popup.close();
  }

  assert.deepEqual(log.dialogs, []);
  assert.deepEqual(log.foreign, [], 'only the two origins');
  for (const f of page.frames()) assert.deepEqual(await f.evaluate(() => window.__csp), [], `no CSP violation in ${f.url()}`);
  assert.deepEqual(log.errors, []);
  assert.equal((await page.$$('iframe[name^=vramcalc-]')).length, 2, 'the two widgets\' frames, in their shadow roots');
  await context.close();
});
