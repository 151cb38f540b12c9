// vramcalc page: the form, the answer, share links and the embed view. All arithmetic is the core's (WebAssembly).
import createVramcalc from './vramcalc.js';
import { $, h, clear, gib, count } from './dom.js';
import { lineChart } from './charts.js';
import { initAdamw } from './adamw.js';
import {
  CHOICES, ARCH_KEYS, DEFAULTS, MLP_ACTIVATION, STACK_MODULES, LORA_KEYS, CHUNK_KEYS, QLORA_KEYS, FOLLOWERS, defaultOf,
  defaultZero, initialState, toConfig, toQuery, fromQuery, applyPatch, applyProfile, follow, readProfiles, ownModules,
  targetsOffered, translateTargets, compactHf, clip, resolveModel, closeModels,
} from './params.js';

const LABELS = {
  framework: { hf: 'Hugging Face transformers + PEFT', torchtune: 'torchtune', torchtitan: 'torchtitan', litgpt: 'LitGPT' },
  loss: { full: 'Full cross-entropy (whole logits)', chunked: 'Chunked cross-entropy',
    fused: 'Cross-entropy kernel over the 16-bit logits (flash-attn, Liger)', 'fused-linear': 'Fused linear cross-entropy (Liger)' },
  pp_schedule: { '1f1b': '1F1B', gpipe: 'GPipe (all forwards, then all backwards)',
    'interleaved-1f1b': 'Interleaved 1F1B (several stages per GPU)' },
  backend: { bitsandbytes: 'bitsandbytes (Linear4bit: PEFT, LitGPT)', torchao: 'torchao (NF4Tensor: torchtune)' },
  adapter_dtype: { fp32: 'fp32 (PEFT)', base: 'Base weights’ dtype (LitGPT, torchtune)' },
  lm_head_chunks: { '': 'The stack’s choice', true: 'Yes, per chunk', false: 'No, once for all tokens' },
  longest_batch_first: { '': 'The stack’s choice', true: 'Yes: the first micro-batch', false: 'No: any step' },
  precision: { 'bf16-mixed': 'bf16 mixed (fp32 master weights)', '16-mixed': 'fp16 mixed (fp32 master weights)',
    '32-true': 'fp32', 'bf16-true': 'bf16 only (no fp32 copy)', '16-true': 'fp16 only (no fp32 copy)' },
  optimizer: { adamw: 'AdamW', 'adamw-8bit': 'AdamW 8-bit (bitsandbytes)', 'paged-adamw': 'Paged AdamW (bitsandbytes)',
    'paged-adamw-8bit': 'Paged AdamW 8-bit (bitsandbytes)', adafactor: 'Adafactor', lion: 'Lion',
    sgd: 'SGD', 'sgd-momentum': 'SGD with momentum' },
  optimizer_impl: { foreach: 'foreach (PyTorch default)', fused: 'fused', 'single-tensor': 'single tensor (for loop)' },
  finetune: { full: 'Full fine-tune', lora: 'LoRA', qlora: 'QLoRA (4-bit base weights)' },
  checkpointing: { none: 'None', selective: 'Selective (attention only)',
    'selective-op': 'Selective per op (torchtitan: every other matmul kept)', full: 'Full (every layer)' },
  attention: { eager: 'Eager (scores materialised)', flash: 'Flash / SDPA (no score matrix)' },
  strategy: { single: 'Single GPU', ddp: 'DDP (data parallel)', deepspeed: 'DeepSpeed ZeRO', fsdp: 'PyTorch FSDP',
    megatron: 'Megatron-LM (tensor/pipeline)' },
  offload: { none: 'Nothing', optimizer: 'Optimizer states to CPU', 'optimizer+params': 'Optimizer and parameters to CPU' },
  device: { cuda: 'CUDA (the GPU)', cpu: 'CPU kernels (validation)' },
  torch: { 2: 'PyTorch 2.x', '1.13': 'PyTorch 1.13' },
  fsdp_version: { 1: 'FSDP 1 (FullyShardedDataParallel)', 2: 'FSDP 2 (fully_shard)' },
  fsdp_wrap: { 'adapters-apart': 'LoRA adapters in their own units', layers: 'One unit per decoder layer' },
  'model.mlp': { swiglu: 'Gated (SwiGLU: gate, up, down)', geglu: 'Gated (GeGLU: gate, up, down)', gelu: 'Plain (up, down)' },
  'model.activation': { silu: 'SiLU', gelu: 'GELU (erf)', gelu_pytorch_tanh: 'GELU, tanh approximation',
    gelu_new: 'gelu_new (GPT-2)', gelu_fast: 'gelu_fast', quick_gelu: 'QuickGELU', gelu_accurate: 'gelu_accurate',
    relu: 'ReLU', relu2: 'ReLU²', gpt_oss_glu: 'gpt-oss clamped GLU', bloom_gelu: 'BLOOM GELU' },
  'model.norm': { rmsnorm: 'RMSNorm', layernorm: 'LayerNorm' },
  'model.position': { rope: 'RoPE', learned: 'Learned', alibi: 'ALiBi', none: 'None' },
};
const zeroLabel = (s) => (s.strategy === 'fsdp'
  ? { 0: '0 · NO_SHARD', 2: '2 · SHARD_GRAD_OP', 3: '3 · FULL_SHARD' }
  : s.strategy === 'megatron' ? { 0: '0 · off', 1: '1 · distributed optimizer' }
    : { 0: '0 · off', 1: '1 · optimizer states', 2: '2 · + gradients', 3: '3 · + parameters' });

const sharded = (s) => s.strategy === 'deepspeed' || s.strategy === 'fsdp';
const ARCH_LABELS = { layers: 'Layers', hidden: 'Hidden size', heads: 'Attention heads', kv_heads: 'KV heads',
  head_dim: 'Head dim (0: hidden / heads)', ffn: 'FFN size', vocab: 'Vocabulary', mlp: 'MLP', activation: 'Activation',
  norm: 'Norm',
  bias: 'Biases on projections', tied_embeddings: 'Tied embeddings', position: 'Positions',
  max_positions: 'Max positions', dropout: 'Dropout', experts: 'Experts (MoE)', experts_per_token: 'Experts per token',
  qkv_bias: 'q/k/v biases', lm_head_bias: 'LM head bias', norms_per_layer: 'Norms per layer' };
const isCustom = (s) => s.model === 'custom';

function archField(k) {
  const key = 'model.' + k;
  const kind = typeof DEFAULTS[key] === 'boolean' ? 'bool' : key in CHOICES ? 'select' : k === 'dropout' ? 'number' : 'int';
  return { key, label: ARCH_LABELS[k], kind, show: isCustom, sub: true };
}

const isLora = (s) => s.finetune !== 'full';
const isQlora = (s) => s.finetune === 'qlora';
const chunked = (s) => s.loss === 'chunked';
// Tensor, pipeline and context parallelism: Megatron-LM's, or FSDP 2 on a device mesh (torchtitan).
const meshed = (s) => s.strategy === 'megatron' || (s.strategy === 'fsdp' && s.fsdp_version === '2');
const fsdpTp = (s) => s.strategy === 'fsdp' && Number(s.tp) > 1;
const piped = (s) => Number(s.pp) > 1;
const GROUPS = [
  { title: 'Training stack', fields: [
    { key: 'framework', label: 'Framework', kind: 'select',
      hint: 'Whose training code runs the step: it sets precision, loss, LoRA adapter dtype and module names to that stack’s defaults; change any of them afterwards.' },
    { key: 'framework_version', label: 'Framework version', kind: 'text', maxlength: 32,
      hint: 'A release (0.2.1) or a date (2024-05-20): the stack’s code in force then, whose defaults it sets again. Empty: the current revision.' },
  ] },
  { title: 'Model', fields: [
    { key: 'model', label: 'Model', kind: 'model',
      hint: 'Type to search the presets and Hugging Face ids (Qwen/Qwen3-8B), or paste a huggingface.co link.' },
    { key: 'hf', label: 'Hugging Face config.json', kind: 'hf', show: (s) => s.model === 'hf',
      hint: 'Paste the model’s config.json; keys that never affect memory (token ids, RoPE settings, dtype…) stay out of the link.' },
    ...ARCH_KEYS.map(archField),
    { key: 'finetune', label: 'Fine-tuning', kind: 'select' },
    { key: 'rank', label: 'LoRA rank', kind: 'int', show: isLora },
    { key: 'targets', label: 'LoRA target modules', kind: 'targets', show: isLora },
    { key: 'lora_dropout', label: 'LoRA dropout', kind: 'number', show: isLora,
      hint: 'Above 0, each adapted layer also keeps its dropped input and a mask for backward.' },
    { key: 'adapter_dtype', label: 'Adapter dtype', kind: 'select', show: isLora,
      hint: 'The dtype of the LoRA weights, their gradients and inputs: fp32 doubles them under 16-bit training.' },
    { key: 'backend', label: '4-bit back end', kind: 'select', show: isQlora,
      hint: 'Whose 4-bit weights and matmul QLoRA runs: what its backward saves differs.' },
    { key: 'backend_version', label: 'Back end version', kind: 'text', maxlength: 32, show: isQlora,
      hint: 'The back end’s release (0.41.1). Empty: the current one.' },
  ] },
  { title: 'Batch', fields: [
    { key: 'seq_len', label: 'Sequence length (tokens)', kind: 'int' },
    { key: 'micro_batch', label: 'Micro-batch per GPU', kind: 'int' },
    { key: 'grad_accum', label: 'Gradient accumulation steps', kind: 'int',
      hint: 'Changes the global batch, not the memory.' },
    { key: 'longest_batch_first', label: 'Longest batch comes first', kind: 'tristate',
      hint: 'The loop runs the longest sample first (lit-gpt’s scripts, June 2023 to February 2024): the peak is that first micro-batch’s, with no gradients, optimizer states or previous step yet; later batches are taken as shorter.' },
  ] },
  { title: 'Precision & optimizer', fields: [
    { key: 'precision', label: 'Precision', kind: 'select' },
    { key: 'optimizer', label: 'Optimizer', kind: 'select' },
    { key: 'optimizer_impl', label: 'Optimizer implementation', kind: 'select' },
    { key: 'optimizer_in_backward', label: 'Optimizer step in backward', kind: 'bool',
      hint: 'Each gradient is applied and freed as backward produces it (torchtune’s optimizer_in_bwd): no full set of gradients.' },
    { key: 'torch', label: 'PyTorch version', kind: 'select' },
  ] },
  { title: 'Memory savers', fields: [
    { key: 'checkpointing', label: 'Activation checkpointing', kind: 'select' },
    { key: 'activation_offload', label: 'Offload activations to CPU', kind: 'bool',
      hint: 'Saved activations wait in pinned CPU RAM and come back ahead of their backward (torchtune); about two layers stay on the GPU.' },
    { key: 'attention', label: 'Attention kernel', kind: 'select' },
    { key: 'loss', label: 'Loss', kind: 'select',
      hint: 'How the loss meets the logits: whole with an fp32 copy, a chunk at a time, a kernel that reads the 16-bit logits (no fp32 copy), or fused with the output projection (no logits kept).' },
    { key: 'loss_chunks', label: 'Loss chunks', kind: 'int', show: chunked,
      hint: 'More chunks: smaller fp32 pieces of the logits alive at once. Empty: the stack’s own count.' },
    { key: 'lm_head_chunks', label: 'Output projection per chunk', kind: 'tristate', show: chunked,
      hint: 'Runs the output projection per chunk too (LitGPT’s LoRA script), so backward holds one chunk’s logit gradients.' },
    { key: 'offload', label: 'Offload to CPU', kind: 'select', show: sharded,
      hint: 'DeepSpeed ZeRO-Offload or FSDP CPU offload.' },
  ] },
  { title: 'Parallelism', fields: [
    { key: 'strategy', label: 'Strategy', kind: 'select' },
    { key: 'gpus', label: 'GPUs in all', kind: 'int', show: (s) => s.strategy !== 'single' },
    { key: 'zero', label: 'ZeRO stage / sharding', kind: 'zero', show: (s) => s.strategy !== 'single' && s.strategy !== 'ddp' },
    { key: 'fsdp_version', label: 'FSDP version', kind: 'select', show: (s) => s.strategy === 'fsdp' },
    { key: 'fsdp_wrap', label: 'FSDP units under LoRA', kind: 'select', show: (s) => s.strategy === 'fsdp' && s.finetune !== 'full',
      hint: 'Adapters in their own units (PEFT’s policy, as transformers’ Trainer sets it), or one unit per layer: FSDP 1 then keeps gradients and activations as for full fine-tuning.' },
    { key: 'tp', label: 'Tensor parallel (tp)', kind: 'int', show: meshed,
      hint: 'Megatron-LM, or FSDP 2 on a device mesh (torchtitan): GPUs must be a multiple of tp × pp × cp.' },
    { key: 'pp', label: 'Pipeline parallel (pp)', kind: 'int', show: meshed },
    { key: 'cp', label: 'Context parallel (cp)', kind: 'int', show: meshed,
      hint: 'Each GPU holds seq_len / cp tokens of every sequence; needs flash attention.' },
    { key: 'sequence_parallel', label: 'Sequence parallelism', kind: 'bool', show: (s) => s.strategy === 'megatron' || fsdpTp(s),
      hint: 'Norms and dropout on sequence shards (on by default with FSDP and tp > 1, as torchtitan runs it).' },
    { key: 'loss_parallel', label: 'Loss parallel', kind: 'bool', show: fsdpTp,
      hint: 'The logits stay sharded over the vocabulary for the loss (torchtitan).' },
    { key: 'pp_schedule', label: 'Pipeline schedule', kind: 'select', show: piped },
    { key: 'pp_stages_per_rank', label: 'Pipeline stages per GPU', kind: 'int', show: piped,
      hint: 'Above 1 with the interleaved schedule only (its default: 2).' },
  ] },
  { title: 'GPU', fields: [
    { key: 'gpu', label: 'GPU', kind: 'gpu' },
    { key: 'gpu.memory_gib', label: 'Memory (GiB)', kind: 'number', show: (s) => s.gpu === 'custom' },
    { key: 'gpu.name', label: 'Name', kind: 'text', show: (s) => s.gpu === 'custom' },
    { key: 'device', label: 'Kernels', kind: 'select' },
  ] },
];
const FIELDS = GROUPS.flatMap((g) => g.fields);
const FIELD = Object.fromEntries(FIELDS.map((f) => [f.key, f]));
const fid = (key) => 'f-' + key.replace(/\./g, '-');
const eid = (key) => 'e-' + key.replace(/\./g, '-');

const TERMS = {
  weights: ['Weights', 'The model’s parameters held on this GPU, in the training precision. Sharded by ZeRO-3 / FSDP FULL_SHARD, split by tensor and pipeline parallelism; 4-bit under QLoRA.'],
  gradients: ['Gradients', 'One gradient per trainable parameter, live from the backward pass until the optimizer step. Sharded from ZeRO-2; tiny with LoRA.'],
  optimizer_states: ['Optimizer states', 'AdamW keeps two fp32 moments per trainable parameter (m and v, 8 bytes); 8-bit AdamW about 2, SGD none. Sharded from ZeRO-1, moved to CPU by offload.'],
  master_weights: ['Master weights', 'An fp32 copy of 16-bit weights that the optimizer updates (DeepSpeed and Megatron mixed precision), so that small updates are not rounded away.'],
  activations: ['Activations', 'Tensors saved in the forward pass for the backward pass. Grows with micro-batch × sequence length; checkpointing and flash attention cut it.'],
  logits: ['Logits', 'The vocabulary-wide output of the last layer (and its fp32 copy for the loss): micro-batch × sequence × vocabulary.'],
  temporaries: ['Temporaries', 'Short-lived buffers at the peak moment: the gradient being produced, attention scores, the foreach optimizer’s scratch copies.'],
  allocator_overhead: ['Allocator overhead', 'Memory PyTorch’s caching allocator has reserved but is not using (fragmentation): reserved minus allocated.'],
  cuda_context: ['CUDA context', 'The CUDA context, cuBLAS/cuDNN workspaces and loaded kernels: taken before the first tensor.'],
};
const PHASES = {
  forward: 'Forward pass: activations are saved layer by layer for the backward pass.',
  loss: 'Forward done and the loss computed: every saved activation and the logits are live.',
  backward: 'Backward pass: gradients appear while saved activations are freed.',
  optimizer_step: 'Optimizer step: gradients, optimizer states and the update’s temporaries are live together.',
};

let mod;
let presets;
let catalog = [];
let state = initialState();
let embed = false;
let linkProblems = [];
let fieldErrors = new Map();
let lastResult = null;
const baseArch = {};  // preset id -> architecture

// ---------- the form ----------

function options(key) {
  const labels = LABELS[key] || {};
  return CHOICES[key].map((v) => [v, labels[v] || v]);
}

function buildControl(f) {
  const id = fid(f.key);
  const describedBy = `${eid(f.key)}${f.hint ? ' h-' + id : ''}`;
  const common = { id, name: f.key, 'aria-describedby': describedBy, dataset: { key: f.key } };
  switch (f.kind) {
    case 'select': return h('select', common, options(f.key).map(([v, t]) => h('option', { value: v }, t)));
    case 'tristate': return h('select', common, ['', 'true', 'false'].map((v) => h('option', { value: v }, LABELS[f.key][v])));
    case 'zero': return h('select', common);
    case 'model': {
      // A searchable field: the presets, the catalog's Hugging Face ids, and the two other ways to give a model.
      const list = h('datalist', { id: 'model-list' });
      for (const m of presets.models) list.append(h('option', { value: m.id }, `${m.name} · ${count(m.parameters)} · preset`));
      for (const m of catalog) {
        list.append(h('option', { value: m.id }, [m.model_type, m.parameters ? count(m.parameters) : ''].filter(Boolean).join(' · ')));
      }
      list.append(h('option', { value: 'custom' }, 'Custom architecture…'), h('option', { value: 'hf' }, 'Paste a Hugging Face config.json…'));
      const input = h('input', { ...common, type: 'text', list: 'model-list', autocomplete: 'off', spellcheck: 'false',
        autocapitalize: 'off', maxlength: 512, placeholder: 'e.g. Qwen/Qwen3-8B or llama-2-7b',
        onfocus: (e) => e.target.select() });
      const other = h('div', { class: 'model-other' },
        h('button', { type: 'button', class: 'small', dataset: { model: 'custom' }, onclick: () => pickModel('custom') }, 'Custom architecture'),
        h('button', { type: 'button', class: 'small', dataset: { model: 'hf' }, onclick: () => pickModel('hf') }, 'Paste config.json'));
      return h('div', { class: 'model-pick' }, input, list, other);
    }
    case 'gpu': {
      const sel = h('select', common);
      const list = [...presets.gpus].sort((a, b) => (b.id.startsWith('a100-') && !b.id.endsWith('pcie')) - (a.id.startsWith('a100-') && !a.id.endsWith('pcie')));
      for (const g of list) sel.append(h('option', { value: g.id }, `${g.name} · ${Math.round(g.memory_gib)} GiB usable`));
      sel.append(h('option', { value: 'custom' }, 'Custom GPU…'));
      return sel;
    }
    case 'bool': return h('input', { ...common, type: 'checkbox' });
    case 'hf': return h('textarea', { ...common, rows: 6, spellcheck: 'false', autocomplete: 'off',
      placeholder: '{"model_type": "llama", "hidden_size": 4096, ...}' });
    case 'targets': {
      return h('div', { id, class: 'targets', role: 'group', 'aria-describedby': describedBy, 'aria-label': f.label });
    }
    case 'text': return h('input', { ...common, type: 'text', maxlength: f.maxlength || 60, autocomplete: 'off', spellcheck: 'false' });
    case 'number': return h('input', { ...common, type: 'text', inputmode: 'decimal', autocomplete: 'off' });
    default: return h('input', { ...common, type: 'text', inputmode: 'numeric', autocomplete: 'off', spellcheck: 'false' });
  }
}

function buildForm() {
  const form = $('inputs');
  for (const g of GROUPS) {
    const fs = h('fieldset', { class: 'group' }, h('legend', {}, g.title));
    for (const f of g.fields) {
      const control = buildControl(f);
      const label = f.kind === 'targets' ? h('span', { class: 'label' }, f.label) : h('label', { for: fid(f.key) }, f.label);
      const row = h('div', { class: `field kind-${f.kind}${f.sub ? ' sub' : ''}`, id: 'row-' + fid(f.key) },
        f.kind === 'bool' ? h('label', { class: 'check', for: fid(f.key) }, control, h('span', {}, f.label)) : [label, control],
        f.hint ? h('p', { class: 'hint', id: 'h-' + fid(f.key) }, f.hint) : null,
        h('p', { class: 'field-error', id: eid(f.key) }));
      fs.append(row);
    }
    form.append(fs);
  }
  form.addEventListener('input', onInput);
  form.addEventListener('change', onInput);
  form.addEventListener('submit', (e) => e.preventDefault());
}

// What the user typed: integers and decimals as numbers, anything else as text for the core to report on.
function readValue(f, el) {
  if (f.kind === 'bool') return el.checked;
  if (f.kind === 'zero') return Number(el.value);
  if (f.kind === 'tristate') return el.value === '' ? '' : el.value === 'true';
  if (f.kind === 'int' || f.kind === 'number') {
    const t = el.value.trim();
    if (t === '') return f.key.startsWith('model.') ? '' : defaultOf(state, f.key);
    return /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) ? Number(t) : t;
  }
  return el.value;
}

let hfText = '';
let hfError = null;

function onInput(e) {
  const el = e.target;
  const key = el.dataset && el.dataset.key;
  if (!key) return;
  const f = FIELD[key];
  if (key === 'model') return onModelText(el.value, e.type);
  if (e.type === 'change' && (f.kind === 'int' || f.kind === 'number' || f.kind === 'hf' || f.kind === 'text')) return;
  if (key === 'targets') {
    state.targets = [...$(fid('targets')).querySelectorAll('input:checked')].map((c) => c.value).join(',');
  } else if (key === 'hf') {
    hfText = el.value;
    hfError = null;
    try {
      const obj = JSON.parse(hfText);
      if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('a JSON object is expected');
      state.hf = compactHf(obj);
      state.targets = fitTargets(state);
    } catch (err) {
      hfError = `not a JSON object: ${clip(err.message, 80)}`;
    }
  } else {
    const prev = { ...state };
    const before = state[key];
    const v = readValue(f, el);
    state[key] = v;
    if (key === 'strategy') normaliseStrategy(before, v);
    if (key === 'framework') state.framework_version = '';  // a version is the stack's own
    if (key === 'framework' || key === 'framework_version') {
      // The profile's precision, loss, adapter dtype ... (of the revision in force at that version).
      state = applyProfile(state);
    }
    if (key === 'framework') {
      // The targets in the new stack's names, role by role.
      const moved = translateTargets(state.targets, stackOf(before), stackOf(v));
      state.targets = fitTargets({ ...state, targets: moved || defaultOf(state, 'targets') });
    }
    if (key === 'loss' && v !== 'chunked') for (const k of CHUNK_KEYS) state[k] = DEFAULTS[k];
    // Fields that follow another unless set apart: kv_heads follows heads, the activation follows the MLP.
    if (key === 'model.heads' && state['model.kv_heads'] === before) syncOne('model.kv_heads', v);
    if (key === 'model.mlp' && state['model.activation'] === MLP_ACTIVATION[before]) syncOne('model.activation', MLP_ACTIVATION[v]);
    if (key === 'model.mlp') state.targets = fitTargets(state);
    if (['strategy', 'finetune', 'gpu', 'model.mlp', 'framework', 'framework_version', 'loss'].includes(key)) {
      state = follow(prev, state);
      return refresh(true);
    }
    // Fields whose default follows this one (sequence_parallel follows tp, the stages per GPU the schedule).
    const followed = follow(prev, state);
    for (const k of FOLLOWERS) if (followed[k] !== state[k]) syncOne(k, followed[k]);
  }
  refresh(false);
}

function syncOne(key, v) {
  state[key] = v;
  syncField(FIELD[key]);
}

// Of the LoRA targets the page offers, the modules each family has (core/families.cpp; routed experts take no
// adapters; DeepSeek's latent attention has q_a_proj, kv_a_proj_with_mqa ... instead of q/k/v). Llama's otherwise.
const LLAMA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const FAMILY_MODULES = {
  gpt2: ['c_attn', 'c_proj', 'c_fc'], starcoder2: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'c_fc', 'c_proj'],
  phi: ['q_proj', 'k_proj', 'v_proj'], phi3: ['o_proj', 'down_proj'], gptj: ['q_proj', 'k_proj', 'v_proj'],
  opt: ['q_proj', 'k_proj', 'v_proj'], exaone: ['q_proj', 'k_proj', 'v_proj', 'c_proj'], mpt: ['up_proj', 'down_proj'],
  gpt_neox: [], falcon: [], bloom: [], internlm2: [],
  deepseek_v2: ['o_proj', 'gate_proj', 'up_proj', 'down_proj'], deepseek_v3: ['o_proj', 'gate_proj', 'up_proj', 'down_proj'],
};
const catalogType = {};  // catalog id -> model_type

// Whose module names a role-by-role translation uses: a stack's, or transformers' Llama names.
const stackOf = (framework) => (Object.hasOwn(STACK_MODULES, framework) ? framework : 'hf');

function modelFamily(s) {
  if (ownModules(s.framework)) return s.framework;  // the stack's own model code
  if (s.model === 'custom') return 'llama';  // the explicit form has no family key: Llama's module names
  let type;
  if (s.model === 'hf') type = s.hf && (s.hf.text_config?.model_type || s.hf.model_type);
  else type = baseArch[s.model] ? baseArch[s.model].family : catalogType[s.model];
  return typeof type === 'string' && Object.hasOwn(FAMILY_MODULES, type) ? type : 'llama';
}

// Keeps the LoRA targets the model has (its projections and output projection), else its usual attention
// projections (all-linear when it has none of them).
function fitTargets(s) {
  const fam = modelFamily(s);
  const stack = ownModules(fam);
  let names = stack ? [...STACK_MODULES[fam]] : [...(fam === 'llama' ? LLAMA_MODULES : FAMILY_MODULES[fam]), 'lm_head'];
  if (s.model === 'custom' && s['model.mlp'] === 'gelu') {  // a plain MLP has no gate projection
    const gate = stack ? STACK_MODULES[fam][4] : 'gate_proj';
    if (gate !== (stack ? STACK_MODULES[fam][5] : 'up_proj')) names = names.filter((t) => t !== gate);
  }
  const kept = String(s.targets).split(',').filter((t) => t === 'all-linear' || names.includes(t));
  if (kept.length) return kept.join(',');
  if (stack) return defaultOf(s, 'targets');
  if (names.includes('q_proj') && names.includes('v_proj')) return 'q_proj,v_proj';
  return names.includes('c_attn') ? 'c_attn' : 'all-linear';
}

// The target chips: the names of the stack (or of transformers' families), rebuilt when the framework changes.
function syncTargets(el, v) {
  const offered = targetsOffered(state.framework);
  const on = new Set(String(v).split(','));
  const extra = [...on].filter((t) => t && !offered.includes(t));  // e.g. from a link: shown so they can be unticked
  const want = [...offered.filter((t) => t !== 'all-linear'), ...extra, 'all-linear'];
  const have = [...el.querySelectorAll('input')].map((c) => c.value);
  if (have.join(',') !== want.join(',')) {
    clear(el);
    for (const t of want) el.append(h('label', { class: 'chip' }, h('input', { type: 'checkbox', value: t, dataset: { key: 'targets' } }), t));
  }
  for (const c of el.querySelectorAll('input')) c.checked = on.has(c.value);
}

// ---------- the model field ----------

let modelText = null;   // what the model field holds when it names no model (else it shows state.model)
let modelError = null;
let modelIds = [];      // presets, then the catalog

function unknownModel(text) {
  const near = closeModels(text, modelIds);
  return `“${clip(text.trim(), 60)}” is not a preset or a model of the catalog.` +
    (near.length ? ` Did you mean ${near.join(', ')}?` : '') +
    ' For another model, choose “Paste config.json” and paste its config.json.';
}

// The model field: an id or hub URL selects its model as soon as it matches; anything else is reported next to
// the field (on every keystroke, like the other fields) until it does. Cleared and left, it shows the model again.
function onModelText(text, type) {
  const t = text.trim();
  const id = t === 'custom' || t === 'hf' ? t : resolveModel(t, modelIds);
  if (id) {
    modelText = null;
    modelError = null;
    if (id !== state.model) return selectModel(id);
    if (type === 'change' || text !== id) return refresh(true);  // shows the id for a pasted URL
    return refresh(false);
  }
  if (!t) {
    modelText = type === 'change' ? null : text;
    modelError = null;
    return refresh(type === 'change');
  }
  modelText = text;
  modelError = unknownModel(t);
  refresh(false);
}

function pickModel(v) {
  modelText = null;
  modelError = null;
  selectModel(v);
}

// What a switch to the explicit form keeps of the model: the dense shape of a preset (sizes, MLP, norm, positions,
// biases). Never its experts (nor dropout): a MoE preset becomes one dense model with an expert's FFN width. A catalog
// model or a pasted config starts from the Llama-style defaults.
const SHAPE_KEYS = ARCH_KEYS.filter((k) => !['experts', 'experts_per_token', 'dropout'].includes(k));

function selectModel(v) {
  if (v === 'custom' && state.model !== 'custom') {
    const arch = baseArch[state.model] || {};
    for (const k of ARCH_KEYS) state['model.' + k] = DEFAULTS['model.' + k];
    for (const k of SHAPE_KEYS) {
      const a = arch[k];
      const ok = typeof a === typeof DEFAULTS['model.' + k] && (!CHOICES['model.' + k] || CHOICES['model.' + k].includes(a));
      if (ok) state['model.' + k] = a;
    }
    if (arch.kv_heads === undefined) state['model.kv_heads'] = state['model.heads'];
    if (arch.activation === undefined || !CHOICES['model.activation'].includes(arch.activation))
      state['model.activation'] = defaultOf(state, 'model.activation');
  }
  if (v === 'hf' && !state.hf) state.hf = null;
  state.model = v;
  state.targets = fitTargets(state);
  refresh(true);
  if (v === 'hf') $(fid('hf')).focus();
}

// Switching strategy resets the settings the new one does not take.
function normaliseStrategy(before, after) {
  if (after === 'single') state.gpus = 1;
  if (state.zero === defaultZero(before) || after === 'single' || after === 'ddp') state.zero = defaultZero(after);
  if (after === 'fsdp' && state.zero === 1) state.zero = 2;
  if (after === 'megatron' && state.zero > 1) state.zero = 0;
  if (!meshed(state)) {
    for (const k of ['tp', 'pp', 'cp', 'loss_parallel', 'pp_schedule']) state[k] = DEFAULTS[k];
    for (const k of FOLLOWERS) state[k] = defaultOf(state, k);
  }
  if (!sharded(state)) state.offload = 'none';
  if (after === 'fsdp' && state.offload === 'optimizer') state.offload = 'optimizer+params';
}

// Puts the state into every control (after a link, a suggestion, or a change that resets others).
function syncInputs() {
  const zs = $(fid('zero'));
  clear(zs);
  const zl = zeroLabel(state);
  for (const [v, t] of Object.entries(zl)) zs.append(h('option', { value: v }, t));
  if (!(state.zero in zl)) zs.append(h('option', { value: state.zero }, String(state.zero)));
  for (const f of FIELDS) syncField(f);
}

function syncField(f) {
  const el = $(fid(f.key));
  const v = state[f.key];
  if (f.kind === 'bool') el.checked = !!v;
  else if (f.kind === 'targets') syncTargets(el, v);
  else if (f.kind === 'tristate') el.value = v === '' || v === undefined ? '' : String(v);
  else if (f.kind === 'hf') {
    if (document.activeElement !== el) el.value = hfText || (state.hf ? JSON.stringify(state.hf, null, 2) : '');
  } else if (f.kind === 'model') {
    el.value = modelText !== null ? modelText : v;
  } else {
    const t = v === null || v === undefined ? '' : String(v);
    if (el.value !== t) el.value = t;  // the field being typed in keeps its caret
  }
}

function fieldVisible(f) {
  if (fieldErrors.has(f.key)) return true;
  if (f.show && !f.show(state)) {
    if (f.key.startsWith('model.') || f.key === 'hf' || f.key.startsWith('gpu.') || LORA_KEYS.includes(f.key) ||
      CHUNK_KEYS.includes(f.key) || QLORA_KEYS.includes(f.key)) return false;
    return state[f.key] !== defaultOf(state, f.key);
  }
  return true;
}

// ---------- errors ----------

// The form field an error from the core belongs to.
function errorKey(field) {
  if (field.startsWith('model.hf_config')) return 'hf';
  if (field.startsWith('model.')) return isCustom(state) && FIELD[field] ? field : 'model';
  if (field === 'finetune.rank') return 'rank';
  if (field === 'finetune.targets') return 'targets';
  if (field === 'finetune.dropout') return 'lora_dropout';
  if (field === 'finetune.backend') return 'backend';
  if (field === 'finetune.backend_version') return 'backend_version';
  if (field.startsWith('finetune')) return 'finetune';
  if (field.startsWith('gpu.')) return FIELD[field] ? field : 'gpu';
  return FIELD[field] ? field : '';
}

function showFieldErrors(errors) {
  fieldErrors = new Map();
  const general = [];
  if (hfError && state.model === 'hf') fieldErrors.set('hf', [hfError]);
  if (modelError) fieldErrors.set('model', [modelError]);
  for (const e of errors) {
    const key = errorKey(String(e.field));
    const msg = (key === String(e.field) || !e.field ? '' : `${e.field}: `) + e.message;
    if (key) fieldErrors.set(key, [...(fieldErrors.get(key) || []), msg]);
    else general.push(msg);
  }
  for (const f of FIELDS) {
    const el = $(fid(f.key));
    const list = fieldErrors.get(f.key);
    $(eid(f.key)).textContent = list ? list.join(' · ') : '';
    if (list) el.setAttribute('aria-invalid', 'true');
    else el.removeAttribute('aria-invalid');
    $('row-' + fid(f.key)).classList.toggle('invalid', !!list);
  }
  const box = clear($('errors'));
  box.hidden = errors.length === 0 && !fieldErrors.size;
  if (!box.hidden) {
    box.append(h('p', { class: 'box-title' }, 'This configuration is not valid:'));
    const ul = h('ul');
    for (const [key, msgs] of fieldErrors) {
      const label = FIELD[key].label;
      ul.append(h('li', {}, h('button', { type: 'button', class: 'linklike', onclick: () => $(fid(key)).focus() }, label), `: ${msgs.join(' · ')}`));
    }
    for (const m of general) ul.append(h('li', {}, m));
    box.append(ul);
  }
}

function showLinkProblems() {
  const box = clear($('link-problems'));
  box.hidden = linkProblems.length === 0;
  if (box.hidden) return;
  box.append(h('p', { class: 'box-title' }, 'Some settings in this link were ignored:'));
  const ul = h('ul');
  for (const p of linkProblems) ul.append(h('li', {}, p.param ? h('code', {}, p.param) : null, p.param ? ' ' : '', p.message));
  box.append(ul, h('button', { type: 'button', class: 'small', onclick: () => { linkProblems = []; showLinkProblems(); } }, 'Dismiss'));
}

// ---------- the answer ----------

function renderAnswer(r) {
  const fits = r.fits;
  const badge = $('fits');
  badge.dataset.fits = String(fits);
  badge.textContent = fits ? 'Fits' : 'Does not fit';
  const total = $('total');
  total.dataset.bytes = String(r.total_bytes);
  total.textContent = gib(r.total_bytes);
  $('capacity').textContent = gib(r.gpu.capacity_bytes);
  $('gpu-name').textContent = r.gpu.name;
  const head = r.headroom_bytes;
  $('headroom').textContent = head >= 0 ? `${gib(head)} free` : `${gib(-head)} over`;
  $('headroom').className = 'fig-value ' + (head >= 0 ? 'ok' : 'bad');
  $('max-mb').textContent = r.max_micro_batch === 0 ? 'none (not even 1)' : String(r.max_micro_batch);
  $('peak-phase').textContent = r.peak_phase.replace('_', ' ');
  const pct = Math.round((r.total_bytes / r.gpu.capacity_bytes) * 100);
  $('verdict-text').textContent = fits
    ? `${gib(r.total_bytes)} of ${gib(r.gpu.capacity_bytes)} per GPU (${pct}%).`
    : `Needs ${gib(r.total_bytes)} per GPU, ${pct}% of the ${gib(r.gpu.capacity_bytes)} available.`;
  $('params').textContent = `${count(r.parameters.total)} parameters, ${count(r.parameters.trainable)} trainable`
    + (r.cpu_bytes ? ` · ${gib(r.cpu_bytes)} of CPU RAM for offloaded states` : '')
    + ` · peak allocated ${gib(r.peak_allocated_bytes)}, reserved ${gib(r.peak_reserved_bytes)}`;
  const w = clear($('warnings'));
  for (const t of r.warnings) w.append(h('li', {}, t));
  w.hidden = r.warnings.length === 0;
  $('embed-summary').textContent = summaryLine(r);
  renderBar(r);
  renderPhases(r);
}

function summaryLine(r) {
  const model = state.model === 'custom' ? 'Custom model' : state.model === 'hf' ? `${clip(state.hf?.model_type || 'HF')} config`
    : (presets.models.find((m) => m.id === state.model) || {}).name || state.model;
  const par = state.strategy === 'single' ? '1 GPU' : `${state.gpus} GPUs, ${LABELS.strategy[state.strategy]}${state.zero ? ` stage ${state.zero}` : ''}`;
  const version = state.framework_version ? ` ${clip(state.framework_version, 32)}` : '';
  const stack = state.framework === 'hf' && !version ? '' : ` · ${LABELS.framework[state.framework]}${version}`;
  return `${model} · ${r.gpu.name} · ${par} · micro-batch ${state.micro_batch} × ${state.seq_len} tokens · ${state.precision}${stack}`;
}

function showTerm(key, bytes, total) {
  const [name, text] = TERMS[key];
  const d = clear($('term-detail'));
  d.append(h('strong', {}, `${name}: ${gib(bytes)} (${((bytes / total) * 100).toFixed(1)}%). `), text);
  for (const el of document.querySelectorAll('[data-term]')) el.classList.toggle('active', el.dataset.term === key);
}

function renderBar(r) {
  const terms = Object.keys(TERMS).filter((k) => r.per_gpu_bytes[k] > 0);
  const scale = Math.max(r.total_bytes, r.gpu.capacity_bytes);
  const bar = clear($('bar'));
  for (const k of terms) {
    const b = r.per_gpu_bytes[k];
    const seg = h('div', { class: `seg t-${k}`, dataset: { term: k }, title: `${TERMS[k][0]}: ${gib(b)}` });
    seg.style.width = `${(b / scale) * 100}%`;
    seg.addEventListener('mouseenter', () => showTerm(k, b, r.total_bytes));
    bar.append(seg);
  }
  const cap = h('div', { class: 'cap-marker', title: `capacity ${gib(r.gpu.capacity_bytes)}` }, h('span', {}, 'capacity'));
  cap.style.left = `${(r.gpu.capacity_bytes / scale) * 100}%`;
  bar.append(cap);
  bar.setAttribute('aria-label', `Breakdown of ${gib(r.total_bytes)}: ` + terms.map((k) => `${TERMS[k][0]} ${gib(r.per_gpu_bytes[k])}`).join(', '));
  const legend = clear($('legend'));
  for (const k of terms) {
    const b = r.per_gpu_bytes[k];
    const item = h('li', {}, h('button', { type: 'button', class: 'term', dataset: { term: k },
      'aria-describedby': 'term-detail',
      onfocus: () => showTerm(k, b, r.total_bytes), onmouseenter: () => showTerm(k, b, r.total_bytes),
      onclick: () => showTerm(k, b, r.total_bytes) },
    h('span', { class: `swatch t-${k}`, 'aria-hidden': 'true' }), h('span', { class: 'term-name' }, TERMS[k][0]),
    h('span', { class: 'term-val' }, gib(b))));
    legend.append(item);
  }
  const d = clear($('term-detail'));
  d.append('Hover or focus a term to see what it is and what shrinks it.');
}

function renderPhases(r) {
  const body = clear($('phases'));
  const max = Math.max(...r.phases.map((p) => p.allocated_bytes));
  for (const p of r.phases) {
    const peak = p.name === r.peak_phase;
    const bar = h('span', { class: 'mini' }, h('span', { class: peak ? 'fill peak' : 'fill' }));
    bar.firstChild.style.width = `${(p.allocated_bytes / max) * 100}%`;
    body.append(h('tr', { class: peak ? 'peak' : '' },
      h('th', { scope: 'row' }, p.name.replace('_', ' '), peak ? h('span', { class: 'tag' }, 'peak') : null),
      h('td', { class: 'num' }, gib(p.allocated_bytes)), h('td', { class: 'bar-cell' }, bar),
      h('td', { class: 'desc' }, PHASES[p.name] || '')));
  }
}

function renderSuggestions(r) {
  const list = clear($('suggestions'));
  if (!r.suggestions.length) list.append(h('li', { class: 'empty' }, 'No change to suggest.'));
  for (const sgt of r.suggestions) {
    list.append(h('li', {}, h('button', { type: 'button', class: 'suggest', onclick: () => applySuggestion(sgt) },
      h('span', { class: 'change' }, sgt.change),
      h('span', { class: `result ${sgt.fits ? 'ok' : 'bad'}` }, `→ ${gib(sgt.total_bytes)} · ${sgt.fits ? 'fits' : 'does not fit'}`)),
    h('p', { class: 'why' }, sgt.why)));
  }
}

function applySuggestion(sgt) {
  const prev = { ...state };
  const before = state.strategy;
  state = applyPatch(state, sgt.config);
  if (sgt.config && 'strategy' in sgt.config && !('zero' in sgt.config) && state.zero === defaultZero(before)) state.zero = defaultZero(state.strategy);
  state = follow(prev, state);
  refresh(true);
  $('verdict').focus();
}

const MB_AXIS = [1, 2, 4, 8, 16, 32, 64, 128];
const SEQ_AXIS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768];
function axisWith(axis, v, max) {
  const out = new Set(axis);
  if (Number.isInteger(v) && v >= 1 && v <= max) out.add(v);
  return [...out].sort((a, b) => a - b);
}

function renderCharts(config) {
  const mbs = axisWith(MB_AXIS, state.micro_batch, 2 ** 20);
  const seqs = axisWith(SEQ_AXIS, state.seq_len, 2 ** 24);
  // One row and one column of the grid: memory against micro-batch at this length, and against length at this batch.
  const byMb = JSON.parse(mod.sweep(JSON.stringify({ config, micro_batch: mbs })));
  const bySeq = JSON.parse(mod.sweep(JSON.stringify({ config, seq_len: seqs })));
  const a = clear($('chart-mb'));
  const b = clear($('chart-seq'));
  if (byMb.errors || bySeq.errors) return;
  a.append(lineChart({ xs: byMb.micro_batch, ys: byMb.total_bytes[0], capacity: byMb.capacity_bytes, current: state.micro_batch,
    xLabel: 'micro-batch', title: `Memory per GPU against micro-batch at ${state.seq_len} tokens`,
    onPick: (v) => { state.micro_batch = v; refresh(true); } }));
  b.append(lineChart({ xs: bySeq.seq_len, ys: bySeq.total_bytes.map((row) => row[0]), capacity: bySeq.capacity_bytes,
    current: state.seq_len, xLabel: 'sequence length', title: `Memory per GPU against sequence length at micro-batch ${state.micro_batch}`,
    onPick: (v) => { state.seq_len = v; refresh(true); } }));
}

// ---------- share links ----------

function shareQuery(extra) { return toQuery(state, extra); }
function pageUrl(extra = {}) {
  const u = new URL(location.href);
  u.search = shareQuery(extra);
  u.hash = '';
  return u.toString();
}

function updateUrl() {
  const q = shareQuery(embed ? { embed: 1 } : {});
  if (location.search.slice(1) !== q) history.replaceState(null, '', `${location.pathname}?${q}`);
  $('share-url').value = pageUrl();
  $('open-full').href = `${location.pathname}?${shareQuery()}`;
}

function embedCode() {
  const esc = (t) => t.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return `<iframe src="${esc(pageUrl({ embed: 1 }))}" title="vramcalc: GPU memory estimate" width="100%" height="420" loading="lazy" style="border:0"></iframe>`;
}

async function copy(text, inputId, what) {
  const status = $('copy-status');
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = `${what} copied.`;
  } catch {
    const el = $(inputId);
    if (el.select) {
      el.focus();
      el.select();
    } else {
      const range = document.createRange();
      range.selectNodeContents(el);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
    status.textContent = `${what} selected: press Ctrl+C (⌘C) to copy.`;
  }
}

// ---------- the update loop ----------

let pending = 0;
let syncNext = false;
function refresh(sync) {
  syncNext = syncNext || sync;
  if (!pending) pending = requestAnimationFrame(() => { pending = 0; const s = syncNext; syncNext = false; update(s); });
}

function update(sync) {
  const t0 = performance.now();
  if (sync) syncInputs();
  const config = toConfig(state);
  const text = JSON.stringify(config);
  const r = JSON.parse(mod.estimate(text));
  const errors = r.errors || [];
  showFieldErrors(errors);
  const results = $('results');
  if (!r.errors && !(hfError && state.model === 'hf') && !modelError) {
    lastResult = r;
    results.classList.remove('stale');
    renderAnswer(r);
    showStackChoices(r.config);
    const rest = () => {
      renderSuggestions(r);
      renderCharts(config);
      const ds = JSON.parse(mod.deepspeedConfig(text));
      $('deepspeed').textContent = JSON.stringify(ds, null, 2);
      $('config-json').textContent = JSON.stringify(config, null, 2);
    };
    // On the first load the answer is painted first; the details follow in the next task.
    if (document.body.dataset.ready === 'true') rest();
    else setTimeout(rest, 0);
  } else {
    results.classList.add('stale');
    const total = $('total');
    delete total.dataset.bytes;
    $('fits').dataset.fits = 'invalid';
    $('fits').textContent = 'Invalid';
    $('verdict-text').textContent = 'Fix the highlighted settings; the figures below are from the last valid configuration.';
  }
  for (const f of FIELDS) $('row-' + fid(f.key)).hidden = !fieldVisible(f);
  updateUrl();
  performance.measure('vramcalc:update', { start: t0 });
  if (!document.body.dataset.details) setTimeout(() => { document.body.dataset.details = 'true'; }, 0);
  if (document.body.dataset.ready !== 'true') {
    document.body.dataset.ready = 'true';
    performance.mark('vramcalc:first-estimate');
  }
}

// The values the stack chose for the knobs left to it, next to them (the placeholder, the first option).
function showStackChoices(config) {
  const v = config && config.framework_version;
  $(fid('framework_version')).placeholder = typeof v === 'string' && !state.framework_version ? `${clip(v, 32)} (the current)` : '';
  const n = config && config.loss_chunks;
  $(fid('loss_chunks')).placeholder = Number.isInteger(n) ? `${n} (the stack’s)` : '';
  for (const key of ['lm_head_chunks', 'longest_batch_first']) {
    const first = $(fid(key)).options[0];
    if (config && typeof config[key] === 'boolean') first.textContent = `${LABELS[key]['']}: ${config[key] ? 'yes' : 'no'}`;
  }
}

// ---------- start ----------

async function main() {
  performance.mark('vramcalc:app-start');
  mod = await createVramcalc();
  performance.mark('vramcalc:wasm-ready');
  presets = JSON.parse(mod.presets());
  readProfiles((text) => mod.estimate(text));  // each framework's defaults, as the core sets them
  catalog = Array.isArray(presets.catalog) ? presets.catalog : [];
  for (const m of presets.models) baseArch[m.id] = m.architecture;
  for (const m of catalog) catalogType[m.id] = m.model_type;
  modelIds = [...presets.models.map((m) => m.id), ...catalog.map((m) => m.id)];
  const parsed = fromQuery(location.search, { models: modelIds, gpus: presets.gpus.map((g) => g.id) });
  state = parsed.state;
  // A link without targets gets the model's own modules (GPT-2's c_attn, all-linear for fused q/k/v ...).
  if (state.targets === defaultOf(state, 'targets')) state.targets = fitTargets(state);
  embed = parsed.embed;
  linkProblems = parsed.problems;
  document.body.classList.toggle('embed', embed);
  buildForm();
  showLinkProblems();
  $('copy-link').addEventListener('click', () => copy($('share-url').value, 'share-url', 'Link'));
  $('copy-embed').addEventListener('click', () => {
    const code = embedCode();
    $('embed-code').value = code;
    $('embed-box').hidden = false;
    copy(code, 'embed-code', 'Embed code');
  });
  $('copy-ds').addEventListener('click', () => copy($('deepspeed').textContent, 'deepspeed', 'DeepSpeed config'));
  $('copy-config').addEventListener('click', () => copy($('config-json').textContent, 'config-json', 'Configuration'));
  update(true);
  setTimeout(() => initAdamw(mod), 0);
}

main().catch((err) => {
  const box = $('errors');
  box.hidden = false;
  box.textContent = `The calculator could not start: ${clip(err && err.message ? err.message : err, 200)}`;
});
