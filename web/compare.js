// Compare: a pinned configuration A beside the current one, B — totals, fits, and each term at the peak with B − A.
import { h, clear, gib } from './dom.js';
import { TERMS, phaseName, stepText, rate, money } from './answer.js';

const signed = (bytes) => (bytes === 0 ? '0' : `${bytes > 0 ? '+' : '−'}${gib(Math.abs(bytes))}`);

// The settings of two link queries that differ, as "key: A → B" (values are checked link values, shown as text).
export function differences(queryA, queryB) {
  const a = new URLSearchParams(queryA);
  const b = new URLSearchParams(queryB);
  const out = [];
  for (const k of new Set([...a.keys(), ...b.keys()]))
    if (a.get(k) !== b.get(k)) out.push(`${k}: ${a.get(k) ?? 'default'} → ${b.get(k) ?? 'default'}`);
  return out;
}

function bytesCell(col, bytes) {
  return h('td', { class: 'num', dataset: { col, bytes: String(bytes) } }, gib(bytes));
}

// a, b: the two estimates (b: the last valid one when the form is invalid, marked stale).
export function renderCompare(box, { a, b, summaryA, changed, stale, embed, onUnpin }) {
  clear(box);
  box.hidden = !a;
  if (!a) return;
  const head = h('div', { class: 'card-head' }, h('h3', { id: 'compare-h' }, 'A (pinned) and B (now)'),
    embed ? null : h('button', { type: 'button', class: 'small', id: 'unpin', onclick: onUnpin }, 'Unpin'));
  box.append(head, h('p', { class: 'compare-a' }, h('strong', {}, 'A: '), summaryA));
  box.append(h('p', { class: 'compare-changed' }, changed.length ? `B changes ${changed.join(', ')}.` : 'B is the same as A.'));
  if (a.errors) {
    box.append(h('p', { class: 'field-error' }, `A is not a valid configuration: ${a.errors.map((e) => `${e.field}: ${e.message}`).join(' · ')}`));
    return;
  }
  if (!b) return;
  const row = (key, label, ...cells) => h('tr', { dataset: { row: key } }, h('th', { scope: 'row' }, label), ...cells);
  const fitCell = (col, r) => h('td', { class: 'num', dataset: { col, fits: String(r.fits) } },
    h('span', { class: 'badge small', dataset: { fits: String(r.fits) } }, r.fits ? 'Fits' : 'Does not fit'));
  const body = h('tbody', {},
    row('total', 'Total per GPU', bytesCell('a', a.total_bytes), bytesCell('b', b.total_bytes),
      bytesCell('diff', b.total_bytes - a.total_bytes)),
    row('fits', 'Fits', fitCell('a', a), fitCell('b', b), h('td')),
    row('headroom', 'Headroom', bytesCell('a', a.headroom_bytes), bytesCell('b', b.headroom_bytes),
      bytesCell('diff', b.headroom_bytes - a.headroom_bytes)),
    row('peak', 'Peak during', h('td', { class: 'num' }, phaseName(a.peak_phase)), h('td', { class: 'num' }, phaseName(b.peak_phase)), h('td')));
  for (const k of Object.keys(TERMS)) {
    const x = a.per_gpu_bytes[k] || 0;
    const y = b.per_gpu_bytes[k] || 0;
    if (!x && !y) continue;
    body.append(row(k, h('span', {}, h('span', { class: `swatch t-${k}`, 'aria-hidden': 'true' }), ' ', TERMS[k][0]),
      bytesCell('a', x), bytesCell('b', y), bytesCell('diff', y - x)));
  }
  // More memory is worse, more headroom better.
  for (const cell of body.querySelectorAll('td[data-col=diff]')) {
    const d = Number(cell.dataset.bytes) * (cell.parentElement.dataset.row === 'headroom' ? -1 : 1);
    cell.textContent = signed(Number(cell.dataset.bytes));
    cell.classList.toggle('worse', d > 0);
    cell.classList.toggle('better', d < 0);
  }
  // Time and cost: B − A as a change in percent (a longer step and a higher cost are worse, more tokens/s better).
  const known = (x) => typeof x === 'number' && Number.isFinite(x);
  const timed = [['step_time', 'Step time', (r) => r.step_time_s, (r) => stepText(r.step_time_s, r.step_time_is_lower_bound), 1],
    ['tokens_per_s', 'Tokens/s', (r) => r.tokens_per_s, (r) => rate(r.tokens_per_s), -1],
    ['cost', 'Cost', (r) => r.cost, (r) => money(r.cost), 1]];
  for (const [key, label, value, text, sign] of timed) {
    const x = value(a);
    const y = value(b);
    if (!known(x) && !known(y)) continue;
    const pct = known(x) && known(y) && x > 0 ? Math.round((y / x - 1) * 100) : null;
    const diff = h('td', { class: 'num', dataset: { col: 'change' } }, pct === null ? '' : pct === 0 ? '0%' : `${pct > 0 ? '+' : '−'}${Math.abs(pct)}%`);
    diff.classList.toggle('worse', pct * sign > 0);
    diff.classList.toggle('better', pct * sign < 0);
    body.append(row(key, label, h('td', { class: 'num', dataset: { col: 'a', value: String(x ?? '') } }, text(a)),
      h('td', { class: 'num', dataset: { col: 'b', value: String(y ?? '') } }, text(b)), diff));
  }
  const table = h('table', { id: 'compare-table', class: `compare-table${stale ? ' stale' : ''}` },
    h('caption', { class: 'visually-hidden' }, 'A and B per GPU, at each one’s peak'),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Term')),
      h('th', { scope: 'col', class: 'num' }, 'A'), h('th', { scope: 'col', class: 'num' }, 'B'),
      h('th', { scope: 'col', class: 'num' }, 'B − A'))),
    body);
  box.append(h('div', { class: 'scroll' }, table));
}
