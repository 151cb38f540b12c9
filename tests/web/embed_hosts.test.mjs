// The README's embedding recipes on documentation pages that behave like each engine's: MkDocs Material (its
// data-md-color-scheme toggle on <body>, instant navigation that swaps the article in), Sphinx + Furo (data-theme on
// <body>, oklch colours), Docusaurus (React 19 hydrating server-rendered markup that holds the widgets, data-theme on
// <html>, client-side routes) and VitePress (html.dark, pages swapped in by the client router, which runs no script
// in them). Each page holds three widgets — the recipe's, a compact one on the reader's system scheme, the old div
// form — the first in view at load. Checked: layout shift (the browser's layout-shift entries, scrolled top to bottom
// at 375 and 1280 px) ≤ 0.05, every frame as tall as its view with no inner scroll and the link back in view, the
// themes, the widget of a page reached by in-site navigation, embed.js loaded once, no console error, no third origin.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { openPage, requireSite, requirePlaywright, ROOT, SITE } from './lib.mjs';
import { twoOrigins, read, checkWidgets, layoutShift, recordShifts } from './embed_checks.mjs';

let site;
let docs;
let docsDir;
let browser;
let close;
before(async () => {
  requireSite();
  requirePlaywright();
  ({ site, docs, docsDir, browser, close } = await twoOrigins());
});
after(() => close?.());

// The README's recipes: per engine, its head configuration and its page's widget element.
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Embedding the page'), readme.indexOf('## Using the CLI'));
function recipe(engine) {
  const from = section.indexOf(`**${engine}`);
  assert.ok(from > 0, `the README has a recipe for ${engine}`);
  const text = section.slice(from, section.indexOf('\n**', from + 2) > 0 ? section.indexOf('\n**', from + 2) : undefined);
  const blocks = [...text.matchAll(/```\w*\n([\s\S]*?)```/g)].map((m) => m[1]);
  const widget = blocks.map((b) => /<vramcalc-widget settings="[^"]*"><\/vramcalc-widget>/.exec(b)).find(Boolean);
  assert.ok(widget, `${engine}: the page's element`);
  assert.match(blocks[0], /https:\/\/HOST\/embed\.js/, `${engine}: the script in the head configuration`);
  assert.doesNotMatch(blocks[0], /async|defer/, `${engine}: loaded before the first paint`);
  return widget[0];
}

const text = (n) => Array.from({ length: n }, (_, i) => `<p>Paragraph ${i + 1}: activations grow with the micro-batch and the sequence; ` +
  'gradients and optimizer states with the trainable parameters; the loss upcasts the logits to fp32.</p>').join('\n');
const COMPACT_AUTO = '<vramcalc-widget settings="model=mistral-7b&amp;gpu=l4&amp;finetune=qlora&amp;view=compact&amp;theme=auto"></vramcalc-widget>';
const OLD_DIV = '<div data-vramcalc="model=gpt2&amp;gpu=t4&amp;seq_len=1024"></div>';
const SECOND = '<vramcalc-widget settings="model=llama-2-13b&amp;gpu=h100-80gb"></vramcalc-widget>';  // the next page's
const expectedThemes = (host, system) => [host, system, host];  // the recipe's follows the host, theme=auto the system

// An article: a paragraph, the first widget (in view at load), text, the second, text, the third, text.
const article = (widgets) => `<h1>Memory</h1>\n${text(1)}\n${widgets[0]}\n${text(6)}\n${widgets[1]}\n${text(6)}\n${widgets[2]}\n${text(4)}`;
const head = (css) => `<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><script src="${site.url}embed.js"></script><style>${css}</style>`;

// A client router as the engines' (Material's instant loading, VitePress's): fetches the page, swaps the content in
// through innerHTML (so no script in it runs), pushes the address.
const ROUTER = (selector) => `<script>
document.addEventListener('click', async (e) => {
  const a = e.target.closest('a[data-nav]');
  if (!a) return;
  e.preventDefault();
  const html = await (await fetch(a.href)).text();
  const next = new DOMParser().parseFromString(html, 'text/html');
  document.querySelector(${JSON.stringify(selector)}).innerHTML = next.querySelector(${JSON.stringify(selector)}).innerHTML;
  history.pushState(null, '', a.href);
});
</script>`;

const HOSTS = {
  material: {
    widget: () => recipe('MkDocs'),
    page: (widgets) => `<!doctype html><html lang="en"><head>${head(`
      [data-md-color-scheme=default] { --md-default-bg-color: hsla(0, 0%, 100%, 1); --md-default-fg-color: #000000de; }
      [data-md-color-scheme=slate] { --md-default-bg-color: hsla(232, 15%, 14%, 1); --md-default-fg-color: #e2e4e9; }
      body { margin: 0; font: 16px/1.6 sans-serif; background-color: var(--md-default-bg-color); color: var(--md-default-fg-color); }
      .md-content__inner { max-width: 760px; margin: 0 auto; padding: 16px; }`)}</head>
      <body data-md-color-scheme="default"><nav><a data-nav href="two.html">Next page</a></nav>
      <article class="md-content__inner">${article(widgets.map((w) => `<p>${w}</p>`))}</article>${ROUTER('article')}</body></html>`,
    toggle: (page, dark) => page.evaluate((d) => document.body.setAttribute('data-md-color-scheme', d ? 'slate' : 'default'), dark),
    nav: 'article',
  },
  furo: {
    widget: () => recipe('Sphinx'),
    page: (widgets) => `<!doctype html><html lang="en"><head>${head(`
      body { --color-background-primary: oklch(1 0 0); --color-foreground-primary: black; }
      body[data-theme=dark] { --color-background-primary: oklch(0.21 0.01 265); --color-foreground-primary: oklch(0.93 0 0); }
      @media (prefers-color-scheme: dark) {
        body:not([data-theme=light]) { --color-background-primary: oklch(0.21 0.01 265); --color-foreground-primary: oklch(0.93 0 0); }
      }
      body { margin: 0; font: 16px/1.6 sans-serif; background: var(--color-background-primary); color: var(--color-foreground-primary); }
      .article-container { max-width: 760px; margin: 0 auto; padding: 16px; }`)}</head>
      <body data-theme="light"><div class="article-container"><article role="main">${article(widgets)}</article></div></body></html>`,
    toggle: (page, dark) => page.evaluate((d) => { document.body.dataset.theme = d ? 'dark' : 'light'; }, dark),
  },
  vitepress: {
    widget: () => recipe('VitePress'),
    page: (widgets) => `<!doctype html><html lang="en"><head>${head(`
      :root { --vp-c-bg: #ffffff; --vp-c-text-1: #3c3c43; }
      .dark { --vp-c-bg: #1b1b1f; --vp-c-text-1: #dfdfd6; }
      body { margin: 0; font: 16px/1.6 sans-serif; background-color: var(--vp-c-bg); color: var(--vp-c-text-1); transition: background-color 0.2s; }
      .vp-doc { max-width: 688px; margin: 0 auto; padding: 16px; }`)}</head>
      <body><div id="app"><nav><a data-nav href="two.html">Next page</a></nav><div class="vp-doc">${article(widgets.map((w) => `<p>${w}</p>`))}</div></div>
      ${ROUTER('.vp-doc')}</body></html>`,
    toggle: (page, dark) => page.evaluate((d) => document.documentElement.classList.toggle('dark', d), dark),
    nav: '.vp-doc',
  },
  docusaurus: {
    widget: () => recipe('Docusaurus'),
    page: (widgets) => reactPage(widgets),
    toggle: (page, dark) => page.evaluate((d) => document.documentElement.setAttribute('data-theme', d ? 'dark' : 'light'), dark),
    nav: 'react',
  },
};

// ---------- Docusaurus: React 19 renders the page on the server and hydrates it in the browser ----------

const require = createRequire(join(ROOT, 'package.json'));
// The app, the same source on the server and in the browser: blocks of the current route, links that change it.
function makeApp(React, pages) {
  const h = React.createElement;
  const element = (b, key) => {
    const m = /^<vramcalc-widget settings="([^"]*)"><\/vramcalc-widget>$/.exec(b);
    if (m) return h('vramcalc-widget', { key, settings: m[1].replace(/&amp;/g, '&') });  // JSX decodes &amp;
    const d = /^<div data-vramcalc="([^"]*)"><\/div>$/.exec(b);
    if (d) return h('div', { key, 'data-vramcalc': d[1].replace(/&amp;/g, '&') });
    return h('p', { key }, b);
  };
  return function App({ initial }) {
    const [route, setRoute] = React.useState(initial);
    const go = (e) => { e.preventDefault(); history.pushState(null, '', e.currentTarget.href); setRoute('two'); };
    return h('div', { className: 'main-wrapper' },
      h('nav', null, h('a', { href: 'two.html', onClick: go, 'data-nav': '' }, 'Next page')),
      h('article', null, pages[route].map((b, i) => element(b, `${route}-${i}`))));
  };
}
const reactPages = (widgets) => ({
  index: ['Memory', 'One paragraph.', widgets[0], ...Array(6).fill('A paragraph of text about memory.'), widgets[1],
    ...Array(6).fill('More text.'), widgets[2], ...Array(4).fill('The end.')],
  two: ['Second page', SECOND],
});
function reactBundle() {
  const files = { react: 'react/cjs/react.development.js', scheduler: 'scheduler/cjs/scheduler.development.js',
    'react-dom': 'react-dom/cjs/react-dom.development.js', 'react-dom/client': 'react-dom/cjs/react-dom-client.development.js' };
  let src = 'var process = {env: {NODE_ENV: "development"}}; var __m = {}, __f = {};\n' +
    'function require(n) { if (!__m[n]) { __m[n] = {exports: {}}; __f[n](__m[n], __m[n].exports); } return __m[n].exports; }\n';
  for (const [name, file] of Object.entries(files))
    src += `__f[${JSON.stringify(name)}] = function (module, exports) {\n${readFileSync(join(ROOT, 'node_modules', file), 'utf8')}\n};\n`;
  return `${src}window.React = require('react'); window.ReactDOMClient = require('react-dom/client');\n`;
}
function reactPage(widgets) {
  const React = require('react');
  const { renderToString } = require('react-dom/server');
  const pages = reactPages(widgets);
  const html = renderToString(React.createElement(makeApp(React, pages), { initial: 'index' }));
  writeFileSync(join(docsDir, 'react.js'), reactBundle());
  writeFileSync(join(docsDir, 'hydrate.js'), `const App = (${makeApp})(React, ${JSON.stringify(pages)});
ReactDOMClient.hydrateRoot(document.getElementById('__docusaurus'), React.createElement(App, {initial: 'index'}),
  {onRecoverableError: (e) => console.error('recoverable: ' + e.message)});`);
  return `<!doctype html><html lang="en" data-theme="light"><head>${head(`
    html { --ifm-background-color: #ffffff; --ifm-font-color-base: #1c1e21; }
    html[data-theme=dark] { --ifm-background-color: #1b1b1d; --ifm-font-color-base: #e3e3e3; }
    body { margin: 0; font: 16px/1.6 sans-serif; background-color: var(--ifm-background-color); color: var(--ifm-font-color-base); }
    article { max-width: 760px; margin: 0 auto; padding: 16px; }`)}</head>
    <body><div id="__docusaurus">${html}</div><script src="react.js"></script><script src="hydrate.js"></script></body></html>`;
}

for (const [name, host] of Object.entries(HOSTS)) {
  test(`${name}: the README's recipe, no layout shift, themes, in-site navigation`, async () => {
    const mine = host.widget();
    const trio = [mine, COMPACT_AUTO, OLD_DIV].map((w) => w.replace(/https:\/\/HOST\//g, site.url));
    writeFileSync(join(docsDir, 'two.html'), host.page([SECOND, COMPACT_AUTO, OLD_DIV]));
    for (const width of [375, 1280]) {
      writeFileSync(join(docsDir, `${name}.html`), host.page(trio));
      const { page, context, log, scripts } = await read(browser, `${docs.url}${name}.html`, [site.url, docs.url], width);
      await checkWidgets(page, `${name}, ${width} px`, expectedThemes('light', 'system'));
      const cls = await layoutShift(page);
      console.log(`${name} at ${width} px: layout shift ${cls.toFixed(4)}`);
      assert.ok(cls <= 0.05, `${name} at ${width} px: layout shift ${cls}`);
      assert.deepEqual(scripts.length, 1, 'embed.js loaded once');
      if (width === 375) {
        // The host's own toggle: the widgets that follow it turn dark, the one on the system's scheme stays.
        await host.toggle(page, true);
        await checkWidgets(page, `${name}, dark`, expectedThemes('dark', 'system'));
        await host.toggle(page, false);
        await checkWidgets(page, `${name}, light again`, expectedThemes('light', 'system'));
        if (host.nav) {
          await page.evaluate(() => scrollTo(0, 0));
          await page.click('a[data-nav]');
          await page.waitForURL(/two\.html$/);
          await page.waitForFunction(() => document.querySelector('vramcalc-widget[settings*="llama-2-13b"]'));
          const count = name === 'docusaurus' ? 1 : 3;
          await checkWidgets(page, `${name}, after in-site navigation`, expectedThemes('light', 'system').slice(0, count));
          assert.equal(scripts.length, 1, 'the script was not loaded again');
        }
      }
      assert.deepEqual(log.errors, [], `${name}: no console error`);
      assert.deepEqual(log.foreign, [], 'only the two origins');
      await context.close();
    }
  });
}

test('embed.js: small, and nothing from another origin', () => {
  const js = readFileSync(join(SITE, 'embed.js'));
  const gz = gzipSync(js, { level: 9 }).length;
  console.log(`embed.js: ${js.length} bytes, ${gz} gzip`);
  assert.ok(gz <= 4096, `embed.js is ${gz} bytes gzip`);
  const code = js.toString().replace(/^\s*\/\/.*$/gm, '');
  assert.doesNotMatch(code, /https?:\/\//, 'no address of its own: it takes its site from its own src');
});

// The measurement itself: a page that pushes its text down by 300 px after its first paint shows the shift.
test('layout-shift entries: a block inserted above the text after load is seen', async () => {
  const page400 = `<!doctype html><html><head>${head('body { font: 16px/1.6 sans-serif; }')}</head><body>${text(20)}
    <script>setTimeout(() => document.body.prepend(Object.assign(document.createElement('div'), {style: 'height: 300px'})), 300);</script></body></html>`;
  writeFileSync(join(docsDir, 'shift.html'), page400);
  const { page, context } = await openPage(browser, `${docs.url}shift.html`, { origins: [site.url, docs.url], ready: false,
    viewport: { width: 375, height: 800 }, setup: recordShifts });
  await page.waitForTimeout(800);
  const cls = await layoutShift(page);
  assert.ok(cls > 0.05, `the shift is measured: ${cls}`);
  await context.close();
});
