// A pasted Hugging Face config.json as a share link carries it: the keys that matter to memory, as base64url.

// config.json keys that never change a tensor shape or the memory of a training step (the same list as
// tests/data/model_catalog/make_catalog.py): a share link carries every other key, so that whatever the core reads
// (now or later) survives the link. Inside quantization_config only quant_method is kept; text_config is stripped
// the same way.
export const HF_DROP = new Set(['architectures', 'auto_map', 'initializer_range', 'initializer_factor', 'rope_theta',
  'rope_scaling', 'rope_parameters', 'torch_dtype', 'dtype', 'transformers_version', 'use_cache', '_name_or_path',
  'tokenizer_class', 'bos_token', 'eos_token', 'pad_token', 'task_specific_params', 'id2label', 'label2id',
  'router_aux_loss_coef',
  // generation settings
  'temperature', 'top_p', 'top_k', 'typical_p', 'do_sample', 'num_beams', 'num_beam_groups', 'max_length',
  'min_length', 'max_new_tokens', 'repetition_penalty', 'length_penalty', 'no_repeat_ngram_size',
  'encoder_no_repeat_ngram_size', 'early_stopping', 'num_return_sequences', 'diversity_penalty', 'bad_words_ids',
  'begin_suppress_tokens', 'suppress_tokens', 'remove_invalid_values', 'exponential_decay_length_penalty',
  'output_scores', 'return_dict_in_generate', 'forced_bos_token_id', 'forced_eos_token_id',
  // never copied: they would touch an object's prototype
  '__proto__', 'constructor', 'prototype']);
export const hfKeyDropped = (k) => HF_DROP.has(k) || /_token_ids?$/.test(k) || /(_eps|_epsilon)$/.test(k) ||
  k === 'epsilon' || k.length > 80;

// A pasted config.json less the keys that never affect memory (HF_DROP), as plain JSON values: strings of at most
// 200 characters, arrays of at most 1024 items, objects at most 4 deep (text_config, quantization_config, ...).
export function compactHf(obj, depth = 0) {
  const out = {};
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return out;
  for (const k of Object.keys(obj)) {
    if (hfKeyDropped(k)) continue;
    let v = obj[k];
    if (k === 'quantization_config' && v && typeof v === 'object' && !Array.isArray(v))
      v = typeof v.quant_method === 'string' ? { quant_method: v.quant_method } : {};
    v = plainJson(v, depth + 1);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

function plainJson(v, depth) {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'boolean' || v === null) return v;
  if (typeof v === 'string') return v.length <= 200 ? v : undefined;
  if (depth > 4 || !v || typeof v !== 'object') return undefined;
  if (Array.isArray(v)) return v.length <= 1024 ? v.map((x) => plainJson(x, depth + 1)).filter((x) => x !== undefined) : undefined;
  return compactHf(v, depth);
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
