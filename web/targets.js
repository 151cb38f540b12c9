// LoRA targets: the module names each model family and training stack has, and the chips that pick them.
import { h, clear } from './dom.js';
import { STACK_MODULES, defaultOf, ownModules, targetsOffered } from './params.js';

export const baseArch = {};     // preset id -> architecture (from the core's presets)
export const catalogType = {};  // catalog id -> model_type

// Of the LoRA targets the page offers, the modules each family has (core/model/families.cpp; routed experts take no
// adapters; DeepSeek's latent attention has q_a_proj, kv_a_proj_with_mqa ... instead of q/k/v). Llama's otherwise.
const LLAMA_MODULES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const FAMILY_MODULES = {
  gpt2: ['c_attn', 'c_proj', 'c_fc'], starcoder2: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'c_fc', 'c_proj'],
  phi: ['q_proj', 'k_proj', 'v_proj'], phi3: ['o_proj', 'down_proj'], gptj: ['q_proj', 'k_proj', 'v_proj'],
  opt: ['q_proj', 'k_proj', 'v_proj'], exaone: ['q_proj', 'k_proj', 'v_proj', 'c_proj'], mpt: ['up_proj', 'down_proj'],
  gpt_neox: [], falcon: [], bloom: [], internlm2: [],
  deepseek_v2: ['o_proj', 'gate_proj', 'up_proj', 'down_proj'], deepseek_v3: ['o_proj', 'gate_proj', 'up_proj', 'down_proj'],
};

// Whose module names a role-by-role translation uses: a stack's, or transformers' Llama names.
export const stackOf = (framework) => (Object.hasOwn(STACK_MODULES, framework) ? framework : 'hf');

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
export function fitTargets(s) {
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
export function syncTargets(el, v, framework) {
  const offered = targetsOffered(framework);
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
