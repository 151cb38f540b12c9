// The WebAssembly module against the native CLI: byte-identical JSON on a few hundred generated configurations
// (valid and invalid, deterministic), the same errors, and a module that keeps working after bad calls.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { loadModule, cli, requireCli, CLI } from './lib.mjs';

// The page's module (the answer, sweeps, presets) and the details' (the evidence, the full report, exports, AdamW), as one.
let mod;
before(async () => {
  requireCli();
  const page = await loadModule();
  const more = await loadModule('vramcalc-details');
  mod = { answer: page.answer, answerWithoutSuggestions: page.answerWithoutSuggestions, sweep: page.sweep, presets: page.presets,
    benchEstimates: page.benchEstimates,
    estimate: more.estimate, evidence: more.evidence, timeline: more.timeline, deepspeedConfig: more.deepspeedConfig, exports: more.exports, adamwStep: more.adamwStep };
});

// mulberry32: a small deterministic generator, so every run checks the same configurations.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MODELS = ['gpt2', 'gpt2-xl', 'llama-2-7b', 'llama-2-13b', 'llama-2-70b', 'llama-3-8b', 'llama-3.2-1b', 'mistral-7b',
  'mixtral-8x7b', 'qwen2.5-7b', 'gemma-2b', 'phi-3-mini'];
const GPUS = ['a100-40gb', 'a100-80gb', 'h100-80gb', 'h200', 'l4', 'rtx-4090', 't4', 'mi300x'];
const HF = [
  { model_type: 'llama', num_hidden_layers: 16, hidden_size: 2048, num_attention_heads: 32, num_key_value_heads: 8,
    intermediate_size: 8192, vocab_size: 128256, max_position_embeddings: 131072, tie_word_embeddings: true },
  { model_type: 'gpt2', n_layer: 12, n_embd: 768, n_head: 12, vocab_size: 50257 },
  { model_type: 'mixtral', num_hidden_layers: 4, hidden_size: 1024, num_attention_heads: 8, intermediate_size: 2048, vocab_size: 32000 },
];
const pick = (r, list) => list[Math.floor(r() * list.length)];

function validConfig(r) {
  const c = {};
  const m = r();
  if (m < 0.75) c.model = pick(r, MODELS);
  else if (m < 0.9) c.model = { hf_config: pick(r, HF) };
  else c.model = { layers: 1 + Math.floor(r() * 48), hidden: 256 * (1 + Math.floor(r() * 16)), heads: 8, ffn: 4096, vocab: 32000 };
  c.gpu = r() < 0.9 ? pick(r, GPUS) : { name: 'Test GPU', memory_gib: 8 + Math.floor(r() * 200) };
  c.seq_len = pick(r, [128, 512, 1000, 1024, 2048, 4096]);
  c.micro_batch = 1 + Math.floor(r() * 16);
  if (r() < 0.3) c.grad_accum = 1 + Math.floor(r() * 8);
  c.precision = pick(r, ['bf16-mixed', '16-mixed', '32-true', 'bf16-true', '16-true']);
  c.optimizer = pick(r, ['adamw', 'adamw-8bit', 'adafactor', 'lion', 'sgd', 'sgd-momentum']);
  if (r() < 0.4) c.optimizer_impl = pick(r, ['foreach', 'fused', 'single-tensor']);
  c.checkpointing = pick(r, ['none', 'selective', 'full']);
  c.attention = pick(r, ['eager', 'flash']);
  const strategy = pick(r, ['single', 'ddp', 'deepspeed', 'fsdp', 'megatron']);
  c.strategy = strategy;
  if (strategy !== 'single') c.gpus = pick(r, [2, 4, 8, 16]);
  if (strategy === 'deepspeed') {
    c.zero = Math.floor(r() * 4);
    if (c.zero > 0 && r() < 0.4) c.offload = c.zero === 3 && r() < 0.5 ? 'optimizer+params' : 'optimizer';
  }
  if (strategy === 'fsdp') {
    c.zero = pick(r, [0, 2, 3]);
    if (r() < 0.3) c.offload = 'optimizer+params';
  }
  if (strategy === 'megatron') {
    c.tp = pick(r, [1, 2]);
    c.pp = 1;
    if (c.tp > 1 && r() < 0.5) c.sequence_parallel = true;
    if (r() < 0.3) c.zero = 1;
  }
  if (r() < 0.25 && strategy !== 'megatron') c.finetune = { method: pick(r, ['lora', 'qlora']), rank: pick(r, [4, 8, 64]), targets: ['q_proj', 'v_proj'] };
  if (r() < 0.1) c.torch = '1.13';
  if (r() < 0.05) c.device = 'cpu';
  // The run and its cost (hours, GPU-hours, cost: floating-point text both sides must print alike).
  if (r() < 0.3) c.train_tokens = pick(r, [1e9, 2.5e11, 123456789]);
  if (r() < 0.2) c.price_per_gpu_hour = pick(r, [0.5, 2.49, 98.7]);
  if (r() < 0.1 && c.gpus > 4) Object.assign(c, { gpus_per_node: 4, inter_node_gbps: 25 });
  return c;
}

// One deliberate problem: a wrong type, a bound, an unknown key or value, an inconsistency, or broken JSON.
function invalidText(r) {
  const c = validConfig(r);
  const k = Math.floor(r() * 12);
  if (k === 0) c.seq_len = -1;
  else if (k === 1) c.micro_batch = 'eight';
  else if (k === 2) c.precision = 'fp8';
  else if (k === 3) c.model = 'gpt-5';
  else if (k === 4) c.unknown_key = true;
  else if (k === 5) { c.strategy = 'single'; c.gpus = 4; }
  else if (k === 6) { c.strategy = 'ddp'; c.zero = 2; }
  else if (k === 7) c.model = { hf_config: { model_type: 'llama', hidden_size: 4096 } };
  else if (k === 8) c.gpu = { name: 'x', memory_gib: 0 };
  else if (k === 9) c.seq_len = 1e300;
  else if (k === 10) return JSON.stringify(c).slice(0, -3);
  else c.model = { layers: 2, hidden: 100, heads: 3, ffn: 10, vocab: 10 };
  return JSON.stringify(c);
}

function errorLines(json) {
  return JSON.parse(json).errors.map((e) => `error: ${e.field ? e.field + ': ' : ''}${e.message}`).join('\n');
}

test('estimate: byte-identical JSON to the native CLI on 300 generated configurations', () => {
  const r = rng(20240611);
  let valid = 0;
  let invalid = 0;
  for (let i = 0; i < 300; i++) {
    const text = i % 3 === 2 ? invalidText(r) : JSON.stringify(validConfig(r));
    const wasm = mod.estimate(text);
    const native = cli('estimate', text);
    if (native.code === 0) {
      valid++;
      assert.equal(wasm + '\n', native.stdout, `config #${i}: ${text}`);
      // The page's answer is the same report without its evidence.
      const { evidence, ...answer } = JSON.parse(wasm);
      assert.ok(evidence, `config #${i}: the full report has its evidence`);
      assert.deepEqual(JSON.parse(mod.answer(text)), answer, `config #${i}: the page's answer`);
      // Its first paint: the same with the suggestions left for the next call.
      assert.deepEqual(JSON.parse(mod.answerWithoutSuggestions(text)), { ...answer, suggestions: null },
        `config #${i}: the page's first answer`);
    } else {
      invalid++;
      assert.equal(native.code, 2, `config #${i}: ${text}`);
      assert.ok(JSON.parse(wasm).errors.length > 0, `config #${i} should fail in WASM too: ${text}`);
    }
  }
  console.log(`# ${valid} valid and ${invalid} invalid configurations compared`);
  assert.ok(valid >= 120, `only ${valid} valid configurations were generated`);
  assert.ok(invalid >= 80, `only ${invalid} invalid configurations were generated`);
});

test('errors: the same fields and messages as the CLI prints', () => {
  const r = rng(7);
  for (let i = 0; i < 60; i++) {
    const text = invalidText(r);
    const wasm = mod.estimate(text);
    const out = JSON.parse(wasm);
    if (!out.errors) continue;
    for (const e of out.errors) {
      assert.equal(typeof e.field, 'string');
      assert.equal(typeof e.message, 'string');
    }
    const lines = errorLines(wasm);
    const native = cliStderr('estimate', text);
    assert.equal(native.trimEnd(), lines, `config: ${text}`);
  }
});

// The stacks' keys on top of a generated configuration: frameworks and their versions, torchtitan's mesh (tp, pp, cp
// under FSDP 2) with its schedules, per-op checkpointing, the 16-bit cross-entropy kernel, QLoRA's back ends.
function stackConfig(r) {
  const c = validConfig(r);
  c.framework = pick(r, ['hf', 'torchtune', 'torchtitan', 'litgpt']);
  if (r() < 0.4) c.framework_version = pick(r, ['0.2.1', '0.3.0', '2024-05-20', '2024-12-31', '0.4.6', '5.18']);
  if (r() < 0.5) c.loss = pick(r, ['full', 'chunked', 'fused', 'fused-linear']);
  if (c.strategy !== 'megatron' && r() < 0.3) c.checkpointing = 'selective-op';
  if (c.strategy === 'fsdp' && r() < 0.7) {
    c.fsdp_version = 2;
    c.tp = pick(r, [1, 2]);
    c.pp = pick(r, [1, 2]);
    c.cp = c.attention === 'flash' ? pick(r, [1, 2]) : 1;
    c.gpus = 2 * c.tp * c.pp * c.cp;
    if (c.pp > 1) {
      c.pp_schedule = pick(r, ['1f1b', 'gpipe', 'interleaved-1f1b']);
      if (c.pp_schedule === 'interleaved-1f1b' && r() < 0.5) c.pp_stages_per_rank = pick(r, [1, 2, 3]);
    }
    if (c.tp > 1 && r() < 0.5) c.loss_parallel = r() < 0.5;
    if (c.tp > 1 && r() < 0.3) c.sequence_parallel = false;
  }
  if (c.finetune && c.finetune.method === 'qlora' && r() < 0.6) {
    c.finetune.backend = pick(r, ['bitsandbytes', 'torchao']);
    if (r() < 0.5) c.finetune.backend_version = pick(r, ['0.41.1', '0.43.1', '0.5.0']);
  }
  if (c.finetune && c.framework !== 'hf') c.finetune.targets = ['all-linear'];
  return c;
}

test('the stacks\' keys: byte-identical JSON and the same errors as the native CLI', () => {
  const r = rng(20250101);
  let valid = 0;
  let invalid = 0;
  for (let i = 0; i < 150; i++) {
    const c = stackConfig(r);
    const k = i % 5 === 4 ? Math.floor(r() * 8) : -1;
    if (k === 0) c.framework_version = pick(r, ['abc', '', 'v1', 'x'.repeat(33), 3]);
    else if (k === 1) c.cp = pick(r, [0, 1025, 3, 'two']);
    else if (k === 2) c.pp_schedule = pick(r, ['zb', '1F1B', 1]);
    else if (k === 3) c.pp_stages_per_rank = pick(r, [0, 65, 2]);
    else if (k === 4) c.loss_parallel = 'yes';
    else if (k === 5) c.finetune = { method: pick(r, ['lora', 'qlora']), backend: pick(r, ['torchao', 'bnb']), backend_version: pick(r, ['x', '0.41.1']) };
    else if (k === 6) c.checkpointing = pick(r, ['selective_op', 'selective-op']), c.strategy = 'megatron', c.gpus = 2;
    else if (k === 7) c.framework = 'torchtitan ';
    const text = JSON.stringify(c);
    const wasm = mod.estimate(text);
    const native = cli('estimate', text);
    if (native.code === 0) {
      valid++;
      assert.equal(wasm + '\n', native.stdout, `config #${i}: ${text}`);
    } else {
      invalid++;
      assert.equal(native.code, 2, `config #${i}: ${text}`);
      assert.equal(cliStderr('estimate', text).trimEnd(), errorLines(wasm), `config #${i}: ${text}`);
    }
  }
  console.log(`# ${valid} valid and ${invalid} invalid configurations with the stacks' keys compared`);
  assert.ok(valid >= 60, `only ${valid} valid configurations were generated`);
  assert.ok(invalid >= 25, `only ${invalid} invalid configurations were generated`);
});

function cliStderr(command, input) {
  return spawnSync(CLI, [command, '-'], { input, encoding: 'utf8' }).stderr;
}

test('sweep, timeline, deepspeed, exports, adamw and presets: identical to the CLI', () => {
  const r = rng(99);
  for (let i = 0; i < 40; i++) {
    const config = validConfig(r);
    const text = JSON.stringify(config);
    const ds = cli('deepspeed', text);
    if (ds.code === 0) assert.equal(mod.deepspeedConfig(text) + '\n', ds.stdout, text);
    const tl = spawnSync(CLI, ['estimate', '-', '--timeline'], { input: text, encoding: 'utf8' });
    if (tl.status === 0) assert.equal(mod.timeline(text) + '\n', tl.stdout, text);
    else assert.ok(JSON.parse(mod.timeline(text)).errors, text);
    const ex = cli('exports', text);
    if (ex.code === 0) assert.equal(mod.exports(text) + '\n', ex.stdout, text);
    else assert.ok(JSON.parse(mod.exports(text)).errors, text);
    const req = JSON.stringify({ config, micro_batch: [1, 2, 4, 8], seq_len: [512, 2048] });
    const sw = cli('sweep', req);
    if (sw.code === 0) assert.equal(mod.sweep(req) + '\n', sw.stdout, req);
  }
  const adamw = [
    { lr: 1e-3, param: [1, -2, 0.5], grads: [[0.1, 0.2, -0.3]] },
    { lr: 1e-5, betas: [0.9, 0.95], eps: 1e-8, weight_decay: 0.1, amsgrad: true, precision: 'bf16', param: [1, 250, 1e-3], grads: [[1e-4, 3, 'NaN'], [0.5, -1, 2]] },
    { lr: 1e-2, maximize: true, precision: 'fp16', variant: 'torch-1.13', param: [3.5], grads: [[1e30]] },
    { lr: -1, param: [1], grads: [[1]] },
  ];
  for (const req of adamw) {
    const text = JSON.stringify(req);
    const native = cli('adamw', text);
    const wasm = mod.adamwStep(text);
    if (native.code === 0) assert.equal(wasm + '\n', native.stdout, text);
    else assert.ok(JSON.parse(wasm).errors, text);
  }
  assert.equal(mod.presets() + "\n", spawnSync(CLI, ["presets"], { encoding: "utf8" }).stdout);
});

test('the module keeps working after bad calls', () => {
  const good = JSON.stringify({ model: 'llama-2-7b', gpu: 'a100-80gb' });
  const expected = mod.estimate(good);
  const bad = ['', 'null', '[]', '{', '"x"', '{"model":{}}', '{"seq_len":"a"}', 'x'.repeat(2 << 20),
    '{"model":{"hf_config":[]}}', '\u0000\uffff', '{"gpu":{"memory_gib":1e999}}', '{"micro_batch":1e20}'];
  for (const text of bad) {
    for (const f of ['answer', 'answerWithoutSuggestions', 'estimate', 'evidence', 'timeline', 'deepspeedConfig', 'exports', 'sweep', 'adamwStep']) {
      const out = JSON.parse(mod[f](text));
      assert.ok(Array.isArray(out.errors) && out.errors.length > 0, `${f}(${text.slice(0, 40)})`);
    }
  }
  assert.equal(mod.estimate(good), expected);
  assert.deepEqual(JSON.parse(mod.answer(good)), (({ evidence, ...rest }) => rest)(JSON.parse(expected)));
  assert.equal(JSON.parse(mod.answerWithoutSuggestions(good)).suggestions, null);
  assert.ok(mod.benchEstimates(good, 0.01) > 0);
  assert.equal(mod.benchEstimates('{"seq_len":0}', 0.01), -1);
});

// The scalar AdamW reference in WebAssembly against real torch.optim.AdamW trajectories
// (tests/validation/adamw/trajectories.json, float32 bit patterns): same bits as torch, same text as the CLI.
test('AdamW on PyTorch trajectories: WASM bits equal torch and the native CLI', async () => {
  const { readFileSync } = await import('node:fs');
  const data = JSON.parse(readFileSync(new URL('../validation/adamw/trajectories.json', import.meta.url)));
  const view = new DataView(new ArrayBuffer(4));
  const fromHex = (h) => { view.setUint32(0, parseInt(h, 16)); return view.getFloat32(0); };
  const toJson = (x) => (Number.isNaN(x) ? 'NaN' : x === Infinity ? 'Infinity' : x === -Infinity ? '-Infinity' : x);
  const bits = (x) => { view.setFloat32(0, x); return view.getUint32(0); };
  const value = (v) => (v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v);
  let compared = 0;
  for (const c of data.cases) {
    const req = {
      lr: Number(c.lr), betas: c.betas.map(Number), eps: Number(c.eps), weight_decay: Number(c.weight_decay),
      amsgrad: c.amsgrad === true || c.amsgrad === 'True', maximize: c.maximize === true || c.maximize === 'True',
      variant: c.variant, param: c.param0.map((h) => toJson(fromHex(h))),
      grads: c.grads.map((g) => g.map((h) => toJson(fromHex(h)))),
    };
    const text = JSON.stringify(req);
    const wasm = mod.adamwStep(text);
    assert.equal(wasm + '\n', cli('adamw', text).stdout, c.name);
    const out = JSON.parse(wasm);
    const expected = c.trajectory[c.trajectory.length - 1].param.map(fromHex);
    out.param.map(value).forEach((x, i) => {
      const want = expected[i];
      if (Number.isNaN(want)) assert.ok(Number.isNaN(x), `${c.name} element ${i}: NaN expected`);
      else assert.equal(bits(Math.fround(x)), bits(want), `${c.name} element ${i}: ${x} vs torch ${want}`);
      compared++;
    });
  }
  assert.ok(compared > 100, `only ${compared} values compared`);
});
