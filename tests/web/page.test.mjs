// The built page in Chromium (playwright-core + Debian's /usr/bin/chromium), served from 127.0.0.1 by the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { cli, showExports, ARTIFACTS, CLI, unfoldSettings } from './lib.mjs';
import { withSiteAndBrowser } from './hooks.mjs';

let server;
let browser;
withSiteAndBrowser((s, b) => { server = s; browser = b; });

// A page that records what must never happen: a dialog, a CSP violation, a script error, a request elsewhere.
async function open(query, viewport = { width: 1280, height: 900 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const log = { dialogs: [], errors: [], foreign: [], csp: [] };
  page.on('dialog', (d) => { log.dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => log.errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') log.errors.push(m.text()); });
  page.on('request', (r) => { if (!r.url().startsWith(server.url) && !r.url().startsWith('data:')) log.foreign.push(r.url()); });
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(server.url + query);
  await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
  await unfoldSettings(page);
  return { page, context, log };
}

async function settle(page) {
  await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
}

async function shown(page) {
  const bytes = await page.getAttribute('#total', 'data-bytes');
  const fits = await page.getAttribute('#fits', 'data-fits');
  const config = await page.textContent('#config-json');
  return { bytes, fits, config };
}

function cliTotal(configText) {
  const r = cli('estimate', configText);
  assert.equal(r.code, 0, `the CLI rejected ${configText}`);
  return JSON.parse(r.stdout);
}

async function clean(page, log) {
  assert.deepEqual(log.dialogs, [], 'no dialog may open');
  assert.deepEqual(log.foreign, [], 'no request may leave 127.0.0.1');
  assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no CSP violation');
  assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no injected script ran');
  assert.equal(await page.evaluate(() => document.cookie), '', 'no cookie');
  assert.deepEqual(await page.evaluate(() => [...document.querySelectorAll('script')].map((el) => el.getAttribute('src'))),
    ['compile.js', 'app.js'], 'no script element added');
}

test('the figures shown match the native CLI, as the inputs change', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  let s = await shown(page);
  let native = cliTotal(s.config);
  assert.equal(s.bytes, String(native.total_bytes));
  assert.equal(s.fits, String(native.fits));
  assert.match(await page.textContent('#max-mb'), native.max_micro_batch === 0 ? /none/ : new RegExp(`^${native.max_micro_batch}$`));

  await page.selectOption('#f-strategy', 'deepspeed');
  await page.fill('#f-gpus', '8');
  await page.selectOption('#f-zero', '2');
  await page.selectOption('#f-checkpointing', 'full');
  await page.fill('#f-seq_len', '4096');
  await page.fill('#f-micro_batch', '2');
  await settle(page);
  s = await shown(page);
  native = cliTotal(s.config);
  assert.equal(JSON.parse(s.config).zero, 2);
  assert.equal(JSON.parse(s.config).seq_len, 4096);
  assert.equal(s.bytes, String(native.total_bytes));
  assert.equal(s.fits, String(native.fits));
  assert.equal(new URL(page.url()).search,
    '?model=llama-2-7b&gpu=a100-80gb&gpus=8&strategy=deepspeed&zero=2&seq_len=4096&micro_batch=2&checkpointing=full');
  // The peak phase and the breakdown come from the same report.
  assert.equal(await page.textContent('#peak-phase'), native.peak_phase.replace('_', ' '));
  assert.ok((await page.$$('#bar .seg')).length >= 4);
  assert.ok((await page.$$('#chart-mb circle')).length >= 8, 'the micro-batch chart has its points');
  assert.ok((await page.$$('#chart-seq circle')).length >= 8, 'the sequence chart has its points');
  await showExports(page);
  await page.click('#export-tabs [data-export=deepspeed]');
  assert.match(await page.textContent('#export-text'), /"stage": 2/);

  // Typing: each keystroke is one estimate (and sweep and render), well inside a frame.
  const ms = await page.evaluate(async () => {
    performance.clearMeasures('vramcalc:update');
    const el = document.getElementById('f-seq_len');
    for (const v of ['1', '10', '102', '1024']) {
      el.value = v;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
    }
    return performance.getEntriesByName('vramcalc:update').map((e) => e.duration);
  });
  console.log(`page update per keystroke: ${ms.map((d) => d.toFixed(1)).join(', ')} ms`);
  assert.equal(ms.length, 4);
  assert.ok(Math.max(...ms) < 100, `an update took ${Math.max(...ms)} ms`);
  assert.equal(JSON.parse((await shown(page)).config).seq_len, 1024);

  await page.screenshot({ path: join(ARTIFACTS, 'page.png'), fullPage: true });
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('bad input: a message next to the field, the rest of the page still usable', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  await page.fill('#f-seq_len', 'abc');
  await settle(page);
  assert.match(await page.textContent('#e-seq_len'), /integer/);
  assert.equal(await page.getAttribute('#f-seq_len', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'invalid');
  assert.equal(await page.getAttribute('#total', 'data-bytes'), null);
  // Another field still works, and fixing the first brings the figures back.
  await page.selectOption('#f-gpu', 'h100-80gb');
  await page.fill('#f-seq_len', '1024');
  await settle(page);
  assert.equal(await page.textContent('#e-seq_len'), '');
  const s = await shown(page);
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  assert.equal(JSON.parse(s.config).gpu, 'h100-80gb');
  // A custom architecture whose heads do not divide hidden: the error names model.heads.
  await page.click('.model-other button[data-model=custom]');
  await page.fill('#f-model-heads', '33');
  await settle(page);
  assert.match(await page.textContent('#e-model-heads'), /must divide hidden/);
  await page.fill('#f-model-heads', '32');
  await settle(page);
  assert.equal(await page.textContent('#e-model-heads'), '');
  await clean(page, log);
  await context.close();
});

test('suggestions apply their change in one click', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  const before = await shown(page);
  const first = cliTotal(before.config).suggestions[0];
  await page.click('#suggestions li:first-child .suggest');
  await settle(page);
  const s = await shown(page);
  assert.equal(s.bytes, String(first.total_bytes));
  const cfg = JSON.parse(s.config);
  // Each key of the patch (an object's own keys: the page also sends its defaults, e.g. LoRA's dropout 0).
  for (const [k, v] of Object.entries(first.config)) {
    if (v && typeof v === 'object' && !Array.isArray(v)) for (const [kk, vv] of Object.entries(v)) assert.deepEqual(cfg[k][kk], vv, `${k}.${kk}`);
    else assert.deepEqual(cfg[k], v, k);
  }
  await clean(page, log);
  await context.close();
});

test('share links round-trip, including a pasted Hugging Face config', async () => {
  const { page, context, log } = await open('?model=mistral-7b&gpu=a100-40gb&finetune=lora&rank=16&targets=q_proj,k_proj,v_proj&strategy=fsdp&gpus=4&precision=bf16-true&attention=flash');
  const a = await shown(page);
  assert.equal(await page.isHidden('#link-problems'), true);
  const url = await page.inputValue('#share-url');
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?model=mistral-7b&gpu=a100-40gb&finetune=lora&rank=16/);
  const again = await open(url.slice(server.url.length));
  const b = await shown(again.page);
  assert.deepEqual(b, a);
  assert.equal(await again.page.inputValue('#f-rank'), '16');
  await again.context.close();

  const hf = { model_type: 'llama', num_hidden_layers: 16, hidden_size: 2048, num_attention_heads: 32,
    num_key_value_heads: 8, intermediate_size: 8192, vocab_size: 128256, max_position_embeddings: 131072,
    tie_word_embeddings: true, hidden_act: 'silu', attention_dropout: 0.0, mlp_bias: false,
    torch_dtype: 'bfloat16', architectures: ['LlamaForCausalLM'], rope_scaling: { factor: 32 }, rope_theta: 500000,
    rms_norm_eps: 1e-5, bos_token_id: 128000, eos_token_id: [128001, 128008], use_cache: true,
    transformers_version: '4.45.0' };
  const dropped = ['torch_dtype', 'architectures', 'rope_scaling', 'rope_theta', 'rms_norm_eps', 'bos_token_id',
    'eos_token_id', 'use_cache', 'transformers_version'];
  await page.click('.model-other button[data-model=hf]');
  await page.fill('#f-hf', JSON.stringify(hf, null, 2));
  await settle(page);
  const s = await shown(page);
  assert.deepEqual(Object.keys(JSON.parse(s.config).model.hf_config).sort(),
    Object.keys(hf).filter((k) => !dropped.includes(k)).sort());
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  const link = await page.inputValue('#share-url');
  assert.match(link, /[?&]model=hf&hf=[A-Za-z0-9_-]+&/);
  const third = await open(link.slice(server.url.length));
  assert.deepEqual(await shown(third.page), s);
  await third.context.close();
  await clean(page, log);
  await context.close();
});

test('embed view: chrome-free, with copyable widget and iframe snippets', async () => {
  const { page, context, log } = await open('?model=llama-2-13b&gpu=h100-80gb');
  await page.click('#copy-embed');
  const div = await page.inputValue('#embed-div');
  assert.match(div, /^<vramcalc-widget settings="model=llama-2-13b&amp;gpu=h100-80gb"><\/vramcalc-widget>\n<script src="http:\/\/127\.0\.0\.1:\d+\/embed\.js"><\/script>$/);
  await page.selectOption('#embed-view', 'compact');
  const code = await page.inputValue('#embed-iframe');
  assert.match(code, /^<iframe data-vramcalc src="http:\/\/127\.0\.0\.1:\d+\/\?model=llama-2-13b&amp;gpu=h100-80gb&amp;embed=1&amp;view=compact" /);
  const src = code.match(/src="([^"]+)"/)[1].replace(/&amp;/g, '&');
  const e = await open(src.slice(server.url.length), { width: 480, height: 420 });
  assert.equal(await e.page.evaluate(() => document.body.classList.contains('embed')), true);
  assert.equal(await e.page.isVisible('#inputs'), false);
  assert.equal(await e.page.isVisible('header'), false);
  assert.equal(await e.page.isVisible('#total'), true);
  assert.equal(await e.page.isVisible('#open-full'), true);
  assert.equal(await e.page.isVisible('#legend'), false, 'compact');
  assert.equal(await e.page.getAttribute('#total', 'data-bytes'), await page.getAttribute('#total', 'data-bytes'));
  await e.page.screenshot({ path: join(ARTIFACTS, 'embed.png') });
  await clean(e.page, e.log);
  await e.context.close();
  await clean(page, log);
  await context.close();
});

test('keyboard and narrow screens: terms explained on focus, nothing wider than 360 px', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb', { width: 360, height: 740 });
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 360, 'no horizontal scroll at 360 px');
  await page.focus('#legend li:first-child .term');
  assert.match(await page.textContent('#term-detail'), /^Weights: /);
  await page.keyboard.press('Tab');
  assert.match(await page.textContent('#term-detail'), /^(Gradients|Optimizer states): /);
  // Every form control has a label.
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea')]
    .filter((el) => !el.labels?.length && !el.getAttribute('aria-label') && !el.closest('label')).map((el) => el.id));
  assert.deepEqual(unlabelled, []);
  await page.screenshot({ path: join(ARTIFACTS, 'page-360.png'), fullPage: false });
  await clean(page, log);
  await context.close();
});

const B64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
// [query, how many problems the page must report at least]
const HOSTILE = [
  ['?model=<script>window.__pwned=1</script>', 1],
  ['?model=%3Cimg%20src%3Dx%20onerror%3Dwindow.__pwned%3D1%3E&gpu=a100-80gb', 1],
  ['?gpu=custom&gpu.memory_gib=24&gpu.name=%3Cimg%20src=x%20onerror=alert(1)%3E', 1],
  ['?model=javascript:window.__pwned=1&embed=javascript:alert(1)', 2],
  ['?seq_len=1e400&micro_batch=99999999999999999999999&gpus=-1&zero=4', 4],
  ['?seq_len=' + 'A'.repeat(100 * 1024), 1],
  ['?hf=' + 'A'.repeat(100 * 1024) + '&model=hf', 1],
  ['?model=%E0%A4%A&gpu=%ZZ&precision=%', 3],
  ['?foo=bar&__proto__=x&constructor=1&toString=2', 4],
  ['?model=hf&hf=' + B64({ model_type: '<script>alert(1)</script>', __proto__: { polluted: 1 }, constructor: { prototype: { polluted: 1 } } }), 0],
  ['?model=hf&hf=!!not-base64!!', 1],
  ['?model=llama-2-7b&model=gpt2&model.layers=3', 2],
  ['?targets=q_proj,<b>x</b>&finetune=lora', 1],
  ['?embed=1&model="><svg onload=alert(1)>', 1],
  ['?zero=2', 0],
  ['?framework=<script>window.__pwned=1</script>&loss=chunked&loss_chunks=0&lm_head_chunks=maybe&optimizer_in_backward=1', 4],
  ['?finetune=lora&lora_dropout=1&adapter_dtype=__proto__&targets=query,<i>x</i>', 3],
  ['?framework=litgpt&loss=full&loss_chunks=4&lm_head_chunks=true&adapter_dtype=fp32', 3],
  ['?framework_version=%3Cscript%3Ewindow.__pwned=1%3C/script%3E&cp=0&pp_schedule=%3Csvg%20onload=alert(1)%3E&loss_parallel=1', 4],
  ['?finetune=qlora&backend=%3Cimg%20src=x%20onerror=alert(1)%3E&backend_version=%22%3E%3Csvg%20onload=alert(1)%3E&pp_stages_per_rank=0', 3],
  ['?framework=torchtitan&framework_version=' + '9'.repeat(40) + '&checkpointing=selective-op()&loss=fused;', 3],
];

test('hostile share links: nothing executes, each problem is reported, the page stays usable', async () => {
  for (const [query, problems] of HOSTILE) {
    const { page, context, log } = await open(query + '#<img src=x onerror=alert(1)>');
    const label = query.slice(0, 80);
    await clean(page, log);
    assert.equal(await page.evaluate(() => ({}).polluted), undefined, `${label}: prototype untouched`);
    assert.equal(await page.evaluate(() => document.querySelectorAll('img, svg:not(.chart), iframe').length), 0, label);
    const reported = await page.$$eval('#link-problems li', (li) => li.length);
    assert.ok(reported >= problems, `${label}: ${reported} problems reported, ${problems} expected`);
    if (query === '?zero=2') assert.match(await page.textContent('#e-zero'), /deepspeed/);
    if (query.includes('hf=eyJ')) assert.match(await page.textContent('#e-hf'), /model_type/);
    // Still usable: a valid change gives figures again.
    await page.evaluate(() => { document.body.classList.remove('embed'); });
    if (!(await page.isVisible('#f-model'))) throw new Error(`${label}: form hidden`);
    await unfoldSettings(page);
    await page.fill('#f-model', 'gpt2');
    await page.selectOption('#f-strategy', 'deepspeed');
    await page.selectOption('#f-strategy', 'single');
    await page.selectOption('#f-gpu', 'a100-80gb');
    await page.fill('#f-seq_len', '1024');
    await page.fill('#f-micro_batch', '4');
    await settle(page);
    const s = await shown(page);
    assert.ok(s.bytes, `${label}: figures shown after a valid change (${await page.textContent('#errors')})`);
    assert.equal(s.bytes, String(cliTotal(s.config).total_bytes), label);
    await clean(page, log);
    await context.close();
  }
});

test('models by name: a Hugging Face id or hub URL selects it, offline; the link carries the id; unknown ids are reported', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  const requests = server.requests.length;
  // The field offers the presets and the catalog.
  const offered = await page.$$eval('#model-list option', (o) => o.map((x) => x.value));
  for (const id of ['llama-2-7b', 'mixtral-8x7b', 'Qwen/Qwen3-8B', 'custom', 'hf']) assert.ok(offered.includes(id), id);
  assert.ok(offered.length > 100, `${offered.length} models offered`);

  await page.fill('#f-model', 'Qwen/Qwen3-8B');
  await settle(page);
  let s = await shown(page);
  assert.equal(JSON.parse(s.config).model, 'Qwen/Qwen3-8B');
  const native = cliTotal(s.config);
  assert.equal(s.bytes, String(native.total_bytes));
  assert.equal(await page.textContent('#e-model'), '');
  assert.match(await page.textContent('#params'), /^8\.19 B parameters/);
  assert.equal(new URL(page.url()).search, '?model=Qwen%2FQwen3-8B&gpu=a100-80gb');
  assert.deepEqual(server.requests.slice(requests).filter((u) => u !== '/favicon.svg'), [], 'no request after the page loaded');

  // A pasted hub URL selects its id; the field keeps what was typed while it is typed in (issue 24), and shows the id
  // once it is left or Enter is pressed. So does another spelling.
  await page.fill('#f-model', 'llama-2-13b');
  await settle(page);
  assert.equal(JSON.parse((await shown(page)).config).model, 'llama-2-13b');
  await page.fill('#f-model', 'https://huggingface.co/Qwen/Qwen3-8B/tree/main');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'https://huggingface.co/Qwen/Qwen3-8B/tree/main');
  assert.deepEqual(await shown(page), s);
  await page.press('#f-model', 'Enter');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'Qwen/Qwen3-8B');
  assert.deepEqual(await shown(page), s);
  await page.fill('#f-model', 'qwen/qwen3-8b');
  await settle(page);
  assert.equal(JSON.parse((await shown(page)).config).model, 'Qwen/Qwen3-8B');

  // The share link round-trips the id.
  const link = await page.inputValue('#share-url');
  assert.match(link, /\?model=Qwen%2FQwen3-8B&gpu=a100-80gb$/);
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.inputValue('#f-model'), 'Qwen/Qwen3-8B');
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.deepEqual(await shown(again.page), s);
  await clean(again.page, again.log);
  await again.context.close();
  // A link with a hub URL or another case selects the catalog's id too.
  const url = await open('?model=' + encodeURIComponent('https://huggingface.co/qwen/QWEN3-8b'));
  assert.equal(await url.page.inputValue('#f-model'), 'Qwen/Qwen3-8B');
  assert.equal(await url.page.isHidden('#link-problems'), true);
  await url.context.close();

  // An unknown id: a message next to the field with close matches, no figures, the link unchanged.
  await page.fill('#f-model', 'Qwen/Qwen3-9B');
  await settle(page);
  const message = await page.textContent('#e-model');
  assert.match(message, /Qwen\/Qwen3-9B.*is not a preset or a model of the catalog/);
  assert.match(message, /Did you mean [^?]*Qwen\/Qwen3-8B/);
  assert.doesNotMatch(message, /JSON|hf_config|errors/);
  assert.equal(await page.getAttribute('#f-model', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'invalid');
  assert.equal(await page.inputValue('#f-model'), 'Qwen/Qwen3-9B');
  assert.equal(new URL(page.url()).search, '?model=Qwen%2FQwen3-8B&gpu=a100-80gb');
  // Another change elsewhere keeps the typed text and its message.
  await page.selectOption('#f-gpu', 'h100-80gb');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'Qwen/Qwen3-9B');
  assert.match(await page.textContent('#e-model'), /not a preset/);
  // Fixing it brings the figures back; clearing the field and leaving it shows the model again.
  await page.fill('#f-model', 'Qwen/Qwen3-8B');
  await settle(page);
  assert.equal(await page.textContent('#e-model'), '');
  assert.ok(await page.getAttribute('#total', 'data-bytes'));
  await page.fill('#f-model', '');
  await page.focus('#f-seq_len');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'Qwen/Qwen3-8B');
  assert.equal(await page.textContent('#e-model'), '');

  // An unknown id in a link is reported as text and ignored.
  const bad = await open('?model=' + encodeURIComponent('Qwen/Qwen3-9B<b>x</b>'));
  assert.match(await bad.page.textContent('#link-problems'), /Qwen\/Qwen3-9B<b>x<\/b>.*is not a preset/);
  assert.equal(await bad.page.inputValue('#f-model'), 'llama-2-7b');
  await clean(bad.page, bad.log);
  await bad.context.close();
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('the explicit architecture starts from the shape, never the experts, of the previous model', async () => {
  const { page, context, log } = await open('?model=mixtral-8x7b&gpu=h200');
  await page.click('.model-other button[data-model=custom]');
  await settle(page);
  assert.equal(await page.inputValue('#f-model'), 'custom');
  assert.equal(await page.inputValue('#f-model-experts'), '1');
  assert.equal(await page.inputValue('#f-model-experts_per_token'), '1');
  assert.equal(await page.inputValue('#f-model-hidden'), '4096');
  assert.equal(await page.inputValue('#f-model-kv_heads'), '8');
  const s = await shown(page);
  const model = JSON.parse(s.config).model;
  assert.equal(model.experts, 1);
  assert.equal(model.experts_per_token, 1);
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  assert.doesNotMatch(page.url(), /experts/);

  // The activation follows the MLP until it is set apart; the link carries it only then. A plain MLP has no
  // gate_proj for LoRA to target.
  await page.selectOption('#f-finetune', 'lora');
  await page.check('#f-targets input[value=gate_proj]');
  await page.selectOption('#f-model-mlp', 'gelu');
  await settle(page);
  assert.equal(await page.inputValue('#f-model-activation'), 'gelu');
  assert.deepEqual(JSON.parse((await shown(page)).config).finetune.targets, ['q_proj', 'v_proj']);
  assert.equal(await page.$('#f-targets input[value=gate_proj]'), null, 'a plain MLP offers no gate_proj chip');
  assert.doesNotMatch(page.url(), /activation/);
  await page.selectOption('#f-model-activation', 'relu');
  await page.selectOption('#f-model-position', 'alibi');
  await settle(page);
  const t = await shown(page);
  assert.equal(JSON.parse(t.config).model.activation, 'relu');
  assert.equal(JSON.parse(t.config).model.position, 'alibi');
  assert.equal(t.bytes, String(cliTotal(t.config).total_bytes));
  const link = await page.inputValue('#share-url');
  assert.match(link, /model\.activation=relu/);
  const again = await open(link.slice(server.url.length));
  assert.deepEqual(await shown(again.page), t);
  await again.context.close();

  // From a catalog model (no architecture on the page): the Llama-style defaults.
  await page.fill('#f-model', 'Qwen/Qwen3-8B');
  await page.fill('#f-model', 'custom');
  await settle(page);
  assert.equal(await page.inputValue('#f-model-layers'), '32');
  assert.equal(await page.inputValue('#f-model-experts'), '1');
  assert.equal(await page.inputValue('#f-model-activation'), 'silu');
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

// The module names the core accepts under a framework, from its own error message for an unknown target.
function coreTargets(framework) {
  const r = spawnSync(CLI, ['estimate', '-'], {
    input: JSON.stringify({ framework, finetune: { method: 'lora', targets: ['nope'] } }), encoding: 'utf8' });
  assert.equal(r.status, 2);
  const m = /its projections: (.*)$/m.exec(r.stderr);
  assert.ok(m, `no list of projections for ${framework}`);
  return m[1].split(', ').sort();
}
const chips = (page) => page.$$eval('#f-targets input', (c) => c.map((x) => x.value));
const ticked = (page) => page.$$eval('#f-targets input:checked', (c) => c.map((x) => x.value));

test('training stacks: a framework sets its defaults and module names, keeps the rest, and the knobs round-trip', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  // Set apart first: LoRA on four modules, a longer sequence, checkpointing.
  await page.selectOption('#f-finetune', 'lora');
  await page.check('#f-targets input[value=o_proj]');
  await page.check('#f-targets input[value=gate_proj]');
  await page.fill('#f-seq_len', '4096');
  await page.selectOption('#f-checkpointing', 'full');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-base-mixed', 'PEFT’s recipe for adapters on one GPU');
  assert.equal(await page.inputValue('#f-adapter_dtype'), 'fp32');
  assert.equal(await page.isVisible('#f-loss_chunks'), false, 'no chunk count for the full loss');

  await page.selectOption('#f-framework', 'torchtune');
  await settle(page);
  // The profile's precision, loss and adapter dtype; the targets in torchtune's names, role by role.
  assert.equal(await page.inputValue('#f-precision'), 'bf16-true');
  assert.equal(await page.inputValue('#f-loss'), 'chunked');
  assert.equal(await page.inputValue('#f-adapter_dtype'), 'base');
  assert.deepEqual((await chips(page)).sort(), coreTargets('torchtune'));
  assert.deepEqual(await ticked(page), ['q_proj', 'v_proj', 'output_proj', 'w1']);
  assert.equal(await page.getAttribute('#f-loss_chunks', 'placeholder'), '8 (the stack’s)');
  let s = await shown(page);
  let cfg = JSON.parse(s.config);
  assert.equal(cfg.framework, 'torchtune');
  assert.deepEqual(cfg.finetune.targets, ['q_proj', 'v_proj', 'output_proj', 'w1']);
  assert.equal(cfg.seq_len, 4096, 'what the user set elsewhere is kept');
  assert.equal(cfg.checkpointing, 'full');
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes), 'torchtune LoRA: the CLI agrees');
  assert.equal(new URL(page.url()).search, '?model=llama-2-7b&gpu=a100-80gb&framework=torchtune&finetune=lora' +
    '&targets=q_proj%2Cv_proj%2Coutput_proj%2Cw1&seq_len=4096&checkpointing=full', 'the profile’s own values stay out of the link');

  // Every new knob, then the link.
  await page.fill('#f-loss_chunks', '4');
  await page.selectOption('#f-lm_head_chunks', 'true');
  await page.fill('#f-lora_dropout', '0.1');
  await page.selectOption('#f-adapter_dtype', 'fp32');
  await page.check('#f-optimizer_in_backward');
  await settle(page);
  s = await shown(page);
  cfg = JSON.parse(s.config);
  assert.deepEqual([cfg.loss_chunks, cfg.lm_head_chunks, cfg.finetune.dropout, cfg.adapter_dtype, cfg.optimizer_in_backward],
    [4, true, 0.1, 'fp32', true]);
  const native = cliTotal(s.config);
  assert.equal(s.bytes, String(native.total_bytes));
  assert.equal(native.config.loss_chunks, 4);
  const link = await page.inputValue('#share-url');
  for (const p of ['framework=torchtune', 'lora_dropout=0.1', 'adapter_dtype=fp32', 'optimizer_in_backward=true',
    'loss_chunks=4', 'lm_head_chunks=true']) assert.match(link, new RegExp(`[?&]${p}(&|$)`), p);
  assert.doesNotMatch(link, /precision|loss=/);
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.deepEqual(await shown(again.page), s);
  for (const [id, v] of [['framework', 'torchtune'], ['precision', 'bf16-true'], ['loss_chunks', '4'], ['lm_head_chunks', 'true'],
    ['lora_dropout', '0.1'], ['adapter_dtype', 'fp32']]) assert.equal(await again.page.inputValue('#f-' + id), v, id);
  assert.equal(await again.page.isChecked('#f-optimizer_in_backward'), true);
  assert.equal(await again.page.inputValue('#share-url'), link);
  await clean(again.page, again.log);
  await again.context.close();

  // LitGPT: its names and defaults; the chunk settings go back to the stack's, the rest stays.
  await page.selectOption('#f-framework', 'litgpt');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  assert.equal(await page.inputValue('#f-adapter_dtype'), 'base');
  assert.equal(await page.inputValue('#f-loss_chunks'), '');
  assert.equal(await page.inputValue('#f-lm_head_chunks'), '');
  assert.deepEqual((await chips(page)).sort(), coreTargets('litgpt'));
  assert.deepEqual(await ticked(page), ['query', 'value', 'projection', 'mlp']);
  assert.equal(await page.isChecked('#f-optimizer_in_backward'), true);
  assert.equal(await page.inputValue('#f-lora_dropout'), '0.1');
  s = await shown(page);
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  assert.equal(await page.getAttribute('#f-loss_chunks', 'placeholder'), `${JSON.parse(s.config).seq_len / 128} (the stack’s)`);
  // Back to Hugging Face: Llama's names again.
  await page.selectOption('#f-framework', 'hf');
  await settle(page);
  assert.deepEqual(await ticked(page), ['q_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
  assert.equal(await page.inputValue('#f-adapter_dtype'), 'fp32');
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('a LitGPT link with the full loss round-trips', async () => {
  const query = '?model=llama-2-7b&gpu=a100-80gb&framework=litgpt&loss=full';
  const { page, context, log } = await open(query);
  assert.equal(await page.isHidden('#link-problems'), true);
  assert.equal(await page.inputValue('#f-framework'), 'litgpt');
  assert.equal(await page.inputValue('#f-loss'), 'full');
  assert.equal(await page.isVisible('#f-loss_chunks'), false);
  const s = await shown(page);
  const cfg = JSON.parse(s.config);
  assert.equal(cfg.framework, 'litgpt');
  assert.equal(cfg.loss, 'full');
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  const link = await page.inputValue('#share-url');
  assert.equal(link, server.url + query);
  const again = await open(link.slice(server.url.length));
  assert.deepEqual(await shown(again.page), s);
  await again.context.close();
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
const optionValues = (page, id) => page.$$eval(`#${id} option`, (o) => o.map((x) => x.value));

test('torchtitan, context and pipeline parallelism: the fields, the module names, the followed defaults, the link', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb');
  // The new choices and fields exist.
  assert.ok((await optionValues(page, 'f-framework')).includes('torchtitan'));
  assert.ok((await optionValues(page, 'f-checkpointing')).includes('selective-op'));
  assert.ok((await optionValues(page, 'f-loss')).includes('fused'));
  assert.deepEqual(await optionValues(page, 'f-pp_schedule'), ['1f1b', 'gpipe', 'interleaved-1f1b']);
  assert.deepEqual(await optionValues(page, 'f-backend'), ['bitsandbytes', 'torchao']);
  for (const id of ['framework_version', 'cp', 'loss_parallel', 'pp_stages_per_rank', 'backend_version'])
    assert.ok(await page.$('#f-' + id), id);
  assert.equal(await page.isVisible('#f-framework_version'), true);
  for (const id of ['cp', 'loss_parallel', 'pp_schedule', 'pp_stages_per_rank', 'backend', 'backend_version'])
    assert.equal(await page.isVisible('#f-' + id), false, `${id} hidden on one GPU without QLoRA`);

  // torchtitan: its profile, its module names for LoRA.
  await page.selectOption('#f-finetune', 'lora');
  await page.check('#f-targets input[value=gate_proj]');
  await page.selectOption('#f-framework', 'torchtitan');
  await settle(page);
  assert.equal(await page.inputValue('#f-precision'), 'bf16-mixed');
  assert.equal(await page.inputValue('#f-loss'), 'full');
  assert.equal(await page.inputValue('#f-adapter_dtype'), 'base');
  assert.deepEqual((await chips(page)).sort(), coreTargets('torchtitan'));
  assert.deepEqual(await ticked(page), ['wq', 'wv', 'w1']);
  assert.equal(await page.getAttribute('#f-framework_version', 'placeholder'),
    `${cliTotal('{"framework":"torchtitan"}').config.framework_version} (the current)`, 'the core’s current revision');

  // FSDP 2 (the profile's) on a mesh: tp, cp, pp; sequence and loss parallelism on by default with tp > 1.
  await page.selectOption('#f-strategy', 'fsdp');
  await settle(page);
  assert.equal(await page.inputValue('#f-fsdp_version'), '2');
  await page.fill('#f-gpus', '8');
  await page.fill('#f-tp', '2');
  await settle(page);
  assert.equal(await page.isVisible('#f-sequence_parallel'), true);
  assert.equal(await page.isChecked('#f-sequence_parallel'), true, 'sequence parallelism follows tp under FSDP');
  assert.equal(await page.isVisible('#f-loss_parallel'), true);
  assert.equal(await page.isChecked('#f-loss_parallel'), true);
  await page.fill('#f-cp', '2');
  await page.fill('#f-pp', '2');
  await settle(page);
  assert.equal(await page.isVisible('#f-pp_schedule'), true);
  assert.equal(await page.isVisible('#f-pp_stages_per_rank'), true);
  assert.equal(await page.inputValue('#f-pp_stages_per_rank'), '1');
  await page.selectOption('#f-pp_schedule', 'interleaved-1f1b');
  await settle(page);
  assert.equal(await page.inputValue('#f-pp_stages_per_rank'), '2', 'the interleaved schedule runs 2 stages per GPU');
  await page.selectOption('#f-checkpointing', 'selective-op');
  await page.selectOption('#f-loss', 'fused');
  await page.uncheck('#f-loss_parallel');
  await page.uncheck('#f-sequence_parallel');
  await settle(page);
  const s = await shown(page);
  const cfg = JSON.parse(s.config);
  assert.deepEqual(
    [cfg.framework, cfg.strategy, cfg.fsdp_version, cfg.tp, cfg.cp, cfg.pp, cfg.pp_schedule, cfg.pp_stages_per_rank,
      cfg.sequence_parallel, cfg.loss_parallel, cfg.checkpointing, cfg.loss, cfg.finetune.targets],
    ['torchtitan', 'fsdp', 2, 2, 2, 2, 'interleaved-1f1b', 2, false, false, 'selective-op', 'fused', ['wq', 'wv', 'w1']]);
  const native = cliTotal(s.config);
  assert.equal(s.bytes, String(native.total_bytes), 'torchtitan on a 2 x 2 x 2 mesh: the CLI agrees');
  assert.equal(native.config.pp_stages_per_rank, 2);

  const link = await page.inputValue('#share-url');
  for (const p of ['framework=torchtitan', 'strategy=fsdp', 'tp=2', 'cp=2', 'pp=2', 'pp_schedule=interleaved-1f1b',
    'sequence_parallel=false', 'loss_parallel=false', 'checkpointing=selective-op', 'loss=fused',
    'targets=wq%2Cwv%2Cw1']) assert.match(link, new RegExp(`[?&]${p}(&|$)`), p);
  assert.doesNotMatch(link, /pp_stages_per_rank|fsdp_version|framework_version/, 'defaults stay out of the link');
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.deepEqual(await shown(again.page), s);
  for (const [id, v] of [['framework', 'torchtitan'], ['cp', '2'], ['pp', '2'], ['pp_schedule', 'interleaved-1f1b'],
    ['pp_stages_per_rank', '2'], ['checkpointing', 'selective-op'], ['loss', 'fused']])
    assert.equal(await again.page.inputValue('#f-' + id), v, id);
  assert.equal(await again.page.isChecked('#f-sequence_parallel'), false);
  assert.equal(await again.page.isChecked('#f-loss_parallel'), false);
  assert.equal(await again.page.inputValue('#share-url'), link);
  await clean(again.page, again.log);
  await again.context.close();

  // Back to one GPU: the mesh settings go back to their defaults.
  await page.selectOption('#f-strategy', 'single');
  await settle(page);
  const back = JSON.parse((await shown(page)).config);
  assert.deepEqual([back.tp, back.cp, back.pp, back.pp_schedule, back.pp_stages_per_rank, back.sequence_parallel, back.loss_parallel],
    [1, 1, 1, '1f1b', 1, false, true]);
  assert.equal(await page.textContent('#errors'), '');
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('framework versions: the revision’s defaults, the core’s message next to the field, the link', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb&framework=torchtune');
  assert.equal(await page.inputValue('#f-loss'), 'chunked');
  assert.equal(await page.inputValue('#f-fsdp_version'), '2');
  assert.equal(await page.getAttribute('#f-framework_version', 'placeholder'),
    `${cliTotal('{"framework":"torchtune"}').config.framework_version} (the current)`);
  // A version the core refuses: its own message, next to the field.
  await page.fill('#f-framework_version', 'abc');
  await settle(page);
  const message = coreError({ framework: 'torchtune', framework_version: 'abc' }, 'framework_version');
  assert.match(message, /torchtune changes at/);
  assert.equal(await page.textContent('#e-framework_version'), message);
  assert.equal(await page.getAttribute('#f-framework_version', 'aria-invalid'), 'true');
  assert.equal(await page.getAttribute('#fits', 'data-fits'), 'invalid');
  assert.match(await page.textContent('#errors'), /Framework version: must be a release/);
  // torchtune 0.2.1: FSDP 1 with adapters wrapped apart and the full loss.
  await page.fill('#f-framework_version', '0.2.1');
  await settle(page);
  assert.equal(await page.textContent('#e-framework_version'), '');
  assert.equal(await page.inputValue('#f-loss'), 'full');
  assert.equal(await page.inputValue('#f-fsdp_version'), '1');
  assert.equal(await page.inputValue('#f-fsdp_wrap'), 'adapters-apart');
  assert.equal(await page.inputValue('#f-framework_version'), '0.2.1');
  let s = await shown(page);
  assert.equal(JSON.parse(s.config).framework_version, '0.2.1');
  let native = cliTotal(s.config);
  assert.equal(native.config.framework_version, '0.2.1');
  assert.equal(native.config.loss, 'full');
  assert.equal(s.bytes, String(native.total_bytes));
  const link = await page.inputValue('#share-url');
  assert.match(link, /[?&]framework=torchtune&framework_version=0\.2\.1(&|$)/);
  assert.doesNotMatch(link, /loss=|fsdp_version=/, 'the revision’s own defaults stay out of the link');
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.deepEqual(await shown(again.page), s);
  assert.equal(await again.page.inputValue('#f-loss'), 'full');
  assert.equal(await again.page.inputValue('#f-framework_version'), '0.2.1');
  await again.context.close();
  // A date selects the revision in force then; another framework forgets the version.
  await page.fill('#f-framework_version', '2024-12-31');
  await settle(page);
  assert.equal(await page.inputValue('#f-loss'), 'chunked');
  s = await shown(page);
  native = cliTotal(s.config);
  assert.equal(s.bytes, String(native.total_bytes));
  await page.selectOption('#f-framework', 'litgpt');
  await settle(page);
  assert.equal(await page.inputValue('#f-framework_version'), '');
  assert.equal(JSON.parse((await shown(page)).config).framework_version, undefined);
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('QLoRA back ends: shown with QLoRA only, sent inside finetune, refused versions reported next to the field', async () => {
  const { page, context, log } = await open('?model=llama-2-7b&gpu=a100-80gb&finetune=qlora');
  assert.equal(await page.isVisible('#f-backend'), true);
  assert.equal(await page.inputValue('#f-backend'), 'bitsandbytes');
  await page.selectOption('#f-backend', 'torchao');
  await page.fill('#f-backend_version', '0.41.1');
  await settle(page);
  let s = await shown(page);
  const ft = JSON.parse(s.config).finetune;
  assert.deepEqual([ft.method, ft.backend, ft.backend_version], ['qlora', 'torchao', '0.41.1']);
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  const link = await page.inputValue('#share-url');
  assert.match(link, /[?&]finetune=qlora&backend=torchao&backend_version=0\.41\.1(&|$)/);
  const again = await open(link.slice(server.url.length));
  assert.equal(await again.page.isHidden('#link-problems'), true);
  assert.deepEqual(await shown(again.page), s);
  await again.context.close();
  await page.fill('#f-backend_version', 'x');
  await settle(page);
  // The page's mechanism for a key inside finetune: the core's message, after the key's name.
  assert.equal(await page.textContent('#e-backend_version'),
    'finetune.backend_version: ' + coreError({ finetune: { method: 'qlora', backend_version: 'x' } }, 'finetune.backend_version'));
  await page.fill('#f-backend_version', '');
  await page.selectOption('#f-finetune', 'lora');
  await settle(page);
  assert.equal(await page.isVisible('#f-backend'), false);
  s = await shown(page);
  assert.equal(JSON.parse(s.config).finetune.backend, undefined, 'no back end outside QLoRA');
  assert.equal(s.bytes, String(cliTotal(s.config).total_bytes));
  assert.doesNotMatch(await page.inputValue('#share-url'), /backend/);
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test('hostile values of the new keys: each reported as text and ignored', async () => {
  const query = '?framework=torchtitan%3Cb%3E&framework_version=%3Cscript%3Ewindow.__pwned=1%3C/script%3E' +
    '&checkpointing=selective-op%3Cimg%20src=x%3E&loss=fused%22%3E&cp=1025&loss_parallel=yes&sequence_parallel=1' +
    '&pp_schedule=%3Csvg%20onload=alert(1)%3E&pp_stages_per_rank=65&finetune=qlora&backend=__proto__' +
    '&backend_version=javascript:alert(1)';
  const { page, context, log } = await open(query);
  const listed = await page.$$eval('#link-problems li code', (c) => c.map((x) => x.textContent));
  for (const k of ['framework', 'framework_version', 'checkpointing', 'loss', 'cp', 'loss_parallel', 'sequence_parallel',
    'pp_schedule', 'pp_stages_per_rank', 'backend', 'backend_version']) assert.ok(listed.includes(k), `${k} reported`);
  assert.match(await page.textContent('#link-problems'), /<script>window\.__pwned=1<\/script>/, 'shown as text');
  assert.equal(await page.evaluate(() => document.querySelectorAll('#link-problems *:not(p, ul, li, code, button)').length), 0);
  const cfg = JSON.parse((await shown(page)).config);
  assert.deepEqual([cfg.framework, cfg.framework_version, cfg.checkpointing, cfg.loss, cfg.cp, cfg.loss_parallel,
    cfg.sequence_parallel, cfg.pp_schedule, cfg.pp_stages_per_rank, cfg.finetune.backend, cfg.finetune.backend_version],
  ['hf', undefined, 'none', 'full', 1, true, false, '1f1b', 1, 'bitsandbytes', undefined]);
  // A QLoRA key without QLoRA, and a version past 32 characters.
  const other = await open('?finetune=lora&backend=torchao&backend_version=0.41.1&framework_version=' + '1'.repeat(33));
  const problems = await other.page.$$eval('#link-problems li', (li) => li.map((x) => x.textContent));
  assert.equal(problems.length, 3);
  assert.match(problems.join('\n'), /backend only used with finetune=qlora/);
  assert.match(problems.join('\n'), /framework_version must be a release/);
  assert.equal(JSON.parse((await shown(other.page)).config).framework_version, undefined);
  await clean(other.page, other.log);
  await other.context.close();
  await clean(page, log);
  await context.close();
});

test('suggestions with the new keys: the 16-bit cross-entropy kernel on a torchtitan mesh', async () => {
  const query = '?model=llama-3-8b&gpu=a100-80gb&framework=torchtitan&strategy=fsdp&gpus=8&tp=2&cp=2&seq_len=8192' +
    '&micro_batch=16&checkpointing=selective-op';
  const { page, context, log } = await open(query);
  const before = await shown(page);
  assert.equal(JSON.parse(before.config).sequence_parallel, true);
  const native = cliTotal(before.config);
  assert.equal(before.bytes, String(native.total_bytes));
  const sgt = native.suggestions.find((x) => x.change.startsWith('Cross-entropy kernel over the 16-bit logits'));
  assert.ok(sgt, 'the core suggests the 16-bit cross-entropy kernel');
  assert.deepEqual(sgt.config, { loss: 'fused' });
  await page.click('#suggestions .suggest:has-text("Cross-entropy kernel over the 16-bit logits")');
  await settle(page);
  const s = await shown(page);
  const cfg = JSON.parse(s.config);
  assert.equal(cfg.loss, 'fused');
  assert.equal(await page.inputValue('#f-loss'), 'fused');
  assert.equal(s.bytes, String(sgt.total_bytes));
  assert.deepEqual([cfg.cp, cfg.tp, cfg.sequence_parallel, cfg.checkpointing], [2, 2, true, 'selective-op'], 'the rest is kept');
  assert.equal(await page.inputValue('#share-url'),
    server.url + query.replace('&strategy=fsdp&gpus=8', '&gpus=8&strategy=fsdp').replace('&checkpointing', '&loss=fused&checkpointing'));
  await clean(page, log);
  assert.deepEqual(log.errors, []);
  await context.close();
});
