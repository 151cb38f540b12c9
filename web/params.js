// The page's state as flat, readable fields, and share links: state <-> query parameters <-> core configuration.
// Pure functions, no DOM: the page and the tests share them. Every value read from a link is checked here against
// the same lists and bounds as core/config_json.cpp; anything else is reported and ignored, never shown as markup.

export const CHOICES = {
  precision: ['bf16-mixed', '16-mixed', '32-true', 'bf16-true', '16-true'],
  optimizer: ['adamw', 'adamw-8bit', 'adafactor', 'lion', 'sgd', 'sgd-momentum'],
  optimizer_impl: ['foreach', 'fused', 'single-tensor'],
  finetune: ['full', 'lora', 'qlora'],
  checkpointing: ['none', 'selective', 'full'],
  attention: ['eager', 'flash'],
  strategy: ['single', 'ddp', 'deepspeed', 'fsdp', 'megatron'],
  offload: ['none', 'optimizer', 'optimizer+params'],
  device: ['cuda', 'cpu'],
  torch: ['2', '1.13'],
  'model.mlp': ['swiglu', 'geglu', 'gelu'],
  'model.norm': ['rmsnorm', 'layernorm'],
  'model.position': ['rope', 'learned'],
};

export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj',
  'c_attn', 'c_proj', 'c_fc', 'all-linear'];

// Bounds from core/config_json.cpp.
const W = 2 ** 20;
export const INTS = {
  seq_len: [1, 2 ** 24], micro_batch: [1, 2 ** 20], grad_accum: [1, 2 ** 20], gpus: [1, 2 ** 20], zero: [0, 3],
  tp: [1, 1024], pp: [1, 1024], rank: [1, 65536],
  'model.layers': [1, 100000], 'model.hidden': [1, W], 'model.heads': [1, W], 'model.kv_heads': [1, W],
  'model.head_dim': [1, W], 'model.ffn': [1, 4 * W], 'model.vocab': [1, 2 ** 24], 'model.max_positions': [1, 2 ** 24],
  'model.experts': [1, 1024], 'model.experts_per_token': [1, 1024], 'model.norms_per_layer': [1, 2],
};
export const BOOLS = ['sequence_parallel', 'model.bias', 'model.tied_embeddings', 'model.qkv_bias', 'model.lm_head_bias'];

// An explicit architecture: its keys and core/architecture.hpp's defaults (kv_heads defaults to heads).
export const ARCH_KEYS = ['layers', 'hidden', 'heads', 'kv_heads', 'head_dim', 'ffn', 'vocab', 'mlp', 'norm', 'bias',
  'tied_embeddings', 'position', 'max_positions', 'dropout', 'experts', 'experts_per_token', 'qkv_bias',
  'lm_head_bias', 'norms_per_layer'];
export const ARCH_REQUIRED = ['layers', 'hidden', 'heads', 'ffn', 'vocab'];
export const ARCH_DEFAULTS = {
  layers: 32, hidden: 4096, heads: 32, kv_heads: 32, head_dim: 0, ffn: 11008, vocab: 32000, mlp: 'swiglu',
  norm: 'rmsnorm', bias: false, tied_embeddings: false, position: 'rope', max_positions: 4096, dropout: 0,
  experts: 1, experts_per_token: 1, qkv_bias: false, lm_head_bias: false, norms_per_layer: 2,
};

// The config.json keys the core reads (core/config_json.cpp, read_hf_config): a share link carries only these.
export const HF_KEYS = ['model_type', 'n_layer', 'n_embd', 'n_head', 'n_inner', 'vocab_size', 'n_positions',
  'resid_pdrop', 'num_hidden_layers', 'hidden_size', 'num_attention_heads', 'num_key_value_heads', 'head_dim',
  'intermediate_size', 'max_position_embeddings', 'attention_bias', 'hidden_dropout', 'attention_dropout',
  'num_local_experts', 'num_experts_per_tok', 'tie_word_embeddings'];

// The page's fields with the core's defaults (core/config.hpp). "model" is a preset id, "custom" or "hf".
export const DEFAULTS = {
  model: 'llama-2-7b', hf: null, seq_len: 2048, micro_batch: 1, grad_accum: 1, precision: 'bf16-mixed',
  optimizer: 'adamw', optimizer_impl: 'foreach', finetune: 'full', rank: 8, targets: 'q_proj,v_proj',
  checkpointing: 'none', attention: 'flash', strategy: 'single', gpus: 1, zero: 0, tp: 1, pp: 1,
  sequence_parallel: false, offload: 'none', gpu: 'a100-80gb', 'gpu.memory_gib': 80, 'gpu.name': 'Custom GPU',
  device: 'cuda', torch: '2',
};
for (const k of ARCH_KEYS) DEFAULTS['model.' + k] = ARCH_DEFAULTS[k];

export const defaultZero = (strategy) => (strategy === 'fsdp' ? 3 : 0);

export function defaultOf(state, key) {
  if (key === 'zero') return defaultZero(state.strategy);
  if (key === 'model.kv_heads') return state['model.heads'];
  return DEFAULTS[key];
}

// The order keys take in a link (also every key a link may hold).
export const PARAM_ORDER = ['model', 'hf', ...ARCH_KEYS.map((k) => 'model.' + k), 'gpu', 'gpu.memory_gib', 'gpu.name',
  'finetune', 'rank', 'targets', 'strategy', 'gpus', 'zero', 'tp', 'pp', 'sequence_parallel', 'seq_len', 'micro_batch',
  'grad_accum', 'precision', 'optimizer', 'optimizer_impl', 'checkpointing', 'attention', 'offload', 'device', 'torch'];
export const MAX_PARAM_CHARS = 200;
export const MAX_HF_CHARS = 4096;
export const MAX_PROBLEMS = 20;

export const initialState = () => ({ ...DEFAULTS });

// Only the config.json keys the core reads, with plain values.
export function compactHf(obj) {
  const out = {};
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return out;
  for (const k of HF_KEYS) {
    const v = obj[k];
    if (typeof v === 'number' || typeof v === 'boolean' || v === null || (typeof v === 'string' && v.length <= 64))
      out[k] = v;
  }
  return out;
}

export function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromBase64Url(s) {
  const bin = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
}

// The configuration the core reads, from the page's fields.
export function toConfig(s) {
  const c = {};
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
  c.finetune = s.finetune === 'full' ? 'full'
    : { method: s.finetune, rank: s.rank, targets: String(s.targets).split(',').map((t) => t.trim()).filter(Boolean) };
  for (const k of ['checkpointing', 'attention', 'strategy', 'gpus', 'zero', 'tp', 'pp', 'sequence_parallel', 'offload'])
    c[k] = s[k];
  c.gpu = s.gpu === 'custom' ? { name: s['gpu.name'], memory_gib: s['gpu.memory_gib'] } : s.gpu;
  c.device = s.device;
  c.torch = s.torch;
  return c;
}

// A suggestion's patch (core configuration keys) applied to the page's fields.
export function applyPatch(s, patch) {
  const out = { ...s };
  for (const [k, v] of Object.entries(patch || {})) {
    if (k === 'finetune') {
      if (typeof v === 'string') out.finetune = v;
      else if (v && typeof v === 'object') {
        if (v.method) out.finetune = v.method;
        if (v.rank !== undefined) out.rank = v.rank;
        if (Array.isArray(v.targets)) out.targets = v.targets.join(',');
      }
    } else if (k === 'gpu') {
      if (typeof v === 'string') out.gpu = v;
      else if (v && typeof v === 'object') {
        out.gpu = 'custom';
        if (v.memory_gib !== undefined) out['gpu.memory_gib'] = v.memory_gib;
        if (v.name !== undefined) out['gpu.name'] = v.name;
      }
    } else if (k === 'model') {
      if (typeof v === 'string') out.model = v;
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
    else if (k === 'rank' || k === 'targets') keep = s.finetune !== 'full' && v !== DEFAULTS[k];
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

// Reads a link's query. Returns {state, problems:[{param, message}], embed}. Invalid or unknown parameters are
// reported and left out; the state holds only checked values. `models` and `gpus` are the preset ids.
export function fromQuery(search, { models, gpus }) {
  const state = initialState();
  const problems = [];
  let embed = false;
  const report = (param, message) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ param: clip(param), message });
    else if (problems.length === MAX_PROBLEMS) problems.push({ param: '', message: 'more problems not listed' });
  };
  let params;
  try {
    params = new URLSearchParams(search);
  } catch {
    report('', 'the link could not be read');
    return { state, problems, embed };
  }
  const seen = new Map();
  let count = 0;
  for (const [key, value] of params) {
    if (++count > 200) { report('', 'more than 200 parameters; the rest are ignored'); break; }
    if (seen.has(key)) { report(key, 'given more than once; the first value is used'); continue; }
    seen.set(key, value);
  }
  const get = (k) => seen.get(k);
  const known = new Set([...PARAM_ORDER, 'embed']);
  for (const [key, value] of seen) {
    if (!known.has(key)) { report(key, 'unknown parameter; ignored'); continue; }
    const limit = key === 'hf' ? MAX_HF_CHARS : MAX_PARAM_CHARS;
    if (value.length > limit) {
      report(key, `value is ${value.length} characters long (at most ${limit}); ignored`);
      seen.set(key, undefined);
    }
  }
  const bad = (key, why) => report(key, `${why}, got "${clip(get(key))}"; ignored`);

  const embedText = get('embed');
  if (embedText !== undefined) {
    if (embedText === '1' || embedText === 'true') embed = true;
    else if (embedText !== '0' && embedText !== 'false') bad('embed', 'must be 1 or 0');
  }

  // The model: a preset, an explicit architecture, or a Hugging Face config.json.
  let model = get('model');
  if (model === undefined && get('hf') !== undefined) model = 'hf';
  if (model !== undefined) {
    if (model === 'custom' || model === 'hf' || models.includes(model)) state.model = model;
    else bad('model', 'must be a preset id, "custom" or "hf"');
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

  for (const key of PARAM_ORDER) {
    if (key === 'model' || key === 'hf' || key.startsWith('model.')) continue;
    const text = get(key);
    if (text === undefined) continue;
    const v = readScalar(key, text, bad, { models, gpus });
    if (v !== undefined) state[key] = v;
  }
  if (get('zero') === undefined) state.zero = defaultZero(state.strategy);
  if (state.finetune === 'full') {
    for (const k of ['rank', 'targets'])
      if (get(k) !== undefined) { report(k, 'only used with finetune=lora or qlora; ignored'); state[k] = DEFAULTS[k]; }
  }
  if (state.gpu !== 'custom') {
    for (const k of ['gpu.memory_gib', 'gpu.name'])
      if (get(k) !== undefined) { report(k, 'only used with gpu=custom; ignored'); state[k] = DEFAULTS[k]; }
  }
  return { state, problems, embed };
}

function readScalar(key, text, bad, ids = {}) {
  if (key in INTS) {
    const v = parseInt10(text, INTS[key]);
    if (v === null) bad(key, `must be an integer from ${INTS[key][0]} to ${INTS[key][1]}`);
    return v === null ? undefined : v;
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
  if (key === 'model.dropout') {
    const v = /^0(\.[0-9]{1,12})?$/.test(text) ? Number(text) : NaN;
    if (v >= 0 && v < 1) return v;
    bad(key, 'must be a number from 0 to below 1');
    return undefined;
  }
  if (key === 'targets') {
    const list = text.split(',');
    if (list.length && list.length <= LORA_TARGETS.length && list.every((t) => LORA_TARGETS.includes(t))) return text;
    bad(key, `must be a comma-separated list of ${LORA_TARGETS.join(', ')}`);
    return undefined;
  }
  bad(key, 'is not understood');
  return undefined;
}
