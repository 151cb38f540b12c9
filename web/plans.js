// "Make it fit": the planner's plans for a configuration that does not fit, and which GPUs to rent for the run
// (core/advice/planner.cpp), from its own WebAssembly module in a worker, fetched the first time either is asked
// for. One click applies a whole plan.
import { $, h, s, clear, gib, grouped } from './dom.js';
import { stepText, timeChange } from './answer.js';

// The planner's module runs in a worker (plan_worker.js), started the first time a plan is asked for.
let worker = null;
let calls = 0;
const waiting = new Map();  // call id -> resolve
function callPlanner(fn, text) {
  if (!worker) {
    worker = new Worker(new URL('./plan_worker.js', import.meta.url), { type: 'module' });
    worker.onmessage = ({ data }) => { waiting.get(data.id)?.(data); waiting.delete(data.id); };
    worker.onerror = () => { for (const done of waiting.values()) done({ failed: true }); waiting.clear(); worker = null; };
  }
  const id = ++calls;
  return new Promise((ok) => { waiting.set(id, ok); worker.postMessage({ id, fn, text }); });
}

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

// One call to the planner for the request `text`, with its status in `state`: the core's answer, or null when the
// module did not load, the core refused it (its errors shown) or `current()` no longer names this request.
async function ask(fn, text, state, current) {
  const answer = await callPlanner(fn, text);
  if (!current()) return null;
  if (answer.failed) {
    state.textContent = 'The planner could not be loaded: check the connection, then try again.';
    return null;
  }
  const r = JSON.parse(answer.json);
  if (r.errors) {
    state.textContent = r.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    return null;
  }
  return r;
}

// Searches the plans for `config` (keeping the method first: the fast search; then those that change what is
// trained) and lists them; onApply(plan, text) applies one.
export async function searchPlans(config, base, onApply) {
  const text = JSON.stringify(config);
  asked = text;
  const state = $('plans-state');
  state.textContent = 'Searching…';
  const current = () => asked === text;
  const list = clear($('plans'));
  const kept = await ask('plan', JSON.stringify({ ...config, plan: { keep_method: true } }), state, current);
  if (!kept) return;
  for (const p of kept.plans) list.append(planItem(p, base, onApply));
  state.textContent = kept.plans.length ? '' : 'No combination of the known changes fits on these GPUs without changing what is trained.';
  const all = await ask('plan', text, state, current);
  if (!all) return;
  const other = clear($('plans-training'));
  for (const p of all.plans_changing_training) other.append(planItem(p, base, onApply));
  $('plans-training-h').hidden = all.plans_changing_training.length === 0;
}

// Which GPUs to rent for the run (core/advice/planner.cpp size_run): each catalog GPU at 1, 2, 4, 8 ... GPUs with
// its fastest plan, hours, GPU-hours and cost, cheapest first; onApply(plan, text) takes one.
let sized = '';
export async function sizeRun(config, onApply) {
  const text = JSON.stringify(config);
  sized = text;
  const state = $('sizing-state');
  const table = $('sizing-table');
  state.textContent = 'Ranking the GPUs… (a few seconds)';
  const body = clear($('sizing-rows'));
  table.hidden = true;
  clear($('sizing-chart'));
  const r = await ask('sizing', text, state, () => sized === text);
  if (!r) return;
  const fitting = r.options.filter((o) => o.fits);
  state.textContent = `${fitting.length} of ${r.options.length} GPU counts fit; the first ${Math.min(12, fitting.length)}, ` +
    (config.price_per_gpu_hour ? 'cheapest first.' : 'fewest GPU-hours first (give prices per GPU-hour to rank by cost).');
  for (const o of fitting.slice(0, 12)) {
    const changes = o.plan.changes.map((c) => c.change).join(' + ') || 'as it is';
    body.append(h('tr', {},
      h('th', { scope: 'row' }, `${o.gpus} × ${o.gpu_name}`),
      h('td', { class: 'num' }, o.hours == null ? '—' : grouped(o.hours, 1)),
      h('td', { class: 'num' }, o.gpu_hours == null ? '—' : grouped(o.gpu_hours, 1)),
      h('td', { class: 'num' }, o.cost != null ? grouped(o.cost) : '—'),
      h('td', {}, h('button', { type: 'button', class: 'linklike', onclick: () => onApply(o.plan, `${o.gpus} × ${o.gpu_name}: ${changes}`) }, changes))));
  }
  table.hidden = fitting.length === 0;
  drawSizing(fitting.filter((o) => o.hours != null), !!config.price_per_gpu_hour);
}

// Hours against cost (or GPU-hours without prices), both logarithmic, one point per option that fits and is timed;
// the options no cheaper one beats on time (pareto) drawn solid. The table above is its text.
function drawSizing(options, priced) {
  const box = clear($('sizing-chart'));
  const xOf = (o) => (priced && o.cost != null ? o.cost : o.gpu_hours);
  options = options.filter((o) => xOf(o) > 0 && o.hours > 0);  // a GPU priced 0 has no place on a log axis
  if (options.length < 2) return;
  const W = 520, H = 240, L = 56, R = 30, T = 12, B = 40;
  const xs = options.map((o) => Math.log10(xOf(o))), ys = options.map((o) => Math.log10(o.hours));
  const span = (v) => { const lo = Math.floor(Math.min(...v)), hi = Math.ceil(Math.max(...v)); return [lo, hi > lo ? hi : lo + 1]; };
  const [x0, x1] = span(xs), [y0, y1] = span(ys);
  const px = (v) => L + ((v - x0) * (W - L - R)) / (x1 - x0), py = (v) => T + (H - T - B) * (1 - (v - y0) / (y1 - y0));
  const label = priced ? 'cost' : 'GPU-hours';
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart sizing-chart', role: 'img',
    'aria-label': `Hours against ${label} for ${options.length} GPU counts (the table lists them)` });
  for (let e = x0; e <= x1; e++) {
    svg.append(s('line', { x1: px(e), x2: px(e), y1: T, y2: H - B, class: 'grid' }));
    svg.append(s('text', { x: px(e), y: H - B + 14, class: 'tick', 'text-anchor': 'middle' }, grouped(10 ** e, 3)));
  }
  for (let e = y0; e <= y1; e++) {
    svg.append(s('line', { x1: L, x2: W - R, y1: py(e), y2: py(e), class: 'grid' }));
    svg.append(s('text', { x: L - 6, y: py(e) + 4, class: 'tick', 'text-anchor': 'end' }, grouped(10 ** e, 3)));
  }
  svg.append(s('text', { x: L + (W - L - R) / 2, y: H - 6, class: 'axis', 'text-anchor': 'middle' }, `${label} (log scale)`));
  svg.append(s('text', { x: 12, y: T + (H - T - B) / 2, class: 'axis', 'text-anchor': 'middle',
    transform: `rotate(-90 12 ${T + (H - T - B) / 2})` }, 'hours (log scale)'));
  options.forEach((o, i) => {
    const c = s('circle', { cx: px(xs[i]), cy: py(ys[i]), r: 4.5, class: `pt ${o.pareto ? 'good' : 'other'}` });
    c.append(s('title', {}, `${o.gpus} × ${o.gpu_name}: ${o.hours} h, ${xOf(o)} ${label}`));
    svg.append(c);
  });
  box.append(svg);
}
