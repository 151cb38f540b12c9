// The page for a first-time user (issue 24): the short path, the answer in view after every input, the new-user
// tasks in at most five inputs and equal to the CLI, empty fields as errors with the link marked stale, and no
// serious or critical axe-core violation on the page and the embed (light and dark, desktop and 360 px).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { openPage, settle, cli, ROOT } from './lib.mjs';
import { withSiteAndBrowser } from './hooks.mjs';

let server;
let browser;
withSiteAndBrowser((s, b) => { server = s; browser = b; });

// A fresh page as a new user meets it: nothing unfolded.
const fresh = (query = '', viewport = { width: 1400, height: 900 }) =>
  openPage(browser, server.url + query, { viewport, unfold: false });

function estimate(configText) {
  const r = cli('estimate', configText);
  assert.equal(r.code, 0, `the CLI rejected ${configText}`);
  return JSON.parse(r.stdout);
}

// The answer is in view: the answer card's verdict on screen, or the one-line answer at the top.
async function answerInView(page) {
  return page.evaluate(() => {
    const onScreen = (el) => {
      if (!el || !el.checkVisibility()) return false;
      const r = el.getBoundingClientRect();
      return r.bottom > 0 && r.top < innerHeight && r.width > 0;
    };
    return onScreen(document.getElementById('verdict')) || onScreen(document.getElementById('mini'));
  });
}

// One input as a user gives it: typing into a field (then leaving it) or picking an option.
async function input(page, step) {
  const [sel, how, value] = step;
  if (how === 'type') {
    await page.click(sel);
    await page.fill(sel, value);
    await page.press(sel, 'Tab');
  } else {
    await page.selectOption(sel, value);
  }
  await settle(page);
}

const TASKS = [
  { name: 'Llama-3.1-8B full fine-tuning on 8×A100-80GB with FSDP at 4096',
    steps: [['#f-model', 'type', 'Llama-3.1-8B'], ['#f-gpus', 'type', '8'], ['#f-strategy', 'pick', 'fsdp'],
      ['#f-seq_len', 'type', '4096']],
    want: { model: 'meta-llama/Llama-3.1-8B', gpu: 'a100-80gb', gpus: 8, strategy: 'fsdp', seq_len: 4096, finetune: 'full' } },
  { name: 'Qwen3-8B LoRA on one RTX 4090 at 4k',
    steps: [['#f-model', 'type', 'Qwen3-8B'], ['#f-gpu', 'pick', 'rtx-4090'], ['#f-finetune', 'pick', 'lora'],
      ['#f-seq_len', 'type', '4096']],
    want: { model: 'Qwen/Qwen3-8B', gpu: 'rtx-4090', gpus: 1, seq_len: 4096, finetune: { method: 'lora' } } },
  { name: 'QLoRA of a 70B model on one H100',
    steps: [['#f-model', 'type', 'llama 3.1 70b'], ['#f-gpu', 'pick', 'h100-80gb'], ['#f-finetune', 'pick', 'qlora']],
    want: { model: 'meta-llama/Llama-3.1-70B', gpu: 'h100-80gb', gpus: 1, finetune: { method: 'qlora' } } },
];

for (const task of TASKS) {
  test(`new user: ${task.name}, in ${task.steps.length} inputs, the answer in view after each`, async () => {
    const { page, context, log } = await fresh();
    assert.ok(task.steps.length <= 5);
    for (const step of task.steps) {
      await input(page, step);
      assert.equal(await page.textContent(`#e-${step[0].slice(3)}`), '', `${step.join(' ')}: no error`);
      assert.ok(await answerInView(page), `${step.join(' ')}: the answer is in view`);
    }
    const sent = JSON.parse(await page.textContent('#config-json'));
    for (const [k, v] of Object.entries(task.want)) assert.deepEqual(k === 'finetune' && typeof v === 'object' ? { method: sent.finetune.method } : sent[k] ?? (k === 'gpus' ? 1 : undefined), v, k);
    const r = estimate(JSON.stringify(sent));
    assert.equal(await page.getAttribute('#total', 'data-bytes'), String(r.total_bytes));
    assert.equal(await page.getAttribute('#fits', 'data-fits'), String(r.fits));
    assert.deepEqual(log.errors, []);
    await context.close();
  });
}

test('the first view: the basics and folded groups; a choice that needs a group opens it', async () => {
  const { page, context } = await fresh();
  const visible = await page.$$eval('#inputs input, #inputs select, #inputs textarea',
    (els) => els.filter((e) => e.checkVisibility()).map((e) => e.id));
  assert.deepEqual(visible, ['f-model', 'f-gpu', 'f-gpus', 'f-finetune', 'f-method', 'f-seq_len', 'f-micro_batch']);
  assert.equal(await page.$eval('#group-parallelism', (d) => d.open), false);
  await input(page, ['#f-gpus', 'type', '4']);
  assert.equal(await page.$eval('#group-parallelism', (d) => d.open), true, 'more than one GPU opens the parallelism');
  await input(page, ['#f-method', 'pick', 'dpo']);
  assert.equal(await page.$eval('#group-method', (d) => d.open), true, 'a TRL method opens its fields');
  assert.equal(await page.isVisible('#f-prompt_len'), true);
  // A folded group says what it holds.
  assert.equal(await page.textContent('#sum-precision'), 'defaults');
  await context.close();
  const linked = await fresh('?model=llama-2-7b&gpu=a100-80gb&optimizer=adamw-8bit');
  assert.equal(await linked.page.$eval('#group-precision', (d) => d.open), true, 'a link that sets a key opens its group');
  await linked.context.close();
});

test('an emptied field is an error next to it, the link and exports marked stale until it is fixed', async () => {
  const { page, context } = await fresh('?model=llama-2-7b&gpu=a100-80gb&micro_batch=2');
  const link = await page.inputValue('#share-url');
  await page.fill('#f-micro_batch', '');
  await settle(page);
  assert.match(await page.textContent('#e-micro_batch'), /must be an integer from 1/);
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'invalid');
  assert.equal(await page.isVisible('#share-stale'), true);
  assert.equal(await page.inputValue('#share-url'), link, 'the link stays the last valid one');
  assert.match(await page.textContent('#export-note'), /Fix the highlighted settings/);
  await page.fill('#f-micro_batch', '3');
  await settle(page);
  assert.equal(await page.textContent('#e-micro_batch'), '');
  assert.equal(await page.isVisible('#share-stale'), false);
  assert.match(await page.inputValue('#share-url'), /micro_batch=3/);
  await context.close();
});

test('the model field is never rewritten while typed in', async () => {
  const { page, context } = await fresh();
  await page.click('#f-model');
  const url = 'https://huggingface.co/Qwen/Qwen3-8B';
  for (const ch of url) await page.keyboard.type(ch);
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), url);
  assert.equal(JSON.parse(await page.textContent('#config-json')).model, 'Qwen/Qwen3-8B');
  await page.keyboard.press('Tab');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'Qwen/Qwen3-8B');
  await context.close();
});

const AXE = join(ROOT, 'node_modules/axe-core/axe.min.js');
async function axe(query, viewport, colorScheme) {
  createRequire(join(ROOT, 'package.json')).resolve('axe-core');  // a clear error when npm ci has not run
  const context = await browser.newContext({ viewport, colorScheme, bypassCSP: true });
  const page = await context.newPage();
  await page.goto(server.url + query);
  await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  await context.close();
  return found;
}

test('axe-core: no serious or critical violation on the page and the embed, light and dark, 1280 and 360 px', async () => {
  const problems = [];
  for (const query of ['?model=llama-2-7b&gpu=a100-80gb', '?model=llama-2-7b&gpu=a100-80gb&embed=1'])
    for (const viewport of [{ width: 1280, height: 900 }, { width: 360, height: 740 }])
      for (const scheme of ['light', 'dark'])
        for (const v of await axe(query, viewport, scheme)) problems.push(`${query} ${viewport.width}px ${scheme}: ${v}`);
  assert.deepEqual(problems, []);
});

test('charts scale to their data: a logarithmic axis when the values run far above the capacity, no flat line', async () => {
  const { page, context } = await fresh('?model=llama-2-70b&gpu=rtx-4090&seq_len=4096');
  for (const id of ['chart-mb', 'chart-seq']) {
    const pts = await page.$$eval(`#${id} circle`, (cs) => cs.map((c) => ({ y: Number(c.getAttribute('cy')), t: c.getAttribute('aria-label') })));
    assert.ok(pts.length >= 4, id);
    assert.equal(await page.getAttribute(`#${id} svg`, 'data-scale'), 'log', `${id}: log scale`);
    // Distinct values, distinct heights: nothing is clipped to the top edge.
    const byValue = new Map(pts.map((p) => [/: ([\d.]+ [KMGT]iB)/.exec(p.t)[1], p.y]));
    assert.equal(new Set(byValue.values()).size, byValue.size, `${id}: ${JSON.stringify([...byValue])}`);
  }
  await context.close();
});

test('model search: a misspelt name lists the closest models, one click picks one', async () => {
  const { page, context } = await fresh();
  await page.fill('#f-model', 'qwne3-8b');
  await settle(page);
  assert.match(await page.textContent('#e-model'), /Did you mean Qwen\/Qwen3-8B/);
  const listed = await page.$$eval('#model-results button', (b) => b.map((x) => x.dataset.model));
  assert.equal(listed[0], 'Qwen/Qwen3-8B');
  assert.ok(await answerInView(page));
  await page.click('#model-results button[data-model="Qwen/Qwen3-8B"]');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'Qwen/Qwen3-8B');
  assert.equal(await page.textContent('#e-model'), '');
  assert.equal(await page.isHidden('#model-results'), true);
  assert.equal(JSON.parse(await page.textContent('#config-json')).model, 'Qwen/Qwen3-8B');
  await context.close();
});

test('a sequence too long for the GPU is named as such, not as a micro-batch', async () => {
  const { page, context } = await fresh('?model=llama-2-7b&gpu=a100-80gb&finetune=lora&seq_len=262144');
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'false');
  assert.equal(await page.textContent('#max-mb'), 'none');
  assert.equal(await page.textContent('#max-mb-sub'), 'one sequence of 262,144 tokens is too long');
  await context.close();
});

test('make it fit: the planner, fetched when asked, lists plans that fit; one click applies a whole plan', async () => {
  const before = server.requests.length;
  const { page, context, log } = await fresh('?model=llama-2-13b&gpu=a100-80gb&seq_len=4096&micro_batch=2');
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'false');
  assert.ok(!server.requests.slice(before).some((u) => u.includes('vramcalc-plan')), 'the planner is not fetched at load');
  // No single change fits here (issue 21): the plans combine them.
  const r = estimate(await page.textContent('#config-json'));
  assert.ok(r.suggestions.every((s) => !s.fits || s.change.includes('GPU') || /LoRA|QLoRA/.test(s.change)));
  await page.click('#plans-go');
  await page.waitForSelector('#plans li', { timeout: 30000 });
  const plans = await page.$$eval('#plans li', (li) => li.map((x) => x.textContent));
  assert.ok(plans.length >= 1 && plans.every((t) => / · fits/.test(t)), plans.join('\n'));
  await page.waitForSelector('#plans-training li', { timeout: 30000 });
  await page.click('#plans li:first-child button');
  await settle(page);
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'true');
  const sent = await page.textContent('#config-json');
  const again = estimate(sent);
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(again.total_bytes));
  assert.equal(JSON.parse(sent).finetune, 'full', 'the method is kept');
  assert.equal(await page.isHidden('#make-fit'), true, 'it fits now');
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('which GPUs to rent: the core\'s sizing in a worker, the page stays responsive; one click applies an option', async () => {
  const { page, context, log } = await fresh('?model=llama-2-7b&gpu=a100-80gb&seq_len=4096');
  await page.click('#sizing-go');
  await page.waitForFunction(() => document.getElementById('sizing-state').textContent.includes('train_tokens'));
  await page.fill('#f-micro_batch', '2');  // the run's tokens are what sizing needs; typing still works meanwhile
  await settle(page);
  await context.close();
  const run = await fresh('?model=llama-2-7b&gpu=a100-80gb&seq_len=4096&train_tokens=1000000000');
  const config = JSON.parse(await run.page.textContent('#config-json'));
  await run.page.click('#sizing-go');
  await run.page.waitForSelector('#sizing-rows tr', { timeout: 60000 });
  const sized = JSON.parse(cli('sizing', JSON.stringify(config)).stdout);
  const first = sized.options.find((o) => o.fits);
  assert.equal(await run.page.textContent('#sizing-rows tr:first-child th'), `${first.gpus} × ${first.gpu_name}`);
  // The chart: one point per option that fits and is timed, the pareto ones solid.
  const timed = sized.options.filter((o) => o.fits && o.hours !== null);
  assert.equal((await run.page.$$('#sizing-chart circle')).length, timed.length);
  assert.equal((await run.page.$$('#sizing-chart circle.good')).length, timed.filter((o) => o.pareto).length);
  await run.page.click('#sizing-rows tr:first-child button');
  await settle(run.page);
  const sent = JSON.parse(await run.page.textContent('#config-json'));
  assert.equal(sent.gpu, first.gpu);
  assert.equal(sent.gpus ?? 1, first.gpus);
  assert.equal(await run.page.getAttribute('#fits', 'data-fits'), 'true');
  assert.deepEqual([...log.errors, ...run.log.errors], []);
  await run.context.close();
});
