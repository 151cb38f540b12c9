// "The step, moment by moment": the estimate's timeline (vramcalc estimate --timeline, the details' module's
// timeline()), one row per moment in the step's order with its live bytes by category, the allocator's reserved
// figure and the card's capacity marked on the same scale.
import { $, h, clear, gib } from './dom.js';
import { TERMS, phaseName } from './answer.js';

const num = (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

function mark(kind, at, text) {
  const m = h('span', { class: `mark ${kind}`, title: text, 'aria-hidden': 'true' });
  m.style.left = `${Math.min(100, at * 100)}%`;
  return m;
}

export function renderTimeline(t) {
  const box = $('timeline-box');
  const moments = t && Array.isArray(t.moments) ? t.moments.filter((m) => m && typeof m === 'object') : [];
  box.hidden = !moments.length;
  if (box.hidden) return;
  const reserved = num(t.peak_reserved_bytes), capacity = num(t.capacity_bytes);
  const scale = Math.max(capacity, reserved, ...moments.map((m) => num(m.allocated_bytes))) || 1;
  const body = clear($('timeline'));
  for (const m of moments) {
    const bytes = m.per_gpu_bytes && typeof m.per_gpu_bytes === 'object' ? m.per_gpu_bytes : {};
    const terms = Object.keys(TERMS).filter((k) => num(bytes[k]) > 0);
    const peak = m.name === t.peak_moment;
    const label = typeof m.label === 'string' && m.label ? m.label : phaseName(String(m.name));
    const stack = h('span', { class: 'stack', role: 'img', 'aria-label':
      `${label}: ${terms.map((k) => `${TERMS[k][0]} ${gib(num(bytes[k]))}`).join(', ')}` });
    for (const k of terms) {
      const seg = h('span', { class: `seg t-${k}`, title: `${TERMS[k][0]}: ${gib(num(bytes[k]))}` });
      seg.style.width = `${(num(bytes[k]) / scale) * 100}%`;
      stack.append(seg);
    }
    stack.append(mark('reserved', reserved / scale, `reserved ${gib(reserved)}`),
      mark('capacity', capacity / scale, `capacity ${gib(capacity)}`));
    body.append(h('tr', { class: peak ? 'peak' : '', dataset: { moment: String(m.name), phase: String(m.phase), bytes: String(num(m.allocated_bytes)) } },
      h('th', { scope: 'row' }, label, peak ? h('span', { class: 'tag' }, 'peak') : null),
      h('td', { class: 'num' }, gib(num(m.allocated_bytes))), h('td', { class: 'bar-cell' }, stack)));
  }
  $('timeline-marks').textContent = `Reserved ${gib(reserved)} (flat through a steady-state step: the allocator keeps ` +
    `its segments), capacity ${gib(capacity)}.`;
}
