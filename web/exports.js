// The Export card: the launch files and commands the core writes for this run (only those whose tool can express
// it), one tab each, with Copy and Download. Download is a Blob URL made on the click: nothing leaves the browser.
import { $, h, clear } from './dom.js';
import { copy } from './share.js';

let list = [];
let selected = '';

const safeName = (name) => (/^[\w.-]{1,80}$/.test(String(name)) ? String(name) : 'vramcalc-export.txt');
const valid = (e) => e && typeof e === 'object' && ['id', 'title', 'filename', 'text'].every((k) => typeof e[k] === 'string');

// report: the core's {"exports": [...]} or {"errors": [...]}; null while a field is invalid; undefined while their
// module loads; false if it could not load. An error is never shown as it came: the card says what to do.
export function renderExports(report) {
  const ok = report && Array.isArray(report.exports);
  list = ok ? report.exports.filter(valid) : [];
  const note = $('export-note');
  note.hidden = ok && list.length > 0;
  note.textContent = note.hidden ? ''
    : report === undefined ? 'Writing the exports…'
      : report === false ? 'The exports could not be loaded: check the connection, then reload the page.'
        : !report ? 'Fix the highlighted settings first: the exports are written for a valid configuration.'
          : ok ? 'None of the exported tools can express this configuration as estimated.' : 'No export can be written for this configuration.';
  $('export-tabs').hidden = !list.length;
  $('export-panel').hidden = !list.length;
  if (!list.length) return;
  if (!list.some((e) => e.id === selected)) selected = list[0].id;
  // The same tabs are kept (an update between a press and its release would otherwise swallow the click).
  const key = JSON.stringify(list.map((e) => [e.id, e.title]));
  if (key !== tabsKey) buildTabs(key);
  showSelected();
}

let tabsKey = '';
function buildTabs(key) {
  tabsKey = key;
  const tabs = clear($('export-tabs'));
  for (const e of list) {
    const on = e.id === selected;
    tabs.append(h('button', { type: 'button', role: 'tab', class: 'tab', id: `export-tab-${e.id}`, dataset: { export: e.id },
      'aria-selected': String(on), 'aria-controls': 'export-panel', tabindex: on ? 0 : -1, onclick: () => select(e.id) }, e.title));
  }
}

function showSelected() {
  const e = list.find((x) => x.id === selected);
  if (!e) return;
  for (const t of $('export-tabs').children) {
    const on = t.dataset.export === selected;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
  }
  $('export-panel').setAttribute('aria-labelledby', `export-tab-${e.id}`);
  $('export-panel').dataset.export = e.id;
  $('export-file').textContent = safeName(e.filename);
  $('export-text').textContent = e.text;
}

function select(id, focus = false) {
  selected = id;
  showSelected();
  if (focus) $(`export-tab-${id}`).focus();
}

function download() {
  const e = list.find((x) => x.id === selected);
  if (!e) return;
  const url = URL.createObjectURL(new Blob([e.text], { type: 'text/plain;charset=utf-8' }));
  const a = h('a', { href: url, download: safeName(e.filename), hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  $('copy-status').textContent = `${safeName(e.filename)} downloaded.`;
}

export function initExports() {
  $('copy-export').addEventListener('click', () => {
    const e = list.find((x) => x.id === selected);
    if (e) copy(e.text, 'export-text', e.title);
  });
  $('download-export').addEventListener('click', download);
  // Arrows, Home and End move between the tabs (and show each).
  $('export-tabs').addEventListener('keydown', (ev) => {
    const i = list.findIndex((x) => x.id === selected);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: list.length - 1 }[ev.key];
    if (to === undefined || i < 0) return;
    ev.preventDefault();
    select(list[(to + list.length) % list.length].id, true);
  });
}
