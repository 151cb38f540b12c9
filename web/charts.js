// Hand-written SVG: memory against one axis of the sweep, with the GPU's capacity as a line.
import { s, gib } from './dom.js';

function niceStep(max, ticks) {
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}

// xs: the axis values; ys: bytes (null where the point is not a valid configuration); current: the x now set.
export function lineChart({ xs, ys, capacity, current, xLabel, title, onPick }) {
  const W = 520, H = 250, L = 52, R = 14, T = 16, B = 42;
  const valid = ys.filter((y) => y !== null);
  const GiB = 2 ** 30;
  const maxY = Math.max(capacity * 1.08, ...valid) / GiB;
  const step = niceStep(maxY, 5);
  const top = Math.ceil(maxY / step) * step;
  const x = (i) => L + (xs.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (xs.length - 1));
  const y = (bytes) => T + (H - T - B) * (1 - bytes / GiB / top);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title });
  svg.append(s('title', {}, title));
  // Over capacity: shaded.
  svg.append(s('rect', { x: L, y: T, width: W - L - R, height: Math.max(0, y(capacity) - T), class: 'over' }));
  for (let v = 0; v <= top + 1e-9; v += step) {
    svg.append(s('line', { x1: L, x2: W - R, y1: y(v * GiB), y2: y(v * GiB), class: 'grid' }));
    svg.append(s('text', { x: L - 6, y: y(v * GiB) + 4, class: 'tick', 'text-anchor': 'end' }, `${+v.toFixed(2)}`));
  }
  svg.append(s('text', { x: 12, y: T + (H - T - B) / 2, class: 'axis', transform: `rotate(-90 12 ${T + (H - T - B) / 2})`,
    'text-anchor': 'middle' }, 'GiB per GPU'));
  const every = Math.ceil(xs.length / 9);
  xs.forEach((v, i) => {
    if (i % every === 0 || v === current)
      svg.append(s('text', { x: x(i), y: H - B + 16, class: v === current ? 'tick current' : 'tick', 'text-anchor': 'middle' },
        v >= 1024 && v % 1024 === 0 ? `${v / 1024}K` : String(v)));
  });
  svg.append(s('text', { x: L + (W - L - R) / 2, y: H - 6, class: 'axis', 'text-anchor': 'middle' }, xLabel));
  svg.append(s('line', { x1: L, x2: W - R, y1: y(capacity), y2: y(capacity), class: 'capacity' }));
  svg.append(s('text', { x: L + 6, y: y(capacity) - 5, class: 'capacity-label', 'text-anchor': 'start' },
    `capacity ${gib(capacity)}`));
  let d = '';
  ys.forEach((v, i) => {
    if (v === null) return;
    d += `${d && ys[i - 1] !== null ? 'L' : 'M'}${x(i).toFixed(1)},${y(Math.min(v, top * GiB)).toFixed(1)}`;
  });
  svg.append(s('path', { d, class: 'line' }));
  ys.forEach((v, i) => {
    if (v === null) return;
    const c = s('circle', { cx: x(i), cy: y(Math.min(v, top * GiB)), r: xs[i] === current ? 6 : 3.5,
      class: `pt ${v > capacity ? 'bad' : 'good'}${xs[i] === current ? ' current' : ''}` });
    c.append(s('title', {}, `${xLabel} ${xs[i]}: ${gib(v)}${v > capacity ? ' (does not fit)' : ''}`));
    if (onPick) c.addEventListener('click', () => onPick(xs[i]));
    svg.append(c);
  });
  return svg;
}
