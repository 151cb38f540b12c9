// One step of the core's scalar AdamW reference on numbers the user types: m, v and the update in fp32, and what
// a bf16 copy of the weight sees. Shows why optimizer states and master weights stay in fp32.
import { $, h, clear } from './dom.js';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
// Round a float32 to bfloat16, nearest even (what .to(torch.bfloat16) does). Display only.
export function bf16(x) {
  f32[0] = x;
  const u = u32[0];
  if ((u & 0x7f800000) === 0x7f800000) return f32[0];
  u32[0] = (u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000;
  return f32[0];
}

const num = (v) => (typeof v === 'string' ? (v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : Number(v)) : v);
function show(x) {
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return '0';
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e5 ? String(+x.toPrecision(8)) : x.toExponential(6);
}

const FIELDS = [
  ['lr', 'Learning rate', '1e-5'], ['beta1', 'β₁', '0.9'], ['beta2', 'β₂', '0.999'], ['eps', 'ε', '1e-8'],
  ['weight_decay', 'Weight decay', '0.01'], ['steps', 'Steps (same gradient)', '1'],
];

function list(text) {
  return text.split(/[\s,;]+/).filter(Boolean).map((t) => (/^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) ? Number(t) : t));
}

export function initAdamw(mod) {
  const form = $('adamw-form');
  const grid = h('div', { class: 'adamw-grid' });
  for (const [key, label, value] of FIELDS) {
    grid.append(h('div', { class: 'field' }, h('label', { for: 'aw-' + key }, label),
      h('input', { id: 'aw-' + key, type: 'text', inputmode: 'decimal', value, autocomplete: 'off', 'aria-describedby': 'awe-' + key }),
      h('p', { class: 'field-error', id: 'awe-' + key })));
  }
  form.append(grid,
    h('div', { class: 'field' }, h('label', { for: 'aw-param' }, 'Parameters (fp32 master weights)'),
      h('input', { id: 'aw-param', type: 'text', value: '1.0, 0.0125, -3.5, 250', autocomplete: 'off', 'aria-describedby': 'awe-param' }),
      h('p', { class: 'field-error', id: 'awe-param' })),
    h('div', { class: 'field' }, h('label', { for: 'aw-grads' }, 'Gradients'),
      h('input', { id: 'aw-grads', type: 'text', value: '0.002, -0.5, 1e-4, 3', autocomplete: 'off', 'aria-describedby': 'awe-grads' }),
      h('p', { class: 'field-error', id: 'awe-grads' })),
    h('div', { class: 'checks' },
      h('label', { class: 'check' }, h('input', { id: 'aw-amsgrad', type: 'checkbox' }), h('span', {}, 'AMSGrad')),
      h('label', { class: 'check' }, h('input', { id: 'aw-maximize', type: 'checkbox' }), h('span', {}, 'Maximize'))),
    h('p', { class: 'field-error', id: 'awe-general' }));
  form.addEventListener('input', () => run(mod));
  form.addEventListener('submit', (e) => e.preventDefault());
  run(mod);
}

function run(mod) {
  const val = (k) => $('aw-' + k).value.trim();
  const n = (k) => { const t = val(k); return /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) ? Number(t) : t; };
  for (const el of document.querySelectorAll('#adamw-form .field-error')) el.textContent = '';
  const param = list(val('param'));
  const grad = list(val('grads'));
  let steps = n('steps');
  if (!Number.isInteger(steps) || steps < 1 || steps > 1000) {
    $('awe-steps').textContent = 'must be an integer from 1 to 1000';
    steps = 1;
  }
  const request = { lr: n('lr'), betas: [n('beta1'), n('beta2')], eps: n('eps'), weight_decay: n('weight_decay'),
    amsgrad: $('aw-amsgrad').checked, maximize: $('aw-maximize').checked, precision: 'bf16',
    param, grads: Array.from({ length: steps }, () => grad) };
  const out = JSON.parse(mod.adamwStep(JSON.stringify(request)));
  const table = clear($('adamw-table'));
  const note = clear($('adamw-note'));
  if (out.errors) {
    for (const e of out.errors) {
      const f = String(e.field);
      const id = f.startsWith('betas') ? (f.includes('1]') ? 'awe-beta2' : 'awe-beta1')
        : f.startsWith('param') ? 'awe-param' : f.startsWith('grads') ? 'awe-grads'
          : $('awe-' + f) ? 'awe-' + f : 'awe-general';
      const el = $(id);
      el.textContent = (el.textContent ? el.textContent + ' · ' : '') + (id === 'awe-general' && f ? `${f}: ` : '') + e.message;
    }
    table.append(h('caption', {}, 'Fix the inputs above to run the step.'));
    return;
  }
  const count = Math.min(param.length, 8);
  const cols = Array.from({ length: count }, (_, i) => i);
  const p0 = param.map((x) => Math.fround(num(x)));
  const p1 = out.param.map(num);
  const m = out.exp_avg.map(num);
  const v = out.exp_avg_sq.map(num);
  const p16 = out.param_16bit.map(num);
  const rows = [
    ['m (exp_avg), fp32', (i) => show(m[i])],
    ['m rounded to bf16', (i) => show(bf16(m[i])), (i) => bf16(m[i]) !== m[i]],
    ['v (exp_avg_sq), fp32', (i) => show(v[i])],
    ['v rounded to bf16', (i) => show(bf16(v[i])), (i) => bf16(v[i]) !== v[i]],
    ['update, fp32 master', (i) => show(p1[i] - p0[i])],
    ['weight after, fp32 master', (i) => show(p1[i])],
    ['weight after, bf16 copy', (i) => show(p16[i])],
    ['update seen by a bf16 weight', (i) => show(p16[i] - bf16(p0[i])), (i) => p16[i] - bf16(p0[i]) !== p1[i] - p0[i]],
  ];
  table.append(h('caption', {}, `After ${out.steps} step${out.steps > 1 ? 's' : ''} of torch.optim.AdamW (core reference, fp32 state, bf16 weights)`));
  table.append(h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, ''), cols.map((i) => h('th', { scope: 'col', class: 'num' }, `w${i} = ${show(p0[i])}`)))));
  const body = h('tbody');
  for (const [label, f, lossy] of rows)
    body.append(h('tr', {}, h('th', { scope: 'row' }, label), cols.map((i) => h('td', { class: `num${lossy && lossy(i) ? ' lossy' : ''}` }, f(i)))));
  table.append(body);
  const lost = cols.filter((i) => p1[i] !== p0[i] && p16[i] === bf16(p0[i]));
  if (lost.length)
    note.append(h('strong', {}, `${lost.map((i) => 'w' + i).join(', ')}: the update is smaller than half a bf16 step at that magnitude, so a bf16 weight does not move at all. `),
      'The fp32 master weight keeps it, and the next steps add up; that is why mixed precision keeps master weights in fp32.');
  else note.append('Every weight moved in bf16 too. Lower the learning rate or raise a weight’s magnitude to see a bf16 weight miss its update.');
  note.append(' m and v stay in fp32 too: v is a running mean of squared gradients that spans many orders of magnitude, and bf16 keeps only 8 bits of mantissa (highlighted cells lost precision).');
}
