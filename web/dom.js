// Tiny DOM helpers. Text goes in with textContent only: nothing from a link, a paste or the core is parsed as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof Node ? c : String(c));
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

export const $ = (id) => document.getElementById(id);

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// Bytes as people read them on GPU spec sheets (GiB; MiB below 1 GiB).
export function gib(bytes) {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—';
  const a = Math.abs(bytes);
  if (a >= 2 ** 30 * 0.95 || a === 0) return `${(bytes / 2 ** 30).toFixed(a >= 2 ** 30 * 100 ? 0 : 1)} GiB`;
  return `${(bytes / 2 ** 20).toFixed(a >= 2 ** 20 * 100 ? 0 : 1)} MiB`;
}

// A number as toLocaleString('en') writes it (thousands separators, at most `most` and at least `least` decimals),
// without the locale data a first toLocaleString loads (about 20 ms of a cold page's first estimate).
export function grouped(x, most = 0, least = 0) {
  // Rounded half away from zero on the shortest decimal form, as Intl does (5.05 to one decimal: 5.1).
  const a = Math.abs(x);
  const n = /e/.test(String(a)) ? NaN : Math.round(Number(`${a}e${most}`));
  const digits = Number.isSafeInteger(n) ? String(n).padStart(most + 1, '0') : a.toFixed(most).replace('.', '');
  const int = digits.slice(0, digits.length - most);
  const decimals = digits.slice(digits.length - most).replace(/0+$/, '').padEnd(least, '0');
  const sign = x < 0 && /[1-9]/.test(int + decimals) ? '-' : '';
  return sign + int.replace(/\B(?=(\d{3})+$)/g, ',') + (decimals ? '.' + decimals : '');
}

export function count(n) {
  if (n >= 1e9) return `${(n / 1e9).toFixed(n >= 1e11 ? 0 : 2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e8 ? 0 : 1)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} K`;
  return String(n);
}
