// The page's features in Chromium: compare (pin A), history (Back, Forward, Undo), the loading and failure states,
// <noscript>, the charts (range and keyboard), print, the compact summary on narrow screens, the sequence clamp,
// the stale state, the step's timeline, the gradient-accumulation hint, suggestions that save nothing visible, the theme and view links.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { openPage, settle, cli, showExports, ARTIFACTS, ROOT, CLI } from './lib.mjs';
import { withSiteAndBrowser } from './hooks.mjs';

let server;
let browser;
withSiteAndBrowser((s, b) => { server = s; browser = b; });

const open = (query, options) => openPage(browser, server.url + query, options);
const GiB = 2 ** 30;

function estimate(config) {
  const r = cli('estimate', typeof config === 'string' ? config : JSON.stringify(config));
  assert.equal(r.code, 0, `the CLI rejected ${JSON.stringify(config)}`);
  return JSON.parse(r.stdout);
}
const shownConfig = async (page) => page.textContent('#config-json');
const total = (page) => page.getAttribute('#total', 'data-bytes');

async function clean(page, log) {
  assert.deepEqual(log.dialogs, [], 'no dialog');
  assert.deepEqual(log.foreign, [], 'no request elsewhere');
  assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no CSP violation');
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no injected script ran');
}

test('compare: pin A, change B, the per-term difference; the link carries both; unpin', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb&finetune=lora', { viewport: { width: 1400, height: 1000 } });
  assert.equal(await page.isHidden('#compare'), true);
  const configA = await shownConfig(page);
  await page.click('#pin');
  await settle(page);
  assert.equal(await page.getAttribute('#pin', 'data-pinned'), 'true');
  assert.equal(await page.textContent('#pin'), 'Pin B as A');
  await page.fill('#f-micro_batch', '4');
  await page.selectOption('#f-checkpointing', 'full');
  await settle(page);
  const configB = await shownConfig(page);
  const a = estimate(configA);
  const b = estimate(configB);
  const cell = (row, col) => page.getAttribute(`#compare-table tr[data-row=${row}] td[data-col=${col}]`, 'data-bytes');
  assert.equal(await cell('total', 'a'), String(a.total_bytes));
  assert.equal(await cell('total', 'b'), String(b.total_bytes));
  assert.equal(await cell('total', 'diff'), String(b.total_bytes - a.total_bytes));
  assert.equal(await page.getAttribute('#compare-table tr[data-row=fits] td[data-col=a]', 'data-fits'), String(a.fits));
  assert.equal(await page.getAttribute('#compare-table tr[data-row=fits] td[data-col=b]', 'data-fits'), String(b.fits));
  for (const k of Object.keys(b.per_gpu_bytes)) {
    const x = a.per_gpu_bytes[k] || 0;
    const y = b.per_gpu_bytes[k] || 0;
    if (!x && !y) continue;
    assert.equal(await cell(k, 'diff'), String(y - x), `${k}: B − A at each one's peak`);
  }
  assert.match(await page.textContent('#compare .compare-changed'), /micro_batch: default → 4.*checkpointing: default → full/);
  await page.locator('#answer').screenshot({ path: join(ARTIFACTS, 'compare.png') });

  // The link carries A as pin=; opened, it shows the same comparison.
  const link = await page.inputValue('#share-url');
  const pin = new URL(link).searchParams.get('pin');
  assert.equal(pin, 'model=llama-2-7b&gpu=a100-80gb&finetune=lora');
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.equal(await again.page.getAttribute('#compare-table tr[data-row=total] td[data-col=a]', 'data-bytes'), String(a.total_bytes));
  assert.equal(await again.page.getAttribute('#compare-table tr[data-row=total] td[data-col=b]', 'data-bytes'), String(b.total_bytes));
  await again.context.close();
  const narrow = await open(link.slice(server.url.length), { viewport: { width: 360, height: 740 } });
  assert.ok(await narrow.page.$eval('#compare .scroll', (el) => el.scrollWidth <= el.clientWidth), 'A and B side by side at 360 px');
  await narrow.context.close();

  // While B is invalid, the comparison stays with B's last valid figures, marked stale.
  await page.fill('#f-seq_len', 'x');
  await settle(page);
  assert.match(await page.getAttribute('#compare-table', 'class'), /stale/);
  await page.fill('#f-seq_len', '2048');
  await settle(page);

  await page.click('#unpin');
  await settle(page);
  assert.equal(await page.isHidden('#compare'), true);
  assert.doesNotMatch(page.url(), /pin=/);
  assert.equal(await page.textContent('#pin'), 'Pin as A');
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('compare: a hostile pin is read by the same parser and shown as text', async () => {
  const pin = 'model=<script>window.__pwned=1</script>&gpu=a100-80gb&seq_len=abc&embed=1&pin=x&foo=<img src=x onerror=alert(1)>';
  const { page, context, log } = await open(`?model=gpt2&gpu=t4&pin=${encodeURIComponent(pin)}`);
  const problems = await page.$$eval('#link-problems li', (li) => li.map((x) => x.textContent));
  for (const p of ['pin: model', 'pin: seq_len', 'pin: embed', 'pin: pin', 'pin: foo'])
    assert.ok(problems.some((x) => x.startsWith(p)), `${p} reported: ${problems.join(' | ')}`);
  assert.match(problems.join('\n'), /<script>window\.__pwned=1<\/script>/, 'as text');
  assert.equal(await page.evaluate(() => document.querySelectorAll('img, iframe, svg:not(.chart)').length), 0);
  assert.equal(await page.isVisible('#compare'), true);
  const a = estimate({ model: 'llama-2-7b', gpu: 'a100-80gb' });
  assert.equal(await page.getAttribute('#compare-table tr[data-row=total] td[data-col=a]', 'data-bytes'), String(a.total_bytes));
  // A pinned configuration the core refuses: its message, as text.
  const invalid = await open(`?pin=${encodeURIComponent('zero=2&seq_len=8')}`);
  assert.match(await invalid.page.textContent('#compare'), /A is not a valid configuration: zero: /);
  assert.deepEqual(invalid.log.errors, []);
  await invalid.context.close();
  const big = await open(`?pin=${'A'.repeat(30000)}`);
  assert.match(await big.page.textContent('#link-problems'), /pin value is 30000 characters long/);
  await big.context.close();
  await clean(page, log);
  await context.close();
});

test('history: each committed change is an entry; Back and Forward restore the form and the answer; Undo', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  const start = { url: page.url(), bytes: await total(page) };
  const entries = await page.evaluate(() => history.length);
  // Typing is one entry, committed when the field is left.
  await page.fill('#f-seq_len', '4');
  await page.fill('#f-seq_len', '40');
  await page.fill('#f-seq_len', '4096');
  await page.press('#f-seq_len', 'Tab');
  await settle(page);
  const second = { url: page.url(), bytes: await total(page) };
  assert.match(second.url, /seq_len=4096/);
  await page.selectOption('#f-gpu', 'h100-80gb');
  await settle(page);
  const third = { url: page.url(), bytes: await total(page) };
  assert.equal(await page.evaluate(() => history.length), entries + 2, 'two entries: the typed length, the GPU');

  const at = async (want, seq, gpu) => {
    await page.waitForFunction((u) => location.href === u, want.url);
    await settle(page);
    assert.equal(await total(page), want.bytes);
    assert.equal(await page.inputValue('#f-seq_len'), seq);
    assert.equal(await page.inputValue('#f-gpu'), gpu);
  };
  await page.goBack();
  await at(second, '4096', 'a100-80gb');
  await page.goBack();
  await at(start, '2048', 'a100-80gb');
  await page.goForward();
  await at(second, '4096', 'a100-80gb');
  await page.goForward();
  await at(third, '4096', 'h100-80gb');

  // A suggestion can be undone: the Undo control next to the suggestions is Back.
  assert.equal(await page.isHidden('#undo-box'), true);
  const change = await page.textContent('#suggestions li:first-child .change');
  await page.click('#suggestions li:first-child .suggest');
  await settle(page);
  const applied = { url: page.url(), bytes: await total(page) };
  assert.notEqual(applied.bytes, third.bytes);
  assert.equal(await page.isVisible('#undo'), true);
  assert.equal(await page.textContent('#undo'), `Undo “${change}”`);
  await page.click('#undo');
  await at(third, '4096', 'h100-80gb');
  assert.equal(await page.isHidden('#undo-box'), true);
  await page.goForward();
  await page.waitForFunction((u) => location.href === u, applied.url);
  await settle(page);
  assert.equal(await total(page), applied.bytes);
  assert.equal(await page.isVisible('#undo'), true);
  // The model field: a pick is one entry.
  await page.fill('#f-model', 'mistral-7b');
  await page.press('#f-model', 'Tab');
  await settle(page);
  await page.goBack();
  await page.waitForFunction((u) => location.href === u, applied.url);
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'llama-2-7b');
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('loading and failure: one clear state, no internals, Retry fetches the module again', async () => {
  for (const file of ['vramcalc.wasm', 'vramcalc.js']) {
    let blocked = true;
    const { page, context } = await open('?model=llama-2-7b', {
      ready: false,
      setup: (ctx) => ctx.route(`**/${file}`, (route) => (blocked ? route.abort() : route.continue())),
    });
    await page.waitForSelector('#load-state.failed', { timeout: 15000 });
    const text = await page.textContent('#answer');
    assert.match(text, /The calculator could not start/);
    assert.doesNotMatch(text, /Loading/, `${file}: no “Loading…” beside the error`);
    assert.doesNotMatch(text, /Aborted|RuntimeError|CompileError|wasm|instantiate|TypeError|\.js/i, `${file}: no internals`);
    assert.equal(await page.isHidden('#results'), true);
    assert.equal(await page.getAttribute('#load-state', 'role'), 'alert');
    blocked = false;
    await page.click('#retry');
    await page.waitForSelector('body[data-ready=true]', { timeout: 15000 });
    assert.equal(await page.isHidden('#load-state'), true);
    assert.equal(await total(page), String(estimate(await shownConfig(page)).total_bytes), `${file}: works after Retry`);
    await context.close();
  }
});

test('without JavaScript: the noscript message, not an empty calculator', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto(server.url);
  assert.equal(await page.isVisible('.noscript'), true);
  assert.match(await page.textContent('.noscript'), /needs JavaScript/);
  assert.equal(await page.isVisible('main'), false);
  await context.close();
});

test('charts: the range is around the capacity line; points are reachable and usable from the keyboard', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb&finetune=lora');
  const native = estimate(await shownConfig(page));
  for (const id of ['chart-mb', 'chart-seq']) {
    const pts = await page.$$eval(`#${id} .pt`, (c) => c.map((x) => ({ x: Number(x.dataset.x), label: x.getAttribute('aria-label'),
      role: x.getAttribute('role'), fits: x.classList.contains('good'), tab: x.getAttribute('tabindex') })));
    assert.ok(pts.length >= 8, `${id}: ${pts.length} points`);
    assert.ok(pts.some((p) => p.fits) && pts.some((p) => !p.fits), `${id}: both sides of the capacity`);
    const first = pts.findIndex((p) => !p.fits);
    assert.ok(first >= 2 && first <= pts.length - 2, `${id}: the crossing is inside the range, not at an end`);
    assert.equal(pts.filter((p) => p.tab === '0').length, 1, `${id}: one tab stop`);
    for (const p of pts) {
      assert.equal(p.role, 'button');
      assert.match(p.label, /^(micro-batch|sequence length) \d+: [\d.]+ [GM]iB, (fits|does not fit)/);
    }
  }
  const mbs = await page.$$eval('#chart-mb .pt', (c) => c.map((x) => Number(x.dataset.x)));
  assert.ok(mbs.includes(native.max_micro_batch) && mbs.includes(native.max_micro_batch + 1), 'the last that fits and the first that does not');
  assert.ok(Math.max(...mbs) <= 16 * Math.max(1, native.max_micro_batch), `no flat run up to ${Math.max(...mbs)}`);

  // Tab reaches the current point; the arrows move; Enter uses the point and keeps the focus on it.
  await page.focus('#f-device');
  let found = false;
  for (let i = 0; i < 60 && !found; i++) {
    await page.keyboard.press('Tab');
    found = await page.evaluate(() => document.activeElement?.closest('#chart-mb') !== null);
  }
  assert.ok(found, 'Tab reaches the micro-batch chart');
  assert.match(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), /^micro-batch 1: .*\(current\)$/);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  const x = await page.evaluate(() => document.activeElement.dataset.x);
  await page.keyboard.press('Enter');
  await settle(page);
  await settle(page);
  assert.equal(await page.inputValue('#f-micro_batch'), x);
  assert.equal(JSON.parse(await shownConfig(page)).micro_batch, Number(x));
  assert.equal(await page.evaluate(() => document.activeElement.dataset.x), x, 'the focus stays on the point');
  assert.match(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), /\(current\)$/);
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('print: the figures and the memory bar, in colour, without the controls', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  await page.emulateMedia({ media: 'print', colorScheme: 'dark' });
  assert.equal(await page.$eval('.card', (el) => getComputedStyle(el).backgroundColor), 'rgb(255, 255, 255)', 'light on paper');
  for (const sel of ['#total', '#bar', '#legend', '#embed-summary', '#suggestions', '#phases'])
    assert.equal(await page.isVisible(sel), true, `${sel} printed`);
  for (const sel of ['#inputs', '.share', '#pin', '.foot', '#adamw-form'])
    assert.equal(await page.isVisible(sel), false, `${sel} not printed`);
  const seg = await page.$eval('#bar .seg', (el) => ({ bg: getComputedStyle(el).backgroundColor,
    adjust: getComputedStyle(el).printColorAdjust, width: el.getBoundingClientRect().width }));
  assert.notEqual(seg.bg, 'rgba(0, 0, 0, 0)');
  assert.equal(seg.adjust, 'exact');
  assert.ok(seg.width > 20);
  await clean(page, log);
  await context.close();
});

test('narrow screens: a compact summary stays in view while editing fields far from the answer', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb', { viewport: { width: 360, height: 740 } });
  assert.equal(await page.isVisible('#mini'), false, 'hidden while the answer is in view');
  await page.locator('#f-grad_accum').scrollIntoViewIfNeeded();
  await page.focus('#f-grad_accum');
  await page.waitForSelector('#mini', { state: 'visible' });
  const box = await page.locator('#mini').boundingBox();
  assert.equal(Math.round(box.y), 0);
  assert.equal(await page.textContent('#mini-total'), await page.textContent('#total'));
  assert.equal(await page.getAttribute('#mini-fits', 'data-fits'), await page.getAttribute('#fits', 'data-fits'));
  // Editing far below: the summary follows.
  await page.fill('#f-grad_accum', '2');
  await settle(page);
  assert.equal(await page.textContent('#mini-total'), await page.textContent('#total'));
  const field = await page.locator('#f-grad_accum').boundingBox();
  assert.ok(field.y >= box.height, 'the field being edited is not under the summary');
  await page.click('#mini-go');
  await page.waitForSelector('#mini', { state: 'hidden' });
  await clean(page, log);
  await context.close();
  // On wide screens too (issue 24: the answer in view at every width): total against capacity, headroom, the
  // largest micro-batch and the first change that fits.
  const wide = await open('?model=llama-2-7b', { viewport: { width: 1280, height: 600 } });
  await wide.page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
  await wide.page.waitForSelector('#mini', { state: 'visible' });
  const r = estimate(JSON.parse(await wide.page.textContent('#config-json')));
  assert.equal(await wide.page.textContent('#mini-total'), await wide.page.textContent('#total'));
  assert.match(await wide.page.textContent('#mini-head'), r.headroom_bytes < 0 ? / over$/ : / free$/);
  assert.equal(await wide.page.textContent('#mini-mb'), `largest micro-batch ${r.max_micro_batch || 'none'}`);
  const fix = r.suggestions.find((s) => s.fits);
  assert.ok(!r.fits && fix, 'llama-2-7b full fine-tuning on one A100 has a change that fits');
  assert.match(await wide.page.textContent('#mini-fix'), new RegExp(`^First fix: ${fix.change.replace(/[()+.]/g, '\\$&')} → `));
  await wide.context.close();
});

test('a model with learned positions clamps the sequence length, with a note next to the field', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb&seq_len=4096');
  await page.fill('#f-model', 'gpt2');
  await settle(page);
  assert.equal(await page.inputValue('#f-seq_len'), '1024');
  assert.match(await page.textContent('#n-seq_len'), /Set to 1024 \(was 4096\).*1024 learned positions/);
  assert.equal(await page.textContent('#e-seq_len'), '');
  assert.equal(await page.getAttribute('#fits', 'data-fits'), String(estimate(await shownConfig(page)).fits));
  await page.fill('#f-seq_len', '512');
  await settle(page);
  assert.equal(await page.textContent('#n-seq_len'), '', 'the note goes with the next change');
  // A catalog model: the bound from the core's message.
  await page.fill('#f-seq_len', '4096');
  await page.fill('#f-model', 'openai-community/gpt2-medium');
  await settle(page);
  assert.equal(await page.inputValue('#f-seq_len'), '1024');
  // A link that names the model but no length: the model's, not the default's.
  const link = await open('?model=gpt2&gpu=t4');
  assert.equal(await link.page.inputValue('#f-seq_len'), '1024');
  assert.equal(await link.page.getAttribute('#fits', 'data-fits') !== 'invalid', true);
  await link.context.close();
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('while a field is invalid, the results are dimmed, marked stale and inert', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  assert.equal(await page.isVisible('#sug-h .stale-tag'), false);
  await page.fill('#f-micro_batch', '0');
  await settle(page);
  assert.equal(await page.evaluate(() => document.body.classList.contains('stale')), true);
  for (const h of ['answer-h', 'sug-h', 'curves-h', 'phases-h']) assert.equal(await page.isVisible(`#${h} .stale-tag`), true, h);
  assert.equal(await page.$eval('#suggestions', (el) => el.inert), true);
  assert.equal(await page.$eval('.charts', (el) => el.inert), true);
  assert.ok(Number(await page.$eval('#suggestions', (el) => getComputedStyle(el).opacity)) < 0.6);
  assert.ok(Number(await page.$eval('.figures', (el) => getComputedStyle(el).opacity)) < 0.6);
  await page.fill('#f-micro_batch', '1');
  await settle(page);
  assert.equal(await page.evaluate(() => document.body.classList.contains('stale')), false);
  assert.equal(await page.$eval('#suggestions', (el) => el.inert), false);
  await clean(page, log);
  await context.close();
});

test('hints and suggestions tell the truth: gradient accumulation, savings under 0.05 GiB not listed, paged states', async () => {
  const { page, context, log } = await open('?model=llama-3.2-1b&gpu=l4');
  const hint = await page.textContent('#h-f-grad_accum');
  assert.match(hint, /global batch/);
  assert.match(hint, /no_sync/);
  assert.doesNotMatch(hint, /not the memory/);
  const native = estimate(await shownConfig(page));
  const tiny = native.suggestions.filter((s) => native.total_bytes - s.total_bytes < 0.05 * GiB);
  console.log(`suggestions of the core that save under 0.05 GiB, not listed: ${tiny.map((s) => s.change).join('; ') || 'none'}`);
  const listed = await page.$$eval('#suggestions .change', (c) => c.map((x) => x.textContent));
  const kept = native.suggestions.filter((s) => !tiny.includes(s)).map((s) => s.change);
  assert.deepEqual([...listed].sort(), [...kept].sort());
  if (!kept.length) assert.match(await page.textContent('#suggestions'), /No change to suggest/);
  // The page's own filter (its source module, in Node), on a report with a saving of 11 MiB (as the core once
  // listed) beside a real one.
  const { shownSuggestions } = await import(join(ROOT, 'web/answer.js'));
  const sgt = (change, total) => ({ change, total_bytes: total, fits: true, why: '', config: {} });
  const listedNow = shownSuggestions({ total_bytes: 20 * 2 ** 30,
    suggestions: [sgt('tiny', 20 * 2 ** 30 - 11 * 2 ** 20), sgt('real', 10 * 2 ** 30)] }).map((x) => x.change);
  assert.deepEqual(listedNow, ['real']);
  // Paged optimizer states: a term of the total, so a segment of the bar.
  const paged = await open('?model=llama-2-7b&gpu=a100-80gb&optimizer=paged-adamw');
  assert.equal(await paged.page.isVisible('#bar .t-paged_optimizer_states'), true);
  const legend = await paged.page.$$eval('#legend .term', (t) => t.map((x) => x.dataset.term));
  const r = estimate(await shownConfig(paged.page));
  assert.deepEqual(legend.sort(), Object.keys(r.per_gpu_bytes).filter((k) => r.per_gpu_bytes[k] > 0).sort());
  await paged.context.close();
  await clean(page, log);
  await context.close();
});

test('theme and view links: validated like embed; bad values reported, the page still works', async () => {
  const dark = await open('?model=gpt2&gpu=t4&seq_len=1024&theme=dark');
  assert.equal(await dark.page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  assert.ok((await dark.page.evaluate(() => getComputedStyle(document.body).backgroundColor)).startsWith('rgb(15, 20, 27)'));
  assert.doesNotMatch(await dark.page.inputValue('#share-url'), /theme/, 'the share link is the configuration only');
  assert.match(dark.page.url(), /theme=dark/, 'the address keeps the look');
  await dark.context.close();
  const { page, context, log } = await open('?model=gpt2&theme=%3Cscript%3Ewindow.__pwned=1%3C/script%3E&view=tiny&embed=1');
  const problems = await page.$$eval('#link-problems li', (li) => li.map((x) => x.textContent));
  assert.ok(problems.some((p) => /^theme must be one of auto, light, dark, got "<script>/.test(p)), problems.join(' | '));
  assert.ok(problems.some((p) => /^view must be one of full, compact/.test(p)));
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), undefined);
  assert.equal(await page.evaluate(() => document.body.classList.contains('view-full')), true);
  assert.equal(await page.isVisible('#total'), true);
  await clean(page, log);
  await context.close();
});

// dom.js writes numbers as toLocaleString('en') does without loading the locale data: checked against Intl itself.
test('grouped numbers equal toLocaleString("en")', async () => {
  const { grouped } = await import(join(ROOT, 'web/dom.js'));
  const values = [0, 5, 999, 1000, 1234567, 12.345, 0.005, 1234.5, 12.5, 1e-4, 0.01, 0.125, 5.05, 999.995, 123456.7, 2.5e9];
  let seed = 7;
  for (let i = 0; i < 2000; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    values.push((seed / 2 ** 31) * 10 ** ((seed % 13) - 4));
  }
  for (const x of values)
    for (const [most, least] of [[0, 0], [1, 0], [2, 0], [2, 2], [3, 0]])
      assert.equal(grouped(x, most, least), x.toLocaleString('en', { maximumFractionDigits: most, minimumFractionDigits: least }),
        `${x} with ${least}-${most} decimals`);
});

test('the step, moment by moment: the CLI\'s --timeline, in order, updated as a field changes', async () => {
  const { page, context, log } = await open('?model=llama-3.1-8b&gpu=a100-80gb&seq_len=4096');
  await showExports(page);
  const rows = () => page.$$eval('#timeline tr', (rs) => rs.map((r) => [r.dataset.moment, Number(r.dataset.bytes), r.classList.contains('peak')]));
  const expected = async () => {
    const config = await shownConfig(page);
    const r = spawnSync(CLI, ['estimate', '-', '--timeline'], { input: config, encoding: 'utf8' });
    assert.equal(r.status, 0);
    const t = JSON.parse(r.stdout).timeline;
    return t.moments.map((m) => [m.name, m.allocated_bytes, m.name === t.peak_moment]);
  };
  assert.equal(await page.isHidden('#timeline-box'), false);
  const first = await rows();
  assert.equal(first[0][0], 'micro_batch_start');
  assert.deepEqual(first, await expected());
  await page.fill('#f-micro_batch', '3');
  await settle(page);
  const after = await rows();
  assert.notDeepEqual(after, first);
  assert.deepEqual(after, await expected());
  await clean(page, log);
  await context.close();
});
