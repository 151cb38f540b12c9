// LoRA targets: the chips that pick them, from the model's own module names as the core reads them.
import { h, clear } from './dom.js';
import { defaultOf, modulesOf } from './params.js';

export const baseArch = {};     // preset id -> architecture (from the core's presets)

// Keeps the targets the model has; else the core's default for it (its query and value projections, its fused
// one, or all-linear).
export function fitTargets(s) {
  const names = modulesOf(s);
  const kept = String(s.targets).split(',').filter((t) => names.includes(t));
  return kept.length ? kept.join(',') : defaultOf(s, 'targets');
}

// The target chips: the model's module names (with any a link gave that it lacks, so they can be unticked).
export function syncTargets(el, v, s) {
  const offered = modulesOf(s);
  const on = new Set(String(v).split(','));
  const extra = [...on].filter((t) => t && !offered.includes(t));
  const want = [...offered.filter((t) => t !== 'all-linear'), ...extra, 'all-linear'];
  const have = [...el.querySelectorAll('input')].map((c) => c.value);
  if (have.join(',') !== want.join(',')) {
    clear(el);
    for (const t of want) el.append(h('label', { class: 'chip' }, h('input', { type: 'checkbox', value: t, dataset: { key: 'targets' } }), t));
  }
  for (const c of el.querySelectorAll('input')) c.checked = on.has(c.value);
}
