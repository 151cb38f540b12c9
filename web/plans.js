// "Make it fit": the planner's plans for a configuration that does not fit (core/advice/planner.cpp), from its own
// WebAssembly module, fetched the first time plans are asked for. One click applies a whole plan.
import { $, h, clear, gib } from './dom.js';
import { stepText, timeChange } from './answer.js';

let planner = null;  // the module's promise
const loadPlanner = () => (planner ||= import('./vramcalc-plan.js').then((m) => m.default()));

let asked = '';  // the configuration the plans shown are for
// Shows the section where the run does not fit; plans already searched for another configuration are dropped.
export function showMakeFit(report, configText) {
  $('make-fit').hidden = report.fits;
  if (asked && asked !== configText) {
    asked = '';
    clear($('plans'));
    clear($('plans-training'));
    $('plans-training-h').hidden = true;
    $('plans-state').textContent = '';
  }
}

function planItem(p, base, onApply) {
  const change = timeChange(p.step_time_s, base.step_time_s);
  const time = p.step_time_s ? `${stepText(p.step_time_s, p.step_time_is_lower_bound)} per step${change ? ` (${change})` : ''}` : '';
  const text = p.changes.map((c) => c.change).join(' + ');
  return h('li', {}, h('button', { type: 'button', class: 'suggest', onclick: () => onApply(p, text) },
    h('span', { class: 'change' }, text),
    h('span', { class: 'result ok' }, `→ ${gib(p.total_bytes)} · fits`),
    h('span', { class: 'time' }, time)));
}

// Searches the plans for `config` (keeping the method first: the fast search; then those that change what is
// trained) and lists them; onApply(plan, text) applies one.
export async function searchPlans(config, base, onApply) {
  const text = JSON.stringify(config);
  asked = text;
  const state = $('plans-state');
  state.textContent = 'Loading the planner…';
  let mod;
  try {
    mod = await loadPlanner();
  } catch (err) {
    console.error('vramcalc: the planner module did not load', err);
    planner = null;
    state.textContent = 'The planner could not be loaded: check the connection, then search again.';
    return;
  }
  if (asked !== text) return;
  state.textContent = 'Searching…';
  await new Promise((ok) => setTimeout(ok, 0));  // the status paints first
  const kept = JSON.parse(mod.plan(JSON.stringify({ ...config, plan: { keep_method: true } })));
  if (asked !== text) return;
  const list = clear($('plans'));
  if (kept.errors) {
    state.textContent = `No plan: ${kept.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`;
    return;
  }
  for (const p of kept.plans) list.append(planItem(p, base, onApply));
  state.textContent = kept.plans.length ? '' : 'No combination of the known changes fits on these GPUs without changing what is trained.';
  await new Promise((ok) => setTimeout(ok, 0));
  const all = JSON.parse(mod.plan(text));
  if (asked !== text || all.errors) return;
  const other = clear($('plans-training'));
  for (const p of all.plans_changing_training) other.append(planItem(p, base, onApply));
  $('plans-training-h').hidden = all.plans_changing_training.length === 0;
}
