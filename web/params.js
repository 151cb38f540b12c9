// The page's state as flat, readable fields, and share links: state <-> query parameters <-> core configuration.
// Pure functions, no DOM: the page and the tests share them. Every value read from a link is checked here against
// the same lists and bounds as core/setup/config_json.cpp; anything else is reported and ignored, never shown as markup.

import { resolveModel, closeModels } from './names.js';
import { compactHf, fromBase64Url, toBase64Url } from './hfjson.js';

export { modelIdOf, resolveModel, closeModels } from './names.js';
export { HF_DROP, hfKeyDropped, compactHf, toBase64Url, fromBase64Url } from './hfjson.js';

export const CHOICES = {
  framework: ['hf', 'torchtune', 'torchtitan', 'litgpt'],
  method: ['sft', 'dpo', 'ipo', 'kto', 'orpo', 'simpo', 'grpo', 'rloo', 'distill', 'ppo'],
  teacher_dtype: ['bf16', 'fp16', 'fp32'],
  reward_dtype: ['default', 'bf16', 'fp16', 'fp32'],
  divergence: ['reverse-kl', 'forward-kl', 'jsd'],
  vllm: ['none', 'colocate', 'server'],
  reference: ['default', 'model', 'base-without-adapters', 'precomputed', 'none'],
  precision: ['bf16-mixed', '16-mixed', '32-true', 'bf16-true', '16-true', 'bf16-base-mixed', '16-base-mixed', 'fp8'],
  fp8_recipe: ['torchao-tensorwise', 'torchao-rowwise', 'te-delayed', 'te-current'],
  optimizer: ['adamw', 'adamw-8bit', 'paged-adamw', 'paged-adamw-8bit', 'adafactor', 'lion', 'sgd', 'sgd-momentum'],
  optimizer_impl: ['foreach', 'fused', 'single-tensor'],
  finetune: ['full', 'lora', 'qlora'],
  checkpointing: ['none', 'selective', 'selective-op', 'full'],
  attention: ['eager', 'flash'],
  strategy: ['single', 'ddp', 'deepspeed', 'fsdp', 'megatron'],
  offload: ['none', 'optimizer', 'optimizer+params'],
  device: ['cuda', 'cpu'],
  torch: ['2', '1.13'],
  loss: ['full', 'chunked', 'fused', 'fused-linear'],
  pp_schedule: ['1f1b', 'gpipe', 'interleaved-1f1b'],
  backend: ['bitsandbytes', 'torchao'],
  adapter_dtype: ['fp32', 'base'],
  fsdp_version: ['1', '2'],
  fsdp_wrap: ['adapters-apart', 'layers'],
  'model.mlp': ['swiglu', 'geglu', 'gelu'],
  'model.activation': ['silu', 'gelu', 'gelu_pytorch_tanh', 'gelu_new', 'gelu_fast', 'quick_gelu', 'gelu_accurate',
    'relu', 'relu2', 'gpt_oss_glu', 'bloom_gelu'],
  'model.norm': ['rmsnorm', 'layernorm'],
  'model.position': ['rope', 'learned', 'alibi', 'none'],
};
// The activation an explicit architecture gets when it names none (core/setup/config_json.cpp).
export const MLP_ACTIVATION = { swiglu: 'silu', geglu: 'gelu_pytorch_tanh', gelu: 'gelu' };

export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj',
  'c_attn', 'c_proj', 'c_fc', 'lm_head', 'all-linear'];

// The module names of each training stack's own model code, by role: q, k, v, o, gate, up, down, the output
// projection (core/model/families.cpp, rows "llama", "torchtune", "torchtitan" and "litgpt"; a framework profile selects
// its row for every model, core/setup/frameworks.cpp). LitGPT's LLaMAMLP is one "mlp" target for its three projections. The page
// test checks these lists against the core's own error message.
export const STACK_MODULES = {
  hf: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj', 'lm_head'],
  torchtune: ['q_proj', 'k_proj', 'v_proj', 'output_proj', 'w1', 'w3', 'w2', 'output'],
  torchtitan: ['wq', 'wk', 'wv', 'wo', 'w1', 'w3', 'w2', 'output'],
  litgpt: ['query', 'key', 'value', 'projection', 'mlp', 'mlp', 'mlp', 'head'],
};
// Whether a framework runs its own model code (its module names for every model) rather than transformers'.
export const ownModules = (framework) => framework !== 'hf' && Object.hasOwn(STACK_MODULES, framework);
// The LoRA targets the page offers under a framework (hf: the Hugging Face families' names).
export const targetsOffered = (framework) => (ownModules(framework)
  ? [...new Set(STACK_MODULES[framework]), 'all-linear'] : LORA_TARGETS);
const ALL_TARGETS = new Set([...LORA_TARGETS, ...Object.keys(STACK_MODULES).flatMap(targetsOffered)]);
// Each stack's usual first choice: the query and value projections (PEFT's and torchtune's examples, LitGPT's
// lora_query and lora_value).
const STACK_DEFAULT_TARGETS = { torchtune: 'q_proj,v_proj', torchtitan: 'wq,wv', litgpt: 'query,value' };

// Targets from one stack's names to another's, role by role (LitGPT's "mlp" stands for gate, up and down).
export function translateTargets(targets, from, to) {
  const a = STACK_MODULES[from];
  const b = STACK_MODULES[to];
  if (!a || !b || from === to) return targets;
  const out = [];
  for (const t of String(targets).split(',')) {
    if (t === 'all-linear') out.push(t);
    a.forEach((name, i) => { if (name === t) out.push(b[i]); });
  }
  return [...new Set(out)].join(',');
}

// Bounds from core/setup/config_json.cpp.
const W = 2 ** 20;
export const INTS = {
  seq_len: [1, 2 ** 24], micro_batch: [1, 2 ** 20], grad_accum: [1, 2 ** 20], gpus: [1, 2 ** 20], zero: [0, 3],
  tp: [1, 1024], pp: [1, 1024], cp: [1, 1024], pp_stages_per_rank: [1, 64], rank: [1, 65536], loss_chunks: [1, 2 ** 24],
  'model.layers': [1, 100000], 'model.hidden': [1, W], 'model.heads': [1, W], 'model.kv_heads': [1, W],
  'model.head_dim': [1, W], 'model.ffn': [1, 4 * W], 'model.vocab': [1, 2 ** 24], 'model.max_positions': [1, 2 ** 24],
  'model.experts': [1, 4096], 'model.experts_per_token': [1, 4096], 'model.norms_per_layer': [1, 4],
  gpus_per_node: [1, 1024], prompt_len: [1, 2 ** 24], completion_len: [1, 2 ** 24], num_generations: [1, 2 ** 20],
  steps_per_generation: [0, 2 ** 20], num_iterations: [1, 2 ** 20], rollout_forward_batch: [1, 2 ** 20],
  num_mini_batches: [1, 2 ** 20],
};
// Non-negative numbers of the run and its cost (0: not given).
export const NUMBERS = { inter_node_gbps: [0, 1e6], train_tokens: [0, 1e18], epochs: [0, 1e6], dataset_tokens: [0, 1e18],
  price_per_gpu_hour: [0, 1e6], vllm_share: [0, 0.95] };
export const RUN_KEYS = ['gpus_per_node', ...Object.keys(NUMBERS).filter((k) => k !== 'vllm_share')];
// TRL's trainers (core/setup/method_json.cpp): their keys, each sent only with the methods that take it (toConfig).
export const METHOD_KEYS = ['reference', 'prompt_len', 'completion_len', 'num_generations', 'vllm', 'vllm_share', 'vllm_sleep',
  'steps_per_generation', 'num_iterations', 'teacher', 'teacher_dtype', 'divergence', 'rollout_forward_batch', 'num_mini_batches',
  'value_model', 'reward_model', 'reward_dtype'];
// The trainers that take reference log-probabilities (core/setup/training_methods.cpp).
export const REFERENCE_METHODS = ['dpo', 'ipo', 'kto', 'grpo', 'rloo', 'ppo'];
// Keys that name a model of the catalog (a preset or a Hugging Face id), read from a link like `model`.
const MODEL_KEYS = ['teacher', 'value_model', 'reward_model'];
export const BOOLS = ['vllm_sleep', 'sequence_parallel', 'loss_parallel', 'optimizer_in_backward', 'activation_offload', 'lm_head_chunks',
  'longest_batch_first', 'model.bias', 'model.tied_embeddings', 'model.qkv_bias', 'model.lm_head_bias'];

// An explicit architecture: the form's keys (the common ones; the core takes more) and core/model/architecture.hpp's
// defaults (kv_heads defaults to heads, activation to the MLP's usual one).
export const ARCH_KEYS = ['layers', 'hidden', 'heads', 'kv_heads', 'head_dim', 'ffn', 'vocab', 'mlp', 'activation', 'norm', 'bias',
  'tied_embeddings', 'position', 'max_positions', 'dropout', 'experts', 'experts_per_token', 'qkv_bias',
  'lm_head_bias', 'norms_per_layer'];
export const ARCH_REQUIRED = ['layers', 'hidden', 'heads', 'ffn', 'vocab'];
export const ARCH_DEFAULTS = {
  layers: 32, hidden: 4096, heads: 32, kv_heads: 32, head_dim: 0, ffn: 11008, vocab: 32000, mlp: 'swiglu',
  activation: 'silu', norm: 'rmsnorm', bias: false, tied_embeddings: false, position: 'rope', max_positions: 4096, dropout: 0,
  experts: 1, experts_per_token: 1, qkv_bias: false, lm_head_bias: false, norms_per_layer: 2,
};

// The page's fields with the core's defaults (core/setup/config.hpp). "model" is a preset id, a Hugging Face id of the
// catalog, "custom" or "hf". loss_chunks, lm_head_chunks and longest_batch_first hold '' for the framework's own choice (LitGPT's depend
// on the tokens and the fine-tuning method), else what the user set; framework_version and backend_version '' for
// the current revision. sequence_parallel and pp_stages_per_rank hold a value, whose default follows other fields
// (defaultOf, FOLLOWERS).
export const DEFAULTS = {
  framework: 'hf', framework_version: '', model: 'llama-2-7b', hf: null, seq_len: 2048, micro_batch: 1, grad_accum: 1, precision: 'bf16-mixed',
  optimizer: 'adamw', optimizer_impl: 'foreach', finetune: 'full', rank: 8, targets: 'q_proj,v_proj', lora_dropout: 0,
  adapter_dtype: 'fp32', checkpointing: 'none', attention: 'flash', strategy: 'single', gpus: 1, zero: 0, tp: 1, pp: 1,
  sequence_parallel: false, offload: 'none', gpu: 'a100-80gb', 'gpu.memory_gib': 80, 'gpu.name': 'Custom GPU',
  device: 'cuda', torch: '2', loss: 'full', loss_chunks: '', lm_head_chunks: '', optimizer_in_backward: false,
  activation_offload: false, fsdp_version: '2', fsdp_wrap: 'adapters-apart', cp: 1, loss_parallel: true,
  pp_schedule: '1f1b', pp_stages_per_rank: 1, backend: 'bitsandbytes', backend_version: '', longest_batch_first: '',
  gpus_per_node: 8, inter_node_gbps: 0, train_tokens: 0, epochs: 0, dataset_tokens: 0, price_per_gpu_hour: 0,
  fp8_recipe: 'torchao-tensorwise', method: 'sft', reference: 'default', prompt_len: 512, completion_len: 512, num_generations: 8, vllm: 'none', vllm_share: 0.3,
  vllm_sleep: false, steps_per_generation: 0, num_iterations: 1, teacher: '', teacher_dtype: 'bf16', divergence: 'reverse-kl',
  rollout_forward_batch: 64, num_mini_batches: 1, value_model: '', reward_model: '', reward_dtype: 'default',
};
for (const k of ARCH_KEYS) DEFAULTS['model.' + k] = ARCH_DEFAULTS[k];

// What a framework profile sets (core/setup/frameworks.cpp), read from the core by readProfiles: the configuration it
// echoes for {"framework": id} (the current revision) and, on demand, for {"framework": id, "framework_version": v}
// (the revision in force then: torchtune before 0.3 is FSDP 1 with the full loss ...). Until then (and for a
// framework or version the core does not answer), the current revision's, else DEFAULTS.
export const PROFILE_KEYS = ['precision', 'loss', 'adapter_dtype', 'fsdp_version', 'fsdp_wrap'];
// The knobs a change of framework or of its version gives back to the profile.
export const PROFILE_GOVERNED = [...PROFILE_KEYS, 'loss_chunks', 'lm_head_chunks', 'longest_batch_first'];
export const PROFILES = {};
const REVISIONS = new Map();  // "framework\nversion" -> profile, or null when the core refuses the version
let profileEstimate = null;

function readProfile(estimate, framework, version) {
  let r;
  const config = version ? { framework, framework_version: version } : { framework };
  try { r = JSON.parse(estimate(JSON.stringify(config))); } catch { return null; }
  if (!r || !r.config) return null;
  const p = {};
  for (const k of PROFILE_KEYS) if (CHOICES[k].includes(String(r.config[k]))) p[k] = String(r.config[k]);
  return p;
}

export function readProfiles(estimate) {
  profileEstimate = estimate;
  REVISIONS.clear();
  for (const fw of CHOICES.framework) {
    const p = readProfile(estimate, fw, '');
    if (p) PROFILES[fw] = p;
  }
  return PROFILES;
}

// The profile of a framework at a version ('' = the current revision), read from the core once per pair.
export function profileOf(framework, version = '') {
  const current = Object.hasOwn(PROFILES, framework) ? PROFILES[framework] : null;
  if (!version || typeof version !== 'string' || !profileEstimate || !CHOICES.framework.includes(framework)) return current;
  const key = framework + '\n' + version;
  if (!REVISIONS.has(key)) {
    if (REVISIONS.size >= 256) REVISIONS.clear();
    REVISIONS.set(key, readProfile(profileEstimate, framework, version));
  }
  return REVISIONS.get(key) || current;
}

// The state's framework profile applied to the knobs it governs (the rest of the state is kept).
export function applyProfile(s) {
  const out = { ...s };
  for (const k of PROFILE_GOVERNED) out[k] = defaultOf(out, k);
  return out;
}

export const defaultZero = (strategy) => (strategy === 'fsdp' ? 3 : 0);

// Fields whose default depends on others (core/setup/config_json.cpp): PyTorch's tensor parallelism under FSDP runs the
// norms sequence-parallel, the interleaved schedule runs two stages per GPU, adapters on one GPU or DDP under a
// bf16-autocast stack with fp32 adapters get PEFT's recipe (a bf16 frozen base; not under PPO, which refuses it), TRL
// 1.16's trainers checkpoint (gradient_checkpointing=True by default). Left at their default, they follow it.
export const FOLLOWERS = ['sequence_parallel', 'pp_stages_per_rank', 'precision', 'checkpointing'];

const profileValue = (state, key) => {
  const p = profileOf(state.framework, state.framework_version);
  return p && Object.hasOwn(p, key) ? p[key] : DEFAULTS[key];
};

export function defaultOf(state, key) {
  if (key === 'zero') return defaultZero(state.strategy);
  if (key === 'sequence_parallel') return state.strategy === 'fsdp' && Number(state.tp) > 1;
  if (key === 'pp_stages_per_rank') return state.pp_schedule === 'interleaved-1f1b' ? 2 : 1;
  if (key === 'checkpointing') return state.method !== 'sft' && state.method !== 'ppo' ? 'full' : DEFAULTS.checkpointing;
  if (key === 'precision') {
    const p = profileValue(state, 'precision');
    // (PPOTrainer trains the whole value model beside the policy and refuses the 16-bit frozen base: no recipe.)
    const recipe = p === 'bf16-mixed' && profileValue(state, 'adapter_dtype') === 'fp32' && state.finetune !== 'full' &&
      (state.strategy === 'single' || state.strategy === 'ddp') && state.method !== 'ppo';
    return recipe ? 'bf16-base-mixed' : p;
  }
  if (PROFILE_KEYS.includes(key)) return profileValue(state, key);
  if (key === 'targets') return STACK_DEFAULT_TARGETS[state.framework] || DEFAULTS.targets;
  if (key === 'model.kv_heads') return state['model.heads'];
  if (key === 'model.activation') return MLP_ACTIVATION[state['model.mlp']] || ARCH_DEFAULTS.activation;
  return DEFAULTS[key];
}

// The followers after a change from `prev` to `next`: those that were at their default and that the change left
// alone take their new default.
export function follow(prev, next) {
  const out = { ...next };
  for (const k of FOLLOWERS)
    if (prev[k] === defaultOf(prev, k) && out[k] === prev[k]) out[k] = defaultOf(out, k);
  return out;
}

// The order keys take in a link (also every key a link may hold).
export const PARAM_ORDER = ['model', 'hf', ...ARCH_KEYS.map((k) => 'model.' + k), 'gpu', 'gpu.memory_gib', 'gpu.name',
  'framework', 'framework_version', 'finetune', 'rank', 'targets', 'lora_dropout', 'adapter_dtype', 'backend',
  'backend_version', 'strategy', 'gpus', 'zero', 'tp', 'pp', 'cp', 'sequence_parallel', 'loss_parallel', 'pp_schedule',
  'pp_stages_per_rank', 'seq_len', 'micro_batch', 'grad_accum', 'longest_batch_first', 'precision', 'optimizer', 'optimizer_impl',
  'optimizer_in_backward', 'loss', 'loss_chunks', 'lm_head_chunks', 'checkpointing', 'activation_offload', 'attention',
  'offload', 'fsdp_version', 'fsdp_wrap', 'device', 'torch', 'fp8_recipe', 'method', ...METHOD_KEYS, ...RUN_KEYS];
// Keys that only mean something with LoRA/QLoRA, and with the chunked loss.
export const LORA_KEYS = ['rank', 'targets', 'lora_dropout', 'adapter_dtype'];
export const CHUNK_KEYS = ['loss_chunks', 'lm_head_chunks'];
// Keys that only mean something with QLoRA (the core refuses them otherwise).
export const QLORA_KEYS = ['backend', 'backend_version'];
// A release ("0.2.1", "0.3.0rc1", "2.6.0+cu124": core/setup/frameworks.cpp reads the leading numbers) or a date, of at most
// 32 characters (core/setup/config_json.cpp); the page also keeps a link's version to letters, digits and . + _ -.
const RELEASE = /^[0-9][0-9A-Za-z.+_-]{0,31}$/;
const VERSION_CHARS = 32;
export const MAX_PARAM_CHARS = 200;
export const MAX_HF_CHARS = 16384;
export const MAX_PROBLEMS = 20;
// How the page looks (not what it estimates): the embed view, its theme, its extent; and a pinned configuration A
// (its own query, read by the same parser).
export const THEMES = ['auto', 'light', 'dark'];
export const VIEWS = ['full', 'compact'];
export const MAX_PIN_CHARS = MAX_HF_CHARS + 4096;
const VIEW_KEYS = ['embed', 'theme', 'view', 'pin'];

export const initialState = () => ({ ...DEFAULTS });

// The configuration the core reads, from the page's fields.
export function toConfig(s) {
  const c = { framework: s.framework };
  if (s.framework_version !== '') c.framework_version = s.framework_version;
  if (s.model === 'custom') {
    const m = {};
    for (const k of ARCH_KEYS) {
      const v = s['model.' + k];
      if (k === 'head_dim' && (v === 0 || v === '')) continue;
      if (k === 'kv_heads' && v === '') continue;
      m[k] = v === '' ? ARCH_DEFAULTS[k] : v;
    }
    c.model = m;
  } else if (s.model === 'hf') {
    c.model = { hf_config: s.hf || {} };
  } else {
    c.model = s.model;
  }
  for (const k of ['seq_len', 'micro_batch', 'grad_accum', 'precision', 'optimizer', 'optimizer_impl']) c[k] = s[k];
  if (s.precision === 'fp8') c.fp8_recipe = s.fp8_recipe;
  if (s.method !== 'sft') {  // the sequence is prompt + completion (the core derives seq_len)
    delete c.seq_len;
    c.method = s.method;
    c.prompt_len = s.prompt_len;
    c.completion_len = s.completion_len;
    if (s.reference !== 'default' && REFERENCE_METHODS.includes(s.method)) c.reference = s.reference;
    if (s.method === 'distill') {
      if (s.teacher !== '') c.teacher = s.teacher;  // else the core's "is required", next to the field
      c.teacher_dtype = s.teacher_dtype;
      c.divergence = s.divergence;
    }
    if (s.method === 'ppo') {
      c.rollout_forward_batch = s.rollout_forward_batch;
      c.num_mini_batches = s.num_mini_batches;
      for (const k of ['value_model', 'reward_model']) if (s[k] !== '') c[k] = s[k];  // '': the policy's own model
      if (s.reward_dtype !== 'default') c.reward_dtype = s.reward_dtype;  // default: the policy's weight dtype
    }
    if (s.method === 'grpo' || s.method === 'rloo') {
      c.num_generations = s.num_generations;
      if (s.vllm === 'colocate') {
        c.inference_engine = { name: 'vllm', mode: 'colocate', gpu_memory_utilization: Number(s.vllm_share), sleep_mode: s.vllm_sleep };
      } else if (s.vllm === 'server') c.inference_engine = { name: 'vllm', mode: 'server' };
      if (Number(s.steps_per_generation) > 0) c.steps_per_generation = s.steps_per_generation;  // 0: grad_accum (TRL's default)
      c.num_iterations = s.num_iterations;
    }
  }
  c.finetune = s.finetune === 'full' ? 'full'
    : { method: s.finetune, rank: s.rank, targets: String(s.targets).split(',').map((t) => t.trim()).filter(Boolean),
      dropout: s.lora_dropout };
  if (s.finetune === 'qlora') {
    c.finetune.backend = s.backend;
    if (s.backend_version !== '') c.finetune.backend_version = s.backend_version;
  }
  if (s.finetune !== 'full') c.adapter_dtype = s.adapter_dtype;
  c.optimizer_in_backward = s.optimizer_in_backward;
  c.activation_offload = s.activation_offload;
  if (s.longest_batch_first !== '') c.longest_batch_first = s.longest_batch_first;
  c.fsdp_version = Number(s.fsdp_version);
  c.fsdp_wrap = s.fsdp_wrap;
  c.loss = s.loss;
  if (s.loss === 'chunked') for (const k of CHUNK_KEYS) if (s[k] !== '') c[k] = s[k];
  for (const k of ['checkpointing', 'attention', 'strategy', 'gpus', 'zero', 'tp', 'pp', 'cp', 'sequence_parallel',
    'loss_parallel', 'pp_schedule', 'pp_stages_per_rank', 'offload']) c[k] = s[k];
  c.gpu = s.gpu === 'custom' ? { name: s['gpu.name'], memory_gib: s['gpu.memory_gib'] } : s.gpu;
  c.device = s.device;
  c.torch = s.torch;
  for (const k of RUN_KEYS) if (s[k] !== DEFAULTS[k]) c[k] = s[k];
  return c;
}

// A suggestion's patch (core configuration keys) applied to the page's fields. A value the page cannot show (a
// choice it does not list, checkpointing every N-th layer) leaves its field as it was.
export function applyPatch(s, patch) {
  const out = { ...s };
  for (const [k, v] of Object.entries(patch || {})) {
    if (k === 'finetune') {
      if (typeof v === 'string') out.finetune = v;
      else if (v && typeof v === 'object') {
        if (v.method) out.finetune = v.method;
        if (v.rank !== undefined) out.rank = v.rank;
        if (Array.isArray(v.targets)) out.targets = v.targets.join(',');
        if (v.dropout !== undefined) out.lora_dropout = v.dropout;
        if (CHOICES.backend.includes(v.backend)) out.backend = v.backend;
        if (typeof v.backend_version === 'string') out.backend_version = v.backend_version;
      }
    } else if (k === 'gpu') {
      if (typeof v === 'string') out.gpu = v;
      else if (v && typeof v === 'object') {
        out.gpu = 'custom';
        if (v.memory_gib !== undefined) out['gpu.memory_gib'] = v.memory_gib;
        if (v.name !== undefined) out['gpu.name'] = v.name;
      }
    } else if (k === 'model' || MODEL_KEYS.includes(k)) {
      if (typeof v === 'string') out[k] = v;
    } else if (k === 'inference_engine') {
      if (v === 'none') out.vllm = 'none';
      else if (v && typeof v === 'object' && v.name === 'vllm') {
        out.vllm = v.mode === 'server' ? 'server' : 'colocate';
        if (v.gpu_memory_utilization !== undefined) out.vllm_share = v.gpu_memory_utilization;
        if (v.sleep_mode !== undefined) out.vllm_sleep = !!v.sleep_mode;
      }
    } else if (k in CHOICES) {
      if (CHOICES[k].includes(String(v))) out[k] = String(v);
    } else if (k in DEFAULTS) {
      out[k] = v;
    }
  }
  return out;
}

// The share link's query: the model and GPU always, then every setting that differs from its default.
export function toQuery(s, extra = {}) {
  const q = new URLSearchParams();
  for (const k of PARAM_ORDER) {
    const v = s[k];
    let keep;
    if (k === 'model' || k === 'gpu') keep = true;
    else if (k === 'hf') keep = s.model === 'hf';
    else if (k.startsWith('model.')) keep = s.model === 'custom' && (ARCH_REQUIRED.includes(k.slice(6)) || v !== defaultOf(s, k));
    else if (k === 'gpu.memory_gib') keep = s.gpu === 'custom';
    else if (k === 'gpu.name') keep = s.gpu === 'custom' && v !== DEFAULTS[k];
    else if (LORA_KEYS.includes(k)) keep = s.finetune !== 'full' && v !== defaultOf(s, k);
    else if (QLORA_KEYS.includes(k)) keep = s.finetune === 'qlora' && v !== defaultOf(s, k);
    else if (CHUNK_KEYS.includes(k)) keep = s.loss === 'chunked' && v !== '';
    else keep = v !== defaultOf(s, k);
    if (!keep || v === '' || v === null || v === undefined) continue;
    const t = k === 'hf' ? toBase64Url(JSON.stringify(compactHf(v))) : String(v);
    if (t.length <= (k === 'hf' ? MAX_HF_CHARS : MAX_PARAM_CHARS)) q.set(k, t);
  }
  for (const [k, v] of Object.entries(extra)) q.set(k, String(v));
  return q.toString();
}

// A short, printable rendering of untrusted text for messages (shown with textContent only).
export function clip(text, n = 40) {
  const t = String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
  return t.length > n ? t.slice(0, n - 1) + '\u2026' : t;
}

function parseInt10(text, [lo, hi]) {
  if (!/^[0-9]{1,9}$/.test(text)) return null;
  const v = Number(text);
  return v >= lo && v <= hi ? v : null;
}

// The embed view's settings, read before the calculator has loaded (fromQuery reports their problems later).
export function readView(search) {
  let p;
  try { p = new URLSearchParams(search); } catch { p = new URLSearchParams(); }
  const embed = p.get('embed') === '1' || p.get('embed') === 'true';
  return { embed, theme: THEMES.includes(p.get('theme')) ? p.get('theme') : 'auto',
    view: VIEWS.includes(p.get('view')) ? p.get('view') : 'full' };
}

// Reads a link's query. Returns {state, problems:[{param, message}], embed, theme, view, pin}. Invalid or unknown
// parameters are reported and left out; the state holds only checked values. `models` holds the preset ids and the
// catalog's Hugging Face ids (a link's model is matched case-insensitively, a hub URL read as its id); `gpus` the GPU
// ids. pin: the state of a pinned configuration A, read from its own query (nested: no pin, embed, theme or view).
export function fromQuery(search, { models, gpus, nested = false }) {
  const state = initialState();
  const problems = [];
  let embed = false;
  let theme = 'auto';
  let view = 'full';
  let pin = null;
  const report = (param, message) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ param: clip(param), message });
    else if (problems.length === MAX_PROBLEMS) problems.push({ param: '', message: 'more problems not listed' });
  };
  const result = () => ({ state, problems, embed, theme, view, pin });
  let params;
  try {
    params = new URLSearchParams(search);
  } catch {
    report('', 'the link could not be read');
    return result();
  }
  const seen = new Map();
  let count = 0;
  for (const [key, value] of params) {
    if (++count > 200) { report('', 'more than 200 parameters; the rest are ignored'); break; }
    if (seen.has(key)) { report(key, 'given more than once; the first value is used'); continue; }
    seen.set(key, value);
  }
  const get = (k) => seen.get(k);
  const known = new Set(nested ? PARAM_ORDER : [...PARAM_ORDER, ...VIEW_KEYS]);
  for (const [key, value] of seen) {
    if (!known.has(key)) {
      report(key, nested && VIEW_KEYS.includes(key) ? 'not used inside pin; ignored' : 'unknown parameter; ignored');
      continue;
    }
    const limit = key === 'hf' ? MAX_HF_CHARS : key === 'pin' ? MAX_PIN_CHARS : MAX_PARAM_CHARS;
    if (value.length > limit) {
      report(key, `value is ${value.length} characters long (at most ${limit}); ignored`);
      seen.set(key, undefined);
    }
  }
  const refused = new Set();
  const bad = (key, why) => { refused.add(key); report(key, `${why}, got "${clip(get(key))}"; ignored`); };
  const unused = (k) => get(k) !== undefined && !refused.has(k);

  const embedText = get('embed');
  if (embedText !== undefined) {
    if (embedText === '1' || embedText === 'true') embed = true;
    else if (embedText !== '0' && embedText !== 'false') bad('embed', 'must be 1 or 0');
  }
  const themeText = get('theme');
  if (themeText !== undefined) {
    if (THEMES.includes(themeText)) theme = themeText;
    else bad('theme', `must be one of ${THEMES.join(', ')}`);
  }
  const viewText = get('view');
  if (viewText !== undefined) {
    if (VIEWS.includes(viewText)) view = viewText;
    else bad('view', `must be one of ${VIEWS.join(', ')}`);
  }
  const pinText = get('pin');
  if (pinText === '') report('pin', 'is empty; ignored');
  else if (pinText !== undefined) {
    const a = fromQuery(pinText, { models, gpus, nested: true });
    pin = a.state;
    for (const p of a.problems) report(`pin: ${p.param}`, p.message);
  }

  // The model: a preset, an explicit architecture, or a Hugging Face config.json.
  let model = get('model');
  if (model === undefined && get('hf') !== undefined) model = 'hf';
  if (model !== undefined) {
    const id = model === 'custom' || model === 'hf' ? model : resolveModel(model, models);
    if (id) state.model = id;
    else {
      const near = closeModels(model, models);
      report('model', `"${clip(model)}" is not a preset or a Hugging Face id of the catalog (nor "custom" or "hf"); ` +
        `ignored${near.length ? `. Did you mean ${near.join(', ')}?` : ''}`);
    }
  }
  if (state.model === 'hf') {
    const text = get('hf');
    let hf = null;
    if (text === undefined) report('hf', 'model=hf needs an hf parameter (base64url of the config.json)');
    else if (!/^[A-Za-z0-9_-]+$/.test(text)) bad('hf', 'must be base64url text');
    else {
      try {
        const obj = JSON.parse(fromBase64Url(text));
        if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('not an object');
        hf = compactHf(obj);
      } catch {
        report('hf', 'is not base64url of a JSON object; ignored');
      }
    }
    if (hf) state.hf = hf;
    else state.model = DEFAULTS.model;
  } else if (get('hf') !== undefined) {
    report('hf', 'only used with model=hf; ignored');
  }
  for (const k of ARCH_KEYS) {
    const key = 'model.' + k;
    const text = get(key);
    if (text === undefined) continue;
    if (state.model !== 'custom') { report(key, 'only used with model=custom; ignored'); continue; }
    state[key] = readScalar(key, text, bad);
    if (state[key] === undefined) state[key] = DEFAULTS[key];
  }
  if (state.model === 'custom' && get('model.kv_heads') === undefined) state['model.kv_heads'] = state['model.heads'];
  if (state.model === 'custom' && get('model.activation') === undefined)
    state['model.activation'] = defaultOf(state, 'model.activation');

  // The framework and its version before the rest: their profile gives precision, loss ... (and the LoRA targets)
  // their defaults.
  const fw = get('framework') === undefined ? undefined : readScalar('framework', get('framework'), bad);
  const fv = get('framework_version') === undefined ? undefined : readScalar('framework_version', get('framework_version'), bad);
  if (fw !== undefined || fv !== undefined) {
    const s = applyProfile({ ...state, framework: fw ?? state.framework, framework_version: fv ?? '' });
    Object.assign(state, s, { targets: defaultOf(s, 'targets') });
  }
  for (const key of PARAM_ORDER) {
    if (key === 'model' || key === 'hf' || key === 'framework' || key === 'framework_version' || key.startsWith('model.'))
      continue;
    const text = get(key);
    if (text === undefined) continue;
    const v = readScalar(key, text, bad, { models, gpus });
    if (v !== undefined) state[key] = v;
  }
  if (!unused('zero')) state.zero = defaultZero(state.strategy);
  // Links from before the Generation field: a vllm_share above 0 meant a colocated vLLM, 0 generation in-process.
  if (get('vllm') === undefined && unused('vllm_share')) {
    if (state.vllm_share > 0) state.vllm = 'colocate';
    else state.vllm_share = DEFAULTS.vllm_share;
  }
  for (const k of FOLLOWERS) if (!unused(k)) state[k] = defaultOf(state, k);
  if (state.finetune === 'full') {
    for (const k of LORA_KEYS)
      if (unused(k)) { report(k, 'only used with finetune=lora or qlora; ignored'); state[k] = defaultOf(state, k); }
  }
  if (state.finetune !== 'qlora') {
    for (const k of QLORA_KEYS)
      if (unused(k)) { report(k, 'only used with finetune=qlora; ignored'); state[k] = DEFAULTS[k]; }
  }
  if (state.loss !== 'chunked') {
    for (const k of CHUNK_KEYS)
      if (unused(k)) { report(k, 'only used with loss=chunked; ignored'); state[k] = DEFAULTS[k]; }
  }
  if (state.gpu !== 'custom') {
    for (const k of ['gpu.memory_gib', 'gpu.name'])
      if (get(k) !== undefined) { report(k, 'only used with gpu=custom; ignored'); state[k] = DEFAULTS[k]; }
  }
  return result();
}

function readScalar(key, text, bad, ids = {}) {
  if (key in INTS) {
    const v = parseInt10(text, INTS[key]);
    if (v === null) bad(key, `must be an integer from ${INTS[key][0]} to ${INTS[key][1]}`);
    return v === null ? undefined : v;
  }
  if (key in NUMBERS) {
    const [lo, hi] = NUMBERS[key];
    const v = /^[0-9]{1,19}(\.[0-9]{1,17})?(e[+-]?[0-9]{1,2})?$/i.test(text) ? Number(text) : NaN;
    if (v >= lo && v <= hi) return v;
    bad(key, `must be a number from ${lo} to ${hi}`);
    return undefined;
  }
  if (BOOLS.includes(key)) {
    if (text === 'true' || text === 'false') return text === 'true';
    bad(key, 'must be true or false');
    return undefined;
  }
  if (key in CHOICES) {
    if (CHOICES[key].includes(text)) return text;
    bad(key, `must be one of ${CHOICES[key].join(', ')}`);
    return undefined;
  }
  if (MODEL_KEYS.includes(key)) {
    const id = resolveModel(text, ids.models);
    if (id) return id;
    bad(key, 'must be a preset id or a Hugging Face id of the catalog');
    return undefined;
  }
  if (key === 'gpu') {
    if (text === 'custom' || ids.gpus.includes(text)) return text;
    bad(key, 'must be a GPU id from the catalog or "custom"');
    return undefined;
  }
  if (key === 'gpu.memory_gib') {
    const v = /^[0-9]{1,7}(\.[0-9]{1,12})?$/.test(text) ? Number(text) : NaN;
    if (v >= 0.0625 && v <= 2 ** 20) return v;
    bad(key, 'must be a number of GiB from 0.0625 to 1048576');
    return undefined;
  }
  if (key === 'gpu.name') {
    if (/^[\p{L}\p{N} ._()+\-/]{1,60}$/u.test(text)) return text;
    bad(key, 'must be 1 to 60 letters, digits, spaces or . _ ( ) + - /');
    return undefined;
  }
  if (key === 'model.dropout' || key === 'lora_dropout') {
    const v = /^0(\.[0-9]{1,12})?$/.test(text) ? Number(text) : NaN;
    if (v >= 0 && v < 1) return v;
    bad(key, 'must be a number from 0 to below 1');
    return undefined;
  }
  if (key === 'framework_version' || key === 'backend_version') {
    if (RELEASE.test(text)) return text;
    bad(key, key === 'framework_version'
      ? `must be a release ("0.2.1") or a date ("2024-05-20") of at most ${VERSION_CHARS} characters`
      : `must be a release ("0.41.1") of at most ${VERSION_CHARS} characters`);
    return undefined;
  }
  if (key === 'targets') {
    const list = text.split(',');
    if (list.length && list.length <= ALL_TARGETS.size && list.every((t) => ALL_TARGETS.has(t))) return text;
    bad(key, `must be a comma-separated list of ${[...ALL_TARGETS].join(', ')}`);
    return undefined;
  }
  bad(key, 'is not understood');
  return undefined;
}
