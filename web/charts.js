// Hand-written SVG: memory against one axis of the sweep, with the GPU's capacity as a line. The axes are chosen
// around where the curve crosses the capacity; x is logarithmic; each point is a keyboard-reachable button.
import { s, gib } from './dom.js';

const GiB = 2 ** 30;
const MAX_MB = 2 ** 20;
const MAX_SEQ = 2 ** 24;

function niceStep(max, ticks) {
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}

const pow2 = (lo, hi) => {
  const out = [];
  for (let v = lo; v <= hi; v *= 2) out.push(v);
  return out;
};
const sorted = (set, max) => [...set].filter((v) => Number.isInteger(v) && v >= 1 && v <= max).sort((a, b) => a - b);

// Micro-batches around the largest that fits (three octaves below, two above, every one up to 8), with it and the
// next one; 1 to 64 when not even 1 fits.
export function microBatchAxis(maxFit, current) {
  const k = maxFit >= 1 ? Math.round(Math.log2(maxFit)) : 4;
  const hi = Math.min(MAX_MB, 2 ** (k + 2));
  const lo = Math.max(1, Math.min(2 ** (k - 3), hi / 128));
  const out = new Set(pow2(lo, hi));
  for (let v = lo; v <= Math.min(hi, 8); v++) out.add(v);
  if (maxFit >= 1) out.add(maxFit).add(maxFit + 1);
  out.add(current);
  return sorted(out, MAX_MB);
}

// Sequence lengths around the longest that fits: a coarse sweep over powers of two finds the octave where the
// curve crosses the capacity; the axis spans three octaves below and two above, with quarter steps in that octave.
export function sequenceAxis(sweep, config, current) {
  const coarse = pow2(128, MAX_SEQ);
  const r = JSON.parse(sweep(JSON.stringify({ config, seq_len: coarse })));
  if (r.errors) return sorted(new Set([...pow2(256, 32768), current]), MAX_SEQ);
  const ys = r.total_bytes.map((row) => row[0]);
  const valid = coarse.filter((_, i) => ys[i] !== null);
  if (!valid.length) return sorted(new Set([current]), MAX_SEQ);
  let fit = -1;
  coarse.forEach((v, i) => { if (ys[i] !== null && ys[i] <= r.capacity_bytes) fit = v; });
  const last = valid[valid.length - 1];
  // Nothing fits at any length (the model states alone are too much): around the length set.
  const centre = fit > 0 ? fit : 2 ** Math.round(Math.log2(Math.min(Math.max(current, 128), last)));
  const hi = Math.min(last, centre * 4);
  const lo = Math.max(16, Math.min(centre / 8, hi / 128));
  const out = new Set(pow2(lo, hi));
  if (fit > 0 && fit < last) for (const q of [1.25, 1.5, 1.75]) out.add(Math.round(fit * q));
  out.add(current);
  return sorted(out, MAX_SEQ);
}

// xs: the axis values; ys: bytes (null where the point is not a valid configuration: left out); current: the x now
// set.
export function lineChart({ xs: allX, ys: allY, capacity, current, xLabel, title, onPick }) {
  const xs = allX.filter((_, i) => allY[i] !== null);
  const ys = allY.filter((y) => y !== null);
  const W = 520, H = 250, L = 52, R = 14, T = 16, B = 42;
  if (!xs.length) return s('svg', { viewBox: `0 0 ${W} 40`, class: 'chart', role: 'img', 'aria-label': title },
    s('text', { x: 8, y: 24, class: 'axis' }, `No valid ${xLabel} to draw`));
  // Linear while the data stay within 4 x the capacity; beyond, a logarithmic axis that reaches the highest point
  // (never a clipped flat line).
  const highest = Math.max(0, ...ys);
  const log = highest > capacity * 4;
  const maxY = Math.max(capacity * 1.08, highest) / GiB;
  const step = niceStep(maxY, 5);
  const top = log ? 2 ** Math.ceil(Math.log2(maxY * 1.05)) : Math.ceil(maxY / step) * step;
  const bottom = log ? 2 ** Math.floor(Math.log2(Math.max(Math.min(capacity, ...ys) / GiB, 1 / 64) * 0.9)) : 0;
  const lx = xs.map((v) => Math.log2(v));
  const x0 = Math.min(...lx), x1 = Math.max(...lx);
  const x = (i) => L + (x1 === x0 ? (W - L - R) / 2 : ((lx[i] - x0) * (W - L - R)) / (x1 - x0));
  const share = (g) => (log ? (Math.log2(Math.max(g, bottom)) - Math.log2(bottom)) / (Math.log2(top) - Math.log2(bottom)) : g / top);
  const y = (bytes) => T + (H - T - B) * (1 - Math.min(share(bytes / GiB), 1));
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'group', 'aria-label': title });
  svg.append(s('title', {}, title));
  svg.append(s('rect', { x: L, y: T, width: W - L - R, height: Math.max(0, y(capacity) - T), class: 'over' }));
  const ticks = [];
  if (log) for (let v = bottom, k = 0; v <= top * 1.0001; v *= 2, k++) ticks.push(v);
  else for (let v = 0; v <= top + 1e-9; v += step) ticks.push(v);
  const every = Math.ceil(ticks.length / 7);  // at most about seven labels
  ticks.forEach((v, i) => {
    svg.append(s('line', { x1: L, x2: W - R, y1: y(v * GiB), y2: y(v * GiB), class: 'grid' }));
    if (i % every === 0 || i === ticks.length - 1)
      svg.append(s('text', { x: L - 6, y: y(v * GiB) + 4, class: 'tick', 'text-anchor': 'end', 'aria-hidden': 'true' }, `${+v.toFixed(2)}`));
  });
  svg.dataset.scale = log ? 'log' : 'linear';
  svg.append(s('text', { x: 12, y: T + (H - T - B) / 2, class: 'axis', transform: `rotate(-90 12 ${T + (H - T - B) / 2})`,
    'text-anchor': 'middle', 'aria-hidden': 'true' }, log ? 'GiB per GPU (log scale)' : 'GiB per GPU'));
  const label = (v) => (v >= 1024 && v % 1024 === 0 ? `${v / 1024}K` : String(v));
  let lastTick = -Infinity;
  const currentX = xs.includes(current) ? x(xs.indexOf(current)) : -Infinity;
  xs.forEach((v, i) => {
    const px = x(i);
    const isPow = (v & (v - 1)) === 0;
    if (v === current || (isPow && px - lastTick >= 34 && Math.abs(px - currentX) >= 30)) {
      svg.append(s('text', { x: px, y: H - B + 16, class: v === current ? 'tick current' : 'tick', 'text-anchor': 'middle',
        'aria-hidden': 'true' }, label(v)));
      if (v !== current) lastTick = px;
    }
  });
  svg.append(s('text', { x: L + (W - L - R) / 2, y: H - 6, class: 'axis', 'text-anchor': 'middle', 'aria-hidden': 'true' }, xLabel));
  svg.append(s('line', { x1: L, x2: W - R, y1: y(capacity), y2: y(capacity), class: 'capacity' }));
  svg.append(s('text', { x: L + 6, y: y(capacity) - 5, class: 'capacity-label', 'text-anchor': 'start', 'aria-hidden': 'true' },
    `capacity ${gib(capacity)}`));
  svg.append(s('path', { d: ys.map((v, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(''), class: 'line' }));
  // One tab stop per chart (the current point); arrows move between points, Enter or Space uses one.
  const points = ys.map((v, i) => {
    const fits = v <= capacity;
    const text = `${xLabel} ${xs[i]}: ${gib(v)}, ${fits ? 'fits' : 'does not fit'}${xs[i] === current ? ' (current)' : ''}`;
    const c = s('circle', { cx: x(i), cy: y(v), r: xs[i] === current ? 6 : 4.5, role: 'button', 'aria-label': text,
      tabindex: xs[i] === current ? 0 : -1, dataset: { x: xs[i] },
      class: `pt ${fits ? 'good' : 'bad'}${xs[i] === current ? ' current' : ''}` });
    c.append(s('title', {}, text));
    if (onPick) c.addEventListener('click', () => onPick(xs[i]));
    svg.append(c);
    return c;
  });
  if (points.length && !points.some((p) => p.getAttribute('tabindex') === '0')) points[0].setAttribute('tabindex', '0');
  svg.addEventListener('keydown', (e) => {
    const i = points.indexOf(e.target);
    if (i < 0) return;
    const to = { ArrowRight: i + 1, ArrowUp: i + 1, ArrowLeft: i - 1, ArrowDown: i - 1, Home: 0, End: points.length - 1 }[e.key];
    if (to !== undefined) {
      e.preventDefault();
      const j = Math.max(0, Math.min(points.length - 1, to));
      points.forEach((p, k) => p.setAttribute('tabindex', k === j ? 0 : -1));
      points[j].focus();
    } else if ((e.key === 'Enter' || e.key === ' ') && onPick) {
      e.preventDefault();
      onPick(xs[i]);
    }
  });
  return svg;
}

// Draws a chart into its box; a point that had the focus keeps it (by its x) across the redraw.
export function drawChart(box, options) {
  const had = box.contains(document.activeElement) ? document.activeElement.dataset.x : undefined;
  while (box.firstChild) box.firstChild.remove();
  const svg = lineChart(options);
  box.append(svg);
  if (had !== undefined) {
    const pt = svg.querySelector(`[data-x="${Number(had)}"]`) || svg.querySelector('[tabindex="0"]');
    if (pt) {
      for (const p of svg.querySelectorAll('.pt')) p.setAttribute('tabindex', p === pt ? 0 : -1);
      pt.focus();
    }
  }
}
