// The form's fields: the schema's keys (label, doc, type, group, when each applies) as controls, with the page's own
// widgets for the model and the GPU. Built once the schema is read (buildFields).
import { ROWS, GROUPS, LABELS, PARAM_ORDER, ARCH_KEYS, BOOLS, CHOICES, ZERO, applies, isUnset } from './params.js';

export { LABELS } from './params.js';

// Labels of the page's "unset" values: the core decides (its choice shows in the first option or the placeholder).
export const UNSET_LABELS = {
  reference: { default: 'TRL’s default' },
  reward_dtype: { default: 'The policy’s weight dtype' },
  lm_head_chunks: { '': 'The stack’s choice', true: 'Yes, per chunk', false: 'No, once for all tokens' },
  longest_batch_first: { '': 'The stack’s choice', true: 'Yes: the first micro-batch', false: 'No: any step' },
};
export const zeroLabel = (s) => Object.fromEntries(Object.entries(ZERO[s.strategy] || {}).map(([z, t]) => [z, `${z} · ${t}`]));

export const isCustom = (s) => s.model === 'custom';

// The page's widgets and hints beside the schema's: how a field is typed in, not what it means.
const WIDGETS = {
  model: { kind: 'model', hint: 'Type to search the presets and Hugging Face ids (Qwen/Qwen3-8B), or paste a huggingface.co link.' },
  gpu: { kind: 'gpu' },
  finetune: { kind: 'select' },
  vllm: { kind: 'select' },
  zero: { kind: 'zero' },
  targets: { kind: 'targets' },
  framework_version: { maxlength: 32 },
  backend_version: { maxlength: 32 },
  teacher: { maxlength: 512, list: 'model-list' },
  value_model: { maxlength: 512, list: 'model-list' },
  reward_model: { maxlength: 512, list: 'model-list' },
  train_tokens: { tokens: true },
  dataset_tokens: { tokens: true },
  gpus_per_node: { sub: true },
  inter_node_gbps: { sub: true },
};
// The page's own fields: a pasted config.json, a custom architecture's keys, a custom GPU's memory and name.
const PAGE_FIELDS = {
  model: [{ key: 'hf', label: 'Hugging Face config.json', kind: 'hf', show: (s) => s.model === 'hf',
    hint: 'Paste the model’s config.json; keys that never affect memory (token ids, RoPE settings, dtype…) stay out of the link.' }],
  gpu: [{ key: 'gpu.memory_gib', label: 'Memory (GiB)', kind: 'number', show: (s) => s.gpu === 'custom' },
    { key: 'gpu.name', label: 'Name', kind: 'text', show: (s) => s.gpu === 'custom' }],
};
const ARCH_LABELS = { layers: 'Layers', hidden: 'Hidden size', heads: 'Attention heads', kv_heads: 'KV heads',
  head_dim: 'Head dim (0: hidden / heads)', ffn: 'FFN size', vocab: 'Vocabulary', mlp: 'MLP', activation: 'Activation',
  norm: 'Norm', bias: 'Biases on projections', tied_embeddings: 'Tied embeddings', position: 'Positions',
  max_positions: 'Max positions', dropout: 'Dropout', experts: 'Experts (MoE)', experts_per_token: 'Experts per token',
  qkv_bias: 'q/k/v biases', lm_head_bias: 'LM head bias', norms_per_layer: 'Norms per layer' };

function kindOf(key, row) {
  if (WIDGETS[key] && WIDGETS[key].kind) return WIDGETS[key].kind;
  if (row.type === 'boolean') return isUnset(key, '') ? 'tristate' : 'bool';
  if (row.choices) return 'select';
  if (row.type === 'integer') return 'int';
  if (row.type === 'number') return 'number';
  return 'text';
}

function archField(k) {
  const key = 'model.' + k;
  const kind = BOOLS.includes(key) ? 'bool' : key in CHOICES ? 'select' : k === 'dropout' ? 'number' : 'int';
  return { key, label: ARCH_LABELS[k] || k, kind, show: isCustom, sub: true };
}

export let FIELDS = [];
export let FIELD = {};
export let FORM_GROUPS = [];

// The groups in the schema's order, each with its keys in the schema's order (the basics in their own) and the page's
// own fields; whether a group is always open, and when it opens itself.
export function buildFields() {
  FORM_GROUPS = GROUPS.filter((g) => g.id !== 'none').map((g) => {
    const fields = [];
    const keys = g.order.length ? g.order : PARAM_ORDER.filter((k) => ROWS[k] && ROWS[k].group === g.id);
    for (const key of keys) {
      const row = ROWS[key];
      const w = WIDGETS[key] || {};
      fields.push({ key, kind: row ? kindOf(key, row) : w.kind, label: row ? row.label : key === 'model' ? 'Model' : 'GPU',
        hint: w.hint || (row ? row.doc : ''), show: row ? (s) => applies(key, s) : null, ...w });
      if (key === 'model') fields.push(...PAGE_FIELDS.model, ...ARCH_KEYS.map(archField));
      if (key === 'gpu') fields.push(...PAGE_FIELDS.gpu);
    }
    return { id: g.id, title: g.title, open: !!g.open, opens: g.opens || null, fields };
  }).filter((g) => g.fields.length);
  FIELDS = FORM_GROUPS.flatMap((g) => g.fields);
  FIELD = Object.fromEntries(FIELDS.map((f) => [f.key, f]));
}

export const fid = (key) => 'f-' + key.replace(/\./g, '-');
export const eid = (key) => 'e-' + key.replace(/\./g, '-');
export const nid = (key) => 'n-' + key.replace(/\./g, '-');
