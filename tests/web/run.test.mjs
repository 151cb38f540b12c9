// Issues 11 and 13 on the page, in Chromium: the Export card (per strategy and stack, as the CLI writes them; copy,
// download, never an error object), "What this rests on" (the estimate's evidence), step time, throughput, MFU and
// the run's hours and cost (fields, link, compare, suggestions), and the LoRA precision that follows PEFT's recipe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { openPage, settle, cli, showExports, ARTIFACTS, CLI } from './lib.mjs';
import { withSiteAndBrowser } from './hooks.mjs';

let server;
let browser;
withSiteAndBrowser((s, b) => { server = s; browser = b; });

const open = (query, options) => openPage(browser, server.url + query, options);
// A same-origin Blob URL (a download) is not a request elsewhere.
const foreign = (log) => log.foreign.filter((u) => !u.startsWith(`blob:${server.url.slice(0, -1)}`));

function run(command, config) {
  const r = cli(command, typeof config === 'string' ? config : JSON.stringify(config));
  assert.equal(r.code, 0, `the CLI rejected ${JSON.stringify(config)}`);
  return JSON.parse(r.stdout);
}
const shownConfig = (page) => page.textContent('#config-json');

async function clean(page, log) {
  assert.deepEqual(log.dialogs, [], 'no dialog');
  assert.deepEqual(foreign(log), [], 'no request elsewhere');
  assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no CSP violation');
  assert.deepEqual(log.errors, [], 'no script error');
}

// One page, each configuration by its link (a fresh load): strategy → the exports the CLI writes for it.
const STRATEGIES = {
  single: '?model=llama-2-7b&gpu=a100-80gb',
  ddp: '?model=llama-2-7b&gpu=a100-80gb&strategy=ddp&gpus=8',
  fsdp: '?model=llama-2-7b&gpu=a100-80gb&strategy=fsdp&gpus=8',
  deepspeed: '?model=llama-2-7b&gpu=a100-80gb&strategy=deepspeed&gpus=8&zero=2',
  megatron: '?model=llama-2-70b&gpu=h100-80gb&strategy=megatron&gpus=16&tp=8&pp=2',
  litgpt: '?model=llama-2-7b&gpu=a100-80gb&framework=litgpt&finetune=lora',
  torchtune: '?model=llama-2-7b&gpu=a100-80gb&framework=torchtune&finetune=lora',
  qlora: '?model=llama-3-8b&gpu=l4&finetune=qlora',
};

test('exports: per strategy and stack the CLI’s own files, with Copy and Download; never an error object', async () => {
  const { page, context, log } = await open(STRATEGIES.single, { viewport: { width: 1400, height: 1000 },
    setup: (ctx) => ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url.slice(0, -1) }) });
  const seen = new Set();
  for (const [name, query] of Object.entries(STRATEGIES)) {
    if (name !== 'single') {
      await page.goto(server.url + query);
      await page.waitForSelector('body[data-ready=true][data-details=true]');
    }
    await showExports(page);
    await settle(page);
    const want = run('exports', await shownConfig(page)).exports;
    assert.ok(want.length > 0, `${name}: the CLI writes at least one export`);
    const tabs = await page.$$eval('#export-tabs [role=tab]', (t) => t.map((x) => ({ id: x.dataset.export, title: x.textContent })));
    assert.deepEqual(tabs, want.map((e) => ({ id: e.id, title: e.title })), `${name}: the tabs are the CLI's exports`);
    for (const e of want) {
      seen.add(e.id);
      await page.click(`#export-tabs [data-export="${e.id}"]`);
      assert.equal(await page.getAttribute(`#export-tabs [data-export="${e.id}"]`, 'aria-selected'), 'true');
      assert.equal(await page.textContent('#export-file'), e.filename, `${name}/${e.id}`);
      assert.equal(await page.textContent('#export-text'), e.text, `${name}/${e.id}: the CLI's text`);
    }
    const card = await page.textContent('#export-card');
    assert.doesNotMatch(card, /"errors"|\[object Object\]|undefined/, `${name}: no error object, nothing undefined`);
    assert.equal(await page.isHidden('#export-note'), true, name);
  }
  assert.deepEqual([...seen].sort(), ['accelerate', 'deepspeed', 'litgpt', 'megatron', 'torchrun', 'torchtune', 'training-arguments'],
    'every kind of export appears on some strategy');

  // Copy and Download of the selected export (the Blob URL has its file name; nothing goes out).
  await page.goto(server.url + STRATEGIES.deepspeed);
  await page.waitForSelector('body[data-ready=true][data-details=true]');
  await showExports(page);
  const ds = run('exports', await shownConfig(page)).exports.find((e) => e.id === 'deepspeed');
  await page.click('#export-tabs [data-export=deepspeed]');
  await page.click('#copy-export');
  await page.waitForFunction(() => document.getElementById('copy-status').textContent !== '');
  assert.match(await page.textContent('#copy-status'), /^DeepSpeed config (copied|selected)/);
  if (/copied/.test(await page.textContent('#copy-status')))
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), ds.text);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download-export')]);
  assert.equal(download.suggestedFilename(), 'ds_config.json');
  assert.equal(readFileSync(await download.path(), 'utf8'), ds.text);
  assert.match(download.url(), /^blob:http:\/\/127\.0\.0\.1:/);

  // Keyboard: the arrows move between the tabs and show each.
  await page.focus('#export-tabs [aria-selected=true]');
  await page.keyboard.press('ArrowRight');
  const next = await page.evaluate(() => document.activeElement.dataset.export);
  assert.equal(await page.getAttribute('#export-panel', 'data-export'), next);
  assert.notEqual(next, 'deepspeed');
  await page.locator('#export-card').screenshot({ path: join(ARTIFACTS, 'export.png') });

  // An invalid configuration: no exports and no error object, a sentence saying what to do.
  await page.fill('#f-seq_len', 'x');
  await settle(page);
  assert.equal(await page.isVisible('#export-note'), true);
  assert.match(await page.textContent('#export-note'), /^Fix the highlighted settings first/);
  assert.equal(await page.isHidden('#export-tabs'), true);
  assert.equal(await page.isHidden('#export-panel'), true);
  await page.fill('#f-seq_len', '2048');
  await settle(page);
  assert.equal(await page.isHidden('#export-note'), true);
  await clean(page, log);
  await context.close();
});

test('evidence and exports: the answer never waits for their module; when it cannot load, they say so and the page goes on', async () => {
  const painted = [];  // per request of the module: had the page painted its first estimate?
  const { page, context } = await open(STRATEGIES.deepspeed, { viewport: { width: 1400, height: 1000 },
    setup: (ctx) => ctx.route(/vramcalc-details\.wasm/, async (route) => {
      painted.push(await route.request().frame().evaluate(() => performance.getEntriesByName('vramcalc:first-estimate').length > 0));
      await route.abort();
    }) });
  await page.locator('#export-card').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /could not be loaded/.test(document.getElementById('export-note').textContent));
  assert.deepEqual(painted, [true], 'requested once, after the first estimate');
  assert.equal(await page.isHidden('#evidence'), true, 'no evidence without its module');
  await page.fill('#f-seq_len', '1024');
  await settle(page);
  assert.match(await page.textContent('#export-note'), /could not be loaded/, 'a later update keeps the failure in words');
  assert.equal(JSON.parse((await page.textContent('#config-json'))).seq_len, 1024, 'the answer still follows the fields');
  await context.close();
});

test('what this rests on: the core’s evidence beside the answer, collapsible, from the keyboard; not in the compact embed', async () => {
  const query = '?model=llama-3-8b&gpu=a100-40gb&finetune=lora';
  const { page, context, log } = await open(query, { viewport: { width: 1400, height: 1000 } });
  await page.waitForSelector('body[data-exports=true]');  // the evidence's module: its place is in view
  const ev = run('estimate', await shownConfig(page)).evidence;
  assert.equal(await page.textContent('#evidence-summary'), ev.summary);
  assert.equal(await page.isVisible('#evidence-groups'), false, 'collapsed at first');
  await page.focus('#evidence-toggle');
  await page.keyboard.press('Enter');
  assert.equal(await page.isVisible('#evidence-groups'), true, 'opened from the keyboard');
  const groups = await page.$$eval('#evidence-groups > li', (li) => li.map((x) => ({ ...x.dataset, text: x.textContent })));
  assert.equal(groups.length, ev.measured.length);
  ev.measured.forEach((g, i) => {
    const s = groups[i];
    assert.deepEqual([s.source, s.cases, s.compared, s.median, s.max, s.matches],
      [g.source, String(g.cases), String(g.compared), String(g.median_error ?? ''), String(g.max_error ?? ''), g.matches.join(',')], `group ${i}`);
    for (const t of [g.set, g.group, g.versions, g.file]) assert.ok(s.text.includes(t), `group ${i} names ${t}`);
  });
  const allowances = await page.$$eval('#evidence-allowances > li', (li) => li.map((x) => [x.dataset.term, Number(x.dataset.bytes), x.textContent]));
  assert.deepEqual(allowances.map(([t, b]) => [t, b]), ev.allowances.map((a) => [a.term, a.bytes]));
  allowances.forEach(([, , text], i) => assert.ok(text.includes(ev.allowances[i].why)));
  if (ev.more) assert.match(await page.textContent('#evidence-more'), new RegExp(`${ev.more.groups} looser groups? \\(${ev.more.cases} cases\\)`));
  await page.locator('#answer').screenshot({ path: join(ARTIFACTS, 'answer-time-evidence.png') });
  // A run no measurement covers: the summary says so, no groups listed.
  await page.goto(server.url + STRATEGIES.megatron);
  await page.waitForSelector('body[data-ready=true][data-details=true][data-exports=true]');
  const ev2 = run('estimate', await shownConfig(page)).evidence;
  assert.equal(await page.textContent('#evidence-summary'), ev2.summary);
  assert.equal(await page.$$eval('#evidence-groups > li', (li) => li.length), ev2.measured.length);
  await clean(page, log);
  await context.close();

  const compact = await open(`${query}&embed=1&view=compact`, { viewport: { width: 480, height: 600 } });
  assert.equal(await compact.page.isVisible('#evidence'), false, 'hidden in the compact embed');
  assert.equal(await compact.page.isVisible('#step-time'), false);
  await compact.context.close();
  const full = await open(`${query}&embed=1`, { viewport: { width: 480, height: 900 } });
  assert.equal(await full.page.isVisible('#step-time'), true, 'the full embed shows the step time');
  assert.equal(await full.page.isVisible('#tokens-s'), true, 'and tokens/s');
  await clean(full.page, full.log);
  await full.context.close();
});

const ms = (s) => Number(s);
test('time and cost: the CLI’s figures, per phase and per suggestion; hours, GPU-hours and cost from the run’s fields; the link', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-40gb&precision=bf16-mixed', { viewport: { width: 1400, height: 1000 } });
  let r = run('estimate', await shownConfig(page));
  assert.equal(ms(await page.getAttribute('#step-time', 'data-seconds')), r.step_time_s);
  assert.match(await page.textContent('#tokens-s'), new RegExp(`^${Math.round(r.tokens_per_s).toLocaleString('en')} tokens/s$`));
  assert.equal(await page.textContent('#tokens-s-sub'), `${Math.round(r.tokens_per_s_per_gpu).toLocaleString('en')} per GPU`);
  assert.equal(await page.textContent('#mfu'), `${Math.round(r.mfu * 100)}%`);
  const phases = await page.$$eval('#phases td[data-seconds]', (td) => td.map((x) => Number(x.dataset.seconds)));
  assert.deepEqual(phases, r.phases.map((p) => p.time_s));
  // Each suggestion: its step time and the change against the current one.
  const sgts = await page.$$eval('#suggestions li', (li) => li.map((x) => ({ change: x.querySelector('.change')?.textContent,
    seconds: x.querySelector('.time')?.dataset.seconds, time: x.querySelector('.time')?.textContent })));
  assert.ok(sgts.length >= 3);
  for (const s of sgts) {
    const c = r.suggestions.find((x) => x.change === s.change);
    assert.equal(ms(s.seconds), c.step_time_s, s.change);
    const pct = Math.round((c.step_time_s / r.step_time_s - 1) * 100);
    assert.ok(s.time.includes(pct === 0 ? 'same time' : `${pct > 0 ? '+' : '−'}${Math.abs(pct)}% time`), `${s.change}: ${s.time}`);
    assert.equal(s.time.includes('≥'), c.step_time_is_lower_bound, `${s.change}: the lower-bound mark`);
  }
  assert.ok(sgts.some((s) => s.time.includes('≥')), 'an offloading suggestion is marked as a lower bound');
  assert.equal(await page.isVisible('#run-figure'), false, 'no run without its tokens');

  // The run and its price: fields of their own ("2T" reads as tokens), the CLI's hours, GPU-hours and cost.
  assert.equal(await page.isVisible('#f-gpus_per_node'), false, 'nodes only with several GPUs');
  await page.fill('#f-price_per_gpu_hour', '2.5');
  await settle(page);
  assert.match(await page.textContent('#run-note'), /tokens to train on/);
  await page.fill('#f-train_tokens', '2B');
  await settle(page);
  assert.equal(await page.isVisible('#f-epochs'), false, 'epochs only without train_tokens');
  let cfg = JSON.parse(await shownConfig(page));
  assert.deepEqual([cfg.train_tokens, cfg.price_per_gpu_hour], [2e9, 2.5]);
  r = run('estimate', await shownConfig(page));
  const hours = (x) => `${x < 10 ? x.toFixed(1) : Math.round(x).toLocaleString('en')} h`;
  assert.ok((await page.textContent('#run-hours')).startsWith(hours(r.hours)));
  assert.equal(await page.textContent('#run-hours-sub'), `${Math.round(r.gpu_hours).toLocaleString('en')} GPU-hours`);
  assert.equal(await page.textContent('#cost'), r.cost.toLocaleString('en', { minimumFractionDigits: r.cost < 1000 ? 2 : 0, maximumFractionDigits: 2 }));
  assert.equal(await page.textContent('#cost-sub'), 'at 2.50 per GPU-hour');
  assert.equal(await page.textContent('#run-note'), '');
  const link = await page.inputValue('#share-url');
  assert.match(link, /[?&]train_tokens=2000000000&price_per_gpu_hour=2\.5(&|$)/);
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.equal(await again.page.inputValue('#f-train_tokens'), '2000000000');
  assert.equal(await again.page.textContent('#cost'), await page.textContent('#cost'));
  assert.equal(await again.page.inputValue('#share-url'), link);
  await again.context.close();

  // Epochs × dataset tokens; several GPUs: the node fields.
  await page.fill('#f-train_tokens', '0');
  await page.fill('#f-epochs', '3');
  await page.fill('#f-dataset_tokens', '500M');
  await page.selectOption('#f-strategy', 'ddp');
  await page.fill('#f-gpus', '16');
  await settle(page);
  assert.equal(await page.isVisible('#f-gpus_per_node'), true);
  await page.fill('#f-inter_node_gbps', '50');
  await settle(page);
  cfg = JSON.parse(await shownConfig(page));
  assert.deepEqual([cfg.epochs, cfg.dataset_tokens, cfg.inter_node_gbps, cfg.train_tokens], [3, 5e8, 50, undefined]);
  r = run('estimate', await shownConfig(page));
  assert.equal(ms(await page.getAttribute('#step-time', 'data-seconds')), r.step_time_s);
  assert.ok((await page.textContent('#run-hours')).startsWith(hours(r.hours)));
  // Bad input next to its field, as the core says it.
  await page.fill('#f-price_per_gpu_hour', 'lots');
  await settle(page);
  assert.match(await page.textContent('#e-price_per_gpu_hour'), /must be a number/);
  await page.fill('#f-price_per_gpu_hour', '2.5');
  await page.fill('#f-gpus_per_node', '0');
  await settle(page);
  assert.match(await page.textContent('#e-gpus_per_node'), /must be/);
  await page.fill('#f-gpus_per_node', '8');
  await settle(page);

  // Compare: step time, tokens/s and cost of A and B.
  await page.click('#pin');
  await page.fill('#f-micro_batch', '2');
  await settle(page);
  const b = run('estimate', await shownConfig(page));
  for (const [row, key] of [['step_time', 'step_time_s'], ['tokens_per_s', 'tokens_per_s'], ['cost', 'cost']])
    assert.equal(ms(await page.getAttribute(`#compare-table tr[data-row=${row}] td[data-col=b]`, 'data-value')), b[key], row);
  assert.equal(ms(await page.getAttribute('#compare-table tr[data-row=cost] td[data-col=a]', 'data-value')), r.cost);
  await clean(page, log);
  await context.close();

  // A lower bound (the offloaded CPU step is not timed); a GPU without a known peak: no time, said so.
  const off = await open('?model=llama-2-7b&gpu=a100-80gb&strategy=deepspeed&gpus=8&zero=2&offload=optimizer');
  assert.equal(run('estimate', await shownConfig(off.page)).step_time_is_lower_bound, true);
  assert.equal(await off.page.isVisible('#step-bound'), true);
  assert.match(await off.page.textContent('#step-time'), /^≥ /);
  await off.context.close();
  const custom = await open('?gpu=custom&gpu.memory_gib=48&model=llama-3.2-1b');
  assert.equal(await custom.page.textContent('#step-time'), '—');
  assert.match(await custom.page.textContent('#step-time-sub'), /no dense peak FLOP\/s known/);
  assert.equal(await custom.page.textContent('#tokens-s'), '—');
  await clean(custom.page, custom.log);
  await custom.context.close();
  // Hostile values of the new keys: reported as text and ignored.
  const bad = await open('?train_tokens=-1&price_per_gpu_hour=%3Cb%3E1%3C/b%3E&gpus_per_node=0&inter_node_gbps=1e400&epochs=1e7&dataset_tokens=NaN');
  const listed = await bad.page.$$eval('#link-problems li code', (c) => c.map((x) => x.textContent));
  assert.deepEqual(listed.sort(), ['dataset_tokens', 'epochs', 'gpus_per_node', 'inter_node_gbps', 'price_per_gpu_hour', 'train_tokens']);
  const badCfg = JSON.parse(await shownConfig(bad.page));
  for (const k of ['train_tokens', 'price_per_gpu_hour', 'gpus_per_node', 'inter_node_gbps', 'epochs', 'dataset_tokens']) assert.equal(badCfg[k], undefined, k);
  await clean(bad.page, bad.log);
  await bad.context.close();
});

test('precision: LoRA on one GPU follows PEFT’s recipe while at its default; Llama-3-8B LoRA fits an A100 40GB', async () => {
  const { page, context, log } = await open('?model=llama-3-8b&gpu=a100-40gb');
  const recipe = await page.$eval('#f-precision option[value=bf16-base-mixed]', (o) => o.textContent);
  assert.match(recipe, /bf16 frozen base \+ fp32 adapters.*the LoRA recipe/);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  await page.selectOption('#f-finetune', 'lora');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-base-mixed');
  const core = run('estimate', { model: 'llama-3-8b', gpu: 'a100-40gb', finetune: { method: 'lora' } });
  assert.equal(core.config.precision, 'bf16-base-mixed', 'the core’s own default');
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(core.total_bytes));
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'true');
  assert.ok(core.total_bytes < 31 * 2 ** 30 && core.total_bytes > 27 * 2 ** 30, `about 29 GiB: ${core.total_bytes / 2 ** 30}`);
  assert.doesNotMatch(await page.inputValue('#share-url'), /precision/, 'the default stays out of the link');
  // The strategies that refuse the recipe move it back; full fine-tuning too.
  await page.selectOption('#f-strategy', 'fsdp');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  await page.selectOption('#f-strategy', 'ddp');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-base-mixed');
  await page.selectOption('#f-strategy', 'single');
  await page.selectOption('#f-finetune', 'full');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  // A choice of the user's stays.
  await page.selectOption('#f-precision', 'bf16-true');
  await page.selectOption('#f-finetune', 'qlora');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-true');
  assert.match(await page.inputValue('#share-url'), /precision=bf16-true/);
  // A link: the recipe without naming it; an explicit bf16-mixed kept.
  const link = await open('?model=llama-3-8b&gpu=a100-40gb&finetune=lora');
  assert.equal(await link.page.inputValue('#f-precision'), 'bf16-base-mixed');
  assert.equal(await link.page.getAttribute('#fits', 'data-fits'), 'true');
  await link.context.close();
  const explicit = await open('?model=llama-3-8b&gpu=a100-40gb&finetune=lora&precision=bf16-mixed');
  assert.equal(await explicit.page.inputValue('#f-precision'), 'bf16-mixed');
  await explicit.context.close();
  // A suggestion that names no precision is applied with the one it was estimated with.
  await page.selectOption('#f-finetune', 'full');
  await page.selectOption('#f-precision', 'bf16-mixed');
  await settle(page);
  const before = run('estimate', await shownConfig(page));
  const q = before.suggestions.find((s) => s.change.startsWith('8-bit AdamW'));
  assert.ok(q && !('precision' in q.config));
  await page.click('#suggestions .suggest:has-text("8-bit AdamW (bitsandbytes)")');
  await settle(page);
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(q.total_bytes));
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  // The LoRA and QLoRA suggestions bring the recipe's precision with them.
  assert.equal(before.suggestions.find((s) => s.change.startsWith('QLoRA')).config.precision, 'bf16-base-mixed');
  await clean(page, log);
  await context.close();
});

test('DPO and GRPO: the method fields, their phases and the vLLM share, as the CLI estimates them', async () => {
  const query = '?model=llama-3-8b&gpu=h100-80gb&finetune=lora&method=dpo&prompt_len=256&completion_len=768&micro_batch=2';
  const { page, context, log } = await open(query);
  const config = JSON.parse(await shownConfig(page));
  assert.equal(config.method, 'dpo');
  assert.equal(config.seq_len, undefined, 'the core derives seq_len from prompt + completion');
  const cli_ = run('estimate', config);
  assert.equal(cli_.config.reference, 'base-without-adapters');
  const phases = await page.$$eval('#phases th', (ths) => ths.map((t) => t.textContent));
  for (const name of ['reference', 'policy forward', 'backward', 'optimizer step'])
    assert.ok(phases.some((t) => t.startsWith(name)), `phase ${name} shown`);
  assert.ok(!(await page.isVisible('#f-seq_len')), 'no sequence length field under DPO');
  // GRPO with a colocated vLLM: its share is a term of the total.
  await page.goto(server.url + '?model=qwen2.5-7b&gpu=h100-80gb&finetune=lora&method=grpo&num_generations=4&micro_batch=8&prompt_len=128&completion_len=512&vllm_share=0.3');
  await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
  const grpo = JSON.parse(await shownConfig(page));
  // (a link from before the Generation field: vllm_share alone means a colocated engine)
  assert.deepEqual(grpo.inference_engine, { name: 'vllm', mode: 'colocate', gpu_memory_utilization: 0.3, sleep_mode: false });
  const est = run('estimate', grpo);
  assert.ok(est.per_gpu_bytes.inference_engine > 0);
  const legend = await page.textContent('body');
  assert.ok(legend.includes('vLLM engine'), 'the vLLM term in the legend');
  // A vLLM server on other GPUs: no share here; old log-probs are scored. Four micro-batches per generation.
  await page.goto(server.url + '?model=qwen2.5-7b&gpu=h100-80gb&finetune=lora&method=grpo&num_generations=4&micro_batch=8&prompt_len=128&completion_len=512&vllm=server&steps_per_generation=4&num_iterations=2');
  await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
  const server_ = JSON.parse(await shownConfig(page));
  assert.deepEqual(server_.inference_engine, { name: 'vllm', mode: 'server' });
  assert.equal(server_.steps_per_generation, 4);
  assert.equal(server_.num_iterations, 2);
  assert.ok(!(await page.isVisible('#f-vllm_share')), 'no share field for a vLLM server');
  const serverPhases = await page.$$eval('#phases th', (ths) => ths.map((t) => t.textContent));
  assert.ok(serverPhases.some((t) => t.startsWith('old logps') || t.startsWith('old log')), `old log-probs shown: ${serverPhases}`);
  // RLOO: GRPO's fields; its old log-probs are always scored and its reference is the adapters-off policy.
  await page.goto(server.url + '?model=qwen2.5-7b&gpu=h100-80gb&finetune=lora&method=rloo&num_generations=4&micro_batch=8&prompt_len=128&completion_len=512');
  await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
  const rloo = JSON.parse(await shownConfig(page));
  assert.equal(rloo.method, 'rloo');
  assert.ok(await page.isVisible('#f-num_generations'), 'generations per prompt shown under RLOO');
  const rlooCli = run('estimate', rloo);
  assert.equal(rlooCli.config.reference, 'base-without-adapters');
  const rlooPhases = await page.$$eval('#phases th', (ths) => ths.map((t) => t.textContent));
  for (const name of ['generation', 'old log', 'reference'])
    assert.ok(rlooPhases.some((t) => t.startsWith(name)), `phase ${name} shown under RLOO: ${rlooPhases}`);
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(rlooCli.total_bytes));
  // A bad Generation value in a link is reported and ignored.
  await page.goto(server.url + '?model=qwen2.5-7b&method=grpo&vllm=sglang&prompt_len=8&completion_len=8');
  await page.waitForSelector('body[data-ready=true]', { timeout: 15000 });
  assert.match(await page.textContent('#link-problems'), /vllm/);
  // A bad count is a message next to its field, not a crash.
  await page.goto(server.url + '?model=qwen2.5-7b&method=grpo&num_generations=3&micro_batch=8&prompt_len=8&completion_len=8');
  await page.waitForSelector('body[data-ready=true]', { timeout: 15000 });
  assert.match(await page.textContent('body'), /num_generations|Generations per prompt/);
  await clean(page, log);
  await context.close();
});

test('KTO, ORPO, SimPO and distillation: their fields and phases as the CLI estimates them; a bad teacher is reported', async () => {
  const { page, context, log } = await open('?model=llama-3-8b&gpu=h100-80gb&finetune=lora&method=distill&teacher=llama-3-70b&prompt_len=256&completion_len=512&micro_batch=2',
    { viewport: { width: 1400, height: 1000 } });
  const distill = JSON.parse(await shownConfig(page));
  assert.equal(distill.teacher, 'llama-3-70b');
  assert.equal(distill.teacher_dtype, 'bf16');
  assert.equal(distill.divergence, 'reverse-kl');
  assert.equal(distill.reference, undefined, 'no reference for distillation');
  assert.ok(!(await page.isVisible('#f-reference')));
  const cli_ = run('estimate', distill);
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(cli_.total_bytes));
  const phases = await page.$$eval('#phases th', (ths) => ths.map((t) => t.textContent));
  for (const name of ['generation', 'policy forward', 'teacher', 'loss', 'backward'])
    assert.ok(phases.some((t) => t.startsWith(name)), `phase ${name} shown: ${phases}`);
  // Without a teacher, the core's message sits next to the field.
  await page.fill('#f-teacher', '');
  await page.dispatchEvent('#f-teacher', 'change');
  await page.waitForFunction(() => document.querySelector('#e-teacher') && document.querySelector('#e-teacher').textContent.includes('required'));
  for (const [method, names] of [['kto', ['kl policy', 'policy forward', 'reference kl', 'reference']],
    ['orpo', ['policy forward', 'loss', 'backward']], ['simpo', ['policy forward', 'loss', 'backward']]]) {
    await page.goto(server.url + `?model=llama-3-8b&gpu=h100-80gb&finetune=lora&method=${method}&prompt_len=256&completion_len=512&micro_batch=2`);
    await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
    const config = JSON.parse(await shownConfig(page));
    assert.equal(config.method, method);
    assert.equal(await page.getAttribute('#total', 'data-bytes'), String(run('estimate', config).total_bytes));
    const shown = await page.$$eval('#phases th', (ths) => ths.map((t) => t.textContent));
    for (const name of names) assert.ok(shown.some((t) => t.startsWith(name)), `${method}: phase ${name} shown: ${shown}`);
  }
  // A teacher that is not a model of the catalog is reported and ignored, as text.
  await page.goto(server.url + '?model=llama-3-8b&method=distill&teacher=%3Cimg%20src%3Dx%3E&prompt_len=8&completion_len=8');
  await page.waitForSelector('body[data-ready=true]', { timeout: 15000 });
  assert.match(await page.textContent('#link-problems'), /teacher/);
  assert.equal(await page.$$eval('#link-problems img', (els) => els.length), 0);
  await clean(page, log);
  await context.close();
});

test('fp8: torchao and Transformer Engine recipes on GPUs with FP8 tensor cores, a message next to the field on others', async () => {
  const { page, context, log } = await open('?model=llama-3-8b&gpu=h100-80gb&precision=fp8&fp8_recipe=torchao-rowwise');
  const config = JSON.parse(await shownConfig(page));
  assert.equal(config.precision, 'fp8');
  assert.equal(config.fp8_recipe, 'torchao-rowwise');
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(run('estimate', config).total_bytes));
  assert.ok(await page.isVisible('#f-fp8_recipe'));
  // Transformer Engine's delayed scaling: a recipe of its own, estimated as the CLI does.
  await page.selectOption('#f-fp8_recipe', 'te-delayed');
  await settle(page);
  const te = JSON.parse(await shownConfig(page));
  assert.equal(te.fp8_recipe, 'te-delayed');
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(run('estimate', te).total_bytes));
  await page.selectOption('#f-gpu', 'a100-80gb');
  await settle(page);
  assert.match(await page.textContent('body'), /no FP8 tensor cores/);
  await clean(page, log);
  await context.close();
});

// The core's message for a configuration it refuses, one field's ("error: field: message" on stderr).
function coreError(config, field) {
  const r = spawnSync(CLI, ['estimate', '-'], { input: JSON.stringify(config), encoding: 'utf8' });
  assert.equal(r.status, 2, `the CLI accepted ${JSON.stringify(config)}`);
  const m = new RegExp(`^error: ${field.replace(/\./g, '\\.')}: (.*)$`, 'm').exec(r.stderr);
  assert.ok(m, `no error for ${field} in ${r.stderr}`);
  return m[1];
}

test('PPO: the value and reward models and the rollout, its phases and totals as the CLI estimates them; the link; bad values', async () => {
  const { page, context, log } = await open('?model=llama-3.2-3b&gpu=a100-40gb&finetune=lora', { viewport: { width: 1400, height: 1000 } });
  assert.equal(await page.inputValue('#f-precision'), 'bf16-base-mixed', 'LoRA: PEFT’s recipe');
  const ppoFields = ['value_model', 'reward_model', 'reward_dtype', 'rollout_forward_batch', 'num_mini_batches'];
  for (const k of ppoFields) assert.equal(await page.isVisible('#f-' + k), false, `${k} hidden under sft`);
  assert.ok((await page.textContent('#f-method option[value=ppo]')).startsWith('PPO (TRL 1.12 PPOTrainer)'));
  await page.selectOption('#f-method', 'ppo');
  await settle(page);
  for (const k of [...ppoFields, 'reference', 'prompt_len', 'completion_len'])
    assert.equal(await page.isVisible('#f-' + k), true, `${k} shown under ppo`);
  for (const k of ['teacher', 'teacher_dtype', 'divergence', 'num_generations', 'vllm', 'seq_len'])
    assert.equal(await page.isVisible('#f-' + k), false, `${k} hidden under ppo`);
  // PPOTrainer refuses the 16-bit frozen base: the precision left at its default moves to bf16-mixed.
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  assert.deepEqual([await page.inputValue('#f-rollout_forward_batch'), await page.inputValue('#f-num_mini_batches'),
    await page.inputValue('#f-value_model'), await page.inputValue('#f-reward_dtype')], ['64', '1', '', 'default']);
  assert.equal(await page.getAttribute('#f-value_model', 'list'), 'model-list');
  assert.match(await page.textContent('#h-f-micro_batch'), /PPO/);
  for (const k of ['value_model', 'reward_model', 'rollout_forward_batch', 'num_mini_batches'])
    assert.ok((await page.textContent('#h-f-' + k)).length > 40, `${k} has a hint`);
  // The defaults: TRL's (the policy's own model as value and reward model, adapters off as the reference).
  let config = JSON.parse(await shownConfig(page));
  assert.deepEqual([config.method, config.rollout_forward_batch, config.num_mini_batches, config.value_model, config.reward_model,
    config.reward_dtype, config.reference], ['ppo', 64, 1, undefined, undefined, undefined, undefined]);
  let est = run('estimate', config);
  assert.equal(est.config.reference, 'base-without-adapters');
  assert.equal(est.config.value_model, 'llama-3.2-3b');
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(est.total_bytes));

  // Its own fields.
  await page.fill('#f-prompt_len', '256');
  await page.fill('#f-completion_len', '128');
  await page.fill('#f-micro_batch', '2');
  await page.fill('#f-grad_accum', '2');
  await page.fill('#f-num_mini_batches', '2');
  await page.fill('#f-rollout_forward_batch', '4');
  await page.fill('#f-value_model', 'llama-3.2-1b');
  await page.fill('#f-reward_model', 'Qwen/Qwen2.5-0.5B');
  await page.selectOption('#f-reward_dtype', 'fp32');
  await settle(page);
  config = JSON.parse(await shownConfig(page));
  assert.deepEqual([config.prompt_len, config.completion_len, config.micro_batch, config.grad_accum, config.num_mini_batches,
    config.rollout_forward_batch, config.value_model, config.reward_model, config.reward_dtype, config.precision],
  [256, 128, 2, 2, 2, 4, 'llama-3.2-1b', 'Qwen/Qwen2.5-0.5B', 'fp32', 'bf16-mixed']);
  est = run('estimate', config);
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(est.total_bytes));
  const names = ['generation', 'reference', 'value', 'reward', 'policy_forward', 'loss', 'backward', 'optimizer_step', 'entropy_stats'];
  assert.deepEqual(est.phases.map((p) => p.name), names, 'the core’s PPO phases');
  const rows = await page.$$eval('#phases tr', (trs) => trs.map((tr) => ({ name: tr.querySelector('th').firstChild.textContent,
    desc: tr.querySelector('td.desc').textContent })));
  assert.deepEqual(rows.map((r) => r.name), names.map((n) => n.replace('_', ' ')));
  for (const r of rows) assert.ok(r.desc.length > 20, `${r.name} is described`);
  for (const n of ['value', 'reward', 'entropy stats']) assert.match(rows.find((r) => r.name === n).desc, /PPO/);
  assert.equal(await page.textContent('#peak-phase'), est.peak_phase.replace('_', ' '));

  // The link round-trips every key; a fresh page shows the same configuration and total.
  const link = await page.inputValue('#share-url');
  for (const p of ['method=ppo', 'rollout_forward_batch=4', 'num_mini_batches=2', 'value_model=llama-3.2-1b',
    'reward_model=Qwen%2FQwen2.5-0.5B', 'reward_dtype=fp32'])
    assert.ok(link.includes(p), `${p} in ${link}`);
  assert.doesNotMatch(link, /precision=/, 'the default precision stays out of the link');
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.deepEqual(JSON.parse(await shownConfig(again.page)), config);
  assert.equal(await again.page.getAttribute('#total', 'data-bytes'), String(est.total_bytes));
  assert.equal(await again.page.inputValue('#share-url'), link);
  await clean(again.page, again.log);
  await again.context.close();

  // A suggestion of the core's (the reward model in bf16) lands in the PPO fields.
  const sgt = est.suggestions.find((s) => s.config && s.config.reward_dtype === 'bf16');
  assert.ok(sgt, 'the core suggests a bf16 reward model');
  await page.click(`#suggestions .suggest:has-text("${sgt.change}")`);
  await settle(page);
  assert.equal(await page.inputValue('#f-reward_dtype'), 'bf16');
  assert.equal(await page.getAttribute('#total', 'data-bytes'), String(sgt.total_bytes));

  // Bad values: the core's message next to the field.
  await page.fill('#f-rollout_forward_batch', '0');
  await settle(page);
  assert.equal(await page.textContent('#e-rollout_forward_batch'),
    coreError({ ...config, rollout_forward_batch: 0 }, 'rollout_forward_batch'));
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'invalid');
  await page.fill('#f-rollout_forward_batch', '4');
  await page.fill('#f-value_model', 'no-such-model');
  await settle(page);
  assert.match(await page.textContent('#e-value_model'), /^unknown model "no-such-model"/);
  await page.fill('#f-value_model', '');
  await page.selectOption('#f-checkpointing', 'full');
  await settle(page);
  assert.match(await page.textContent('#e-checkpointing'), /PPOTrainer/);
  await page.selectOption('#f-checkpointing', 'none');
  await page.selectOption('#f-reference', 'none');
  await settle(page);
  assert.match(await page.textContent('#e-reference'), /needs reference/);
  await page.selectOption('#f-reference', 'default');
  await settle(page);
  assert.notEqual(await page.getAttribute('#fits', 'data-fits'), 'invalid');
  // Back to supervised training: the PPO keys are not sent, the recipe's precision comes back.
  await page.selectOption('#f-method', 'sft');
  await settle(page);
  config = JSON.parse(await shownConfig(page));
  for (const k of ['rollout_forward_batch', 'num_mini_batches', 'value_model', 'reward_model', 'reward_dtype', 'method'])
    assert.ok(!(k in config) || (k === 'method' && config.method === 'sft'), `${k} not sent under sft`);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-base-mixed');
  await clean(page, log);
  await context.close();

  // Hostile and bad link values are reported as text and ignored; the rest of the link still works.
  const hostile = await open('?model=llama-3.2-1b&method=ppo&prompt_len=8&completion_len=8&value_model=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E' +
    '&reward_model=javascript%3Aalert(1)&reward_dtype=int4&rollout_forward_batch=0&num_mini_batches=-1');
  const problems = await hostile.page.textContent('#link-problems');
  for (const k of ['value_model', 'reward_model', 'reward_dtype', 'rollout_forward_batch', 'num_mini_batches'])
    assert.ok(problems.includes(k), `${k} reported: ${problems}`);
  assert.equal(await hostile.page.$$eval('#link-problems img, #inputs img', (els) => els.length), 0);
  const h = JSON.parse(await shownConfig(hostile.page));
  assert.deepEqual([h.method, h.rollout_forward_batch, h.num_mini_batches, h.value_model, h.reward_model, h.reward_dtype],
    ['ppo', 64, 1, undefined, undefined, undefined]);
  assert.equal(await hostile.page.getAttribute('#total', 'data-bytes'), String(run('estimate', h).total_bytes));
  await clean(hostile.page, hostile.log);
  await hostile.context.close();
  // An older link (a method before PPO): no PPO key appears, the estimate is the CLI's.
  const old = await open('?model=llama-3-8b&gpu=h100-80gb&finetune=lora&method=dpo&prompt_len=256&completion_len=768&micro_batch=2');
  assert.equal(await old.page.isHidden('#link-problems'), true);
  const dpo = JSON.parse(await shownConfig(old.page));
  for (const k of ['rollout_forward_batch', 'num_mini_batches', 'value_model', 'reward_model', 'reward_dtype']) assert.ok(!(k in dpo), k);
  assert.equal(await old.page.getAttribute('#total', 'data-bytes'), String(run('estimate', dpo).total_bytes));
  assert.doesNotMatch(await old.page.inputValue('#share-url'), /rollout|mini_batches|value_model|reward/);
  await clean(old.page, old.log);
  await old.context.close();
});
