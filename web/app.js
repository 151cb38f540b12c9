// vramcalc page: the form, the update loop, share links, history and the pinned comparison. All arithmetic is the
// core's (WebAssembly).
import { $, h, clear, gib, count } from './dom.js';
import {
  CHOICES, ARCH_KEYS, DEFAULTS, ROWS, LINK_OF, PARAM_ORDER, ZERO, MAX_GPUS, FOLLOWERS, defaultOf, describeState, applies, holds,
  isUnset, initialState, toConfig, toQuery,
  fromQuery, applyPatch, applyProfile, follow, readSchema, rolesOf, translateTargets, compactHf, clip, findModel, readView,
} from './params.js';
import { LABELS, UNSET_LABELS, zeroLabel, buildFields, FIELDS, FIELD, FORM_GROUPS, fid, eid, nid } from './fields.js';
import { renderAnswer, renderSuggestions, summaryLine } from './answer.js';
import { renderCompare, differences } from './compare.js';
import { initHistory, record, madeBy } from './history.js';
import { initFrame } from './frame.js';
import { embedCodes, copy } from './share.js';
import { loadCalculator } from './load.js';
import { showFieldErrors, showLinkProblems } from './errors.js';
import { baseArch, fitTargets, syncTargets } from './targets.js';

let mod;             // the page's WebAssembly module (wasm/bindings.cpp)
let details = null;  // details.js, loaded after the first estimate
let more = null;     // the evidence's and exports' WebAssembly module (wasm/details_bindings.cpp), fetched on demand; false if it failed
let presets;
let catalog = [];
let state = initialState();
let look = readView(location.search);  // {embed, theme, view}
let fieldErrors = new Map();
let lastResult = null;
let pinned = null;      // the state of configuration A, or null
let commitNext = null;  // the next update completes a change: {via} (a suggestion's text, or null)
initFrame(look);

// ---------- the form ----------

// A choice's labels: the schema's, and the page's own for its "unset" values.
const labelsOf = (key) => ({ ...(LABELS[key] || {}), ...(UNSET_LABELS[key] || {}) });

function options(key) {
  const labels = labelsOf(key);
  return CHOICES[key].map((v) => [v, labels[v] || v]);
}

function buildControl(f) {
  const id = fid(f.key);
  const describedBy = `${eid(f.key)} ${nid(f.key)}${f.hint ? ' h-' + id : ''}`;
  const common = { id, name: f.key, 'aria-describedby': describedBy, dataset: { key: f.key } };
  switch (f.kind) {
    case 'select': return h('select', common, options(f.key).map(([v, t]) => h('option', { value: v }, t)));
    case 'tristate': return h('select', common, ['', 'true', 'false'].map((v) => h('option', { value: v }, UNSET_LABELS[f.key][v])));
    case 'zero': return h('select', common);
    case 'model': {
      // A searchable field: the presets, the catalog's Hugging Face ids, and the two other ways to give a model.
      const list = h('datalist', { id: 'model-list' });
      for (const m of presets.models) list.append(h('option', { value: m.id }, `${m.name} · ${count(m.parameters)} · preset`));
      for (const m of catalog) {
        list.append(h('option', { value: m.id }, [m.model_type, m.parameters ? count(m.parameters) : ''].filter(Boolean).join(' · ')));
      }
      list.append(h('option', { value: 'custom' }, 'Custom architecture…'), h('option', { value: 'hf' }, 'Paste a Hugging Face config.json…'));
      const input = h('input', { ...common, type: 'text', list: 'model-list', autocomplete: 'off', spellcheck: 'false',
        autocapitalize: 'off', maxlength: 512, placeholder: 'e.g. Qwen/Qwen3-8B or llama-2-7b',
        onfocus: (e) => e.target.select() });
      const other = h('div', { class: 'model-other' },
        h('button', { type: 'button', class: 'small', dataset: { model: 'custom' }, onclick: () => pickModel('custom') }, 'Custom architecture'),
        h('button', { type: 'button', class: 'small', dataset: { model: 'hf' }, onclick: () => pickModel('hf') }, 'Paste config.json'));
      const results = h('ul', { id: 'model-results', class: 'model-results', 'aria-label': 'Models of that name', hidden: true });
      return h('div', { class: 'model-pick' }, input, list, results, other);
    }
    case 'gpu': {
      const sel = h('select', common);
      const list = [...presets.gpus].sort((a, b) => (b.id.startsWith('a100-') && !b.id.endsWith('pcie')) - (a.id.startsWith('a100-') && !a.id.endsWith('pcie')));
      for (const g of list) sel.append(h('option', { value: g.id }, `${g.name} · ${Math.round(g.memory_gib)} GiB usable`));
      sel.append(h('option', { value: 'custom' }, 'Custom GPU…'));
      return sel;
    }
    case 'bool': return h('input', { ...common, type: 'checkbox' });
    case 'hf': return h('textarea', { ...common, rows: 6, spellcheck: 'false', autocomplete: 'off',
      placeholder: '{"model_type": "llama", "hidden_size": 4096, ...}' });
    case 'targets': {
      return h('div', { id, class: 'targets', role: 'group', 'aria-describedby': describedBy, 'aria-label': f.label });
    }
    case 'text': return h('input', { ...common, type: 'text', maxlength: f.maxlength || 60, autocomplete: 'off', spellcheck: 'false',
      ...(f.list ? { list: f.list } : {}) });
    case 'number': return h('input', { ...common, type: 'text', inputmode: 'decimal', autocomplete: 'off' });
    default: return h('input', { ...common, type: 'text', inputmode: 'numeric', autocomplete: 'off', spellcheck: 'false' });
  }
}

function fieldRow(f) {
  const control = buildControl(f);
  const label = f.kind === 'targets' ? h('span', { class: 'label' }, f.label) : h('label', { for: fid(f.key) }, f.label);
  return h('div', { class: `field kind-${f.kind}${f.sub ? ' sub' : ''}`, id: 'row-' + fid(f.key) },
    f.kind === 'bool' ? h('label', { class: 'check', for: fid(f.key) }, control, h('span', {}, f.label)) : [label, control],
    f.hint ? h('p', { class: 'hint', id: 'h-' + fid(f.key) }, f.hint) : null,
    h('p', { class: 'field-error', id: eid(f.key) }), h('p', { class: 'field-note', id: nid(f.key), 'aria-live': 'polite' }));
}

// The basics open; every other group folded, its summary saying what it holds, until a choice needs it (the
// schema's `opens`), one of its fields is set by a link or wrong, or the user opens it.
function buildForm() {
  const form = $('inputs');
  for (const g of FORM_GROUPS) {
    const rows = g.fields.map(fieldRow);
    if (g.open) {
      form.append(h('fieldset', { class: 'group open', id: 'group-' + g.id }, h('legend', {}, g.title), rows));
      continue;
    }
    form.append(h('details', { class: 'group', id: 'group-' + g.id },
      h('summary', {}, h('span', { class: 'group-title' }, g.title), h('span', { class: 'group-sum', id: 'sum-' + g.id })),
      h('div', { class: 'group-body', role: 'group', 'aria-label': g.title }, rows)));
  }
  const unfold = h('button', { type: 'button', id: 'unfold', class: 'linklike unfold', 'aria-pressed': 'false' }, 'Show every setting');
  unfold.addEventListener('click', () => {
    const all = unfold.getAttribute('aria-pressed') !== 'true';
    for (const d of form.querySelectorAll('details.group')) d.open = all;
    unfold.setAttribute('aria-pressed', String(all));
    unfold.textContent = all ? 'Fold the settings' : 'Show every setting';
  });
  form.append(unfold);
  form.addEventListener('input', onInput);
  form.addEventListener('change', onInput);
  form.addEventListener('submit', (e) => e.preventDefault());
}

const needed = new Map();  // group -> whether its `opens` held at the last update
// Opens the groups a change made necessary (once: a group the user folds again stays folded), and writes each
// folded group's summary: what is set apart from its default, else that it holds the defaults.
function showGroups(described, first) {
  for (const g of FORM_GROUPS) {
    if (g.open) continue;
    const el = $('group-' + g.id);
    const needs = !!g.opens && holds(g.opens, state);
    const shown = g.fields.filter((f) => fieldVisible(f, described));
    const set = shown.filter((f) => state[f.key] !== defaultOf(state, f.key, described) && !isUnsetValue(f.key));
    if ((needs && !needed.get(g.id)) || shown.some((f) => fieldErrors.has(f.key)) || (first && set.length)) el.open = true;
    needed.set(g.id, needs);
    el.hidden = shown.length === 0;
    const moved = shown.filter((f) => !set.includes(f) && $(nid(f.key)).textContent);  // a default a change moved
    const listed = [...set, ...moved];
    const parts = listed.slice(0, 3).map((f) => `${f.label}: ${valueText(f)}`);
    if (listed.length > 3) parts.push(`${listed.length - 3} more`);
    $('sum-' + g.id).textContent = parts.length ? parts.join(' · ') : 'defaults';
  }
}
const isUnsetValue = (key) => isUnset(key, state[key]);
function valueText(f) {
  const v = state[f.key];
  if (f.kind === 'bool') return v ? 'on' : 'off';
  return clip(labelsOf(f.key)[v] || String(v), 28);
}

// What the user typed: integers and decimals as numbers, anything else as text for the core to report on.
function readValue(f, el) {
  if (f.kind === 'bool') return el.checked;
  if (f.kind === 'zero') return Number(el.value);
  if (f.kind === 'tristate') return el.value === '' ? '' : el.value === 'true';
  if (f.kind === 'int' || f.kind === 'number') {
    const t = el.value.trim();
    if (t === '') return '';  // an error next to the field (the core names the range), never the default in silence
    const m = f.tokens && /^(\d+\.?\d*|\.\d+)\s*([kmbt])$/i.exec(t);  // 2T, 500M tokens
    if (m) return Number(m[1]) * 1000 ** ('kmbt'.indexOf(m[2].toLowerCase()) + 1);
    return /^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(t) ? Number(t) : t;
  }
  return el.value;
}

let hfText = '';
let hfError = null;

function onInput(e) {
  const el = e.target;
  const key = el.dataset && el.dataset.key;
  if (!key) return;
  const f = FIELD[key];
  if (e.type === 'change' || e.inputType === 'insertReplacementText') commit();  // a datalist pick too
  if (key === 'model') return onModelText(el.value, e.type);
  if (e.type === 'change' && (f.kind === 'int' || f.kind === 'number' || f.kind === 'hf' || f.kind === 'text')) return refresh(false);
  for (const el of document.querySelectorAll('#inputs .field-note')) el.textContent = '';  // notes go with the next change
  if (key === 'targets') {
    state.targets = [...$(fid('targets')).querySelectorAll('input:checked')].map((c) => c.value).join(',');
  } else if (key === 'hf') {
    hfText = el.value;
    hfError = null;
    try {
      const obj = JSON.parse(hfText);
      if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('a JSON object is expected');
      state.hf = compactHf(obj);
      state.targets = fitTargets(state);
    } catch (err) {
      hfError = `not a JSON object: ${clip(err.message, 80)}`;
    }
  } else {
    const prev = { ...state };
    const v = readValue(f, el);
    state[key] = v;
    if (key === 'framework') state.framework_version = '';  // a version is the stack's own
    if (key === 'framework' || key === 'framework_version') {
      // The profile's precision, loss, adapter dtype ... (of the revision in force at that version).
      state = applyProfile(state);
    }
    if (key === 'framework') {
      // The targets in the new stack's names, role by role.
      const moved = translateTargets(state.targets, rolesOf(prev), rolesOf(state));
      state.targets = fitTargets({ ...state, targets: moved || defaultOf(state, 'targets') });
    }
    letGo(prev, key);
    // Fields that follow another unless set apart: kv_heads follows heads, the activation follows the MLP.
    for (const k of ARCH_KEYS.map((a) => 'model.' + a))
      if (k !== key && prev[k] === defaultOf(prev, k) && defaultOf(state, k) !== prev[k]) syncOne(k, defaultOf(state, k));
    if (key === 'model.mlp') state.targets = fitTargets(state);
    if (SHAPING.has(key)) {
      state = follow(prev, state);
      noteFollowers(prev, key);
      return refresh(true);
    }
    // Fields whose default follows this one (sequence_parallel follows tp, the stages per GPU the schedule).
    const followed = follow(prev, state);
    for (const k of FOLLOWERS) if (followed[k] !== state[k]) syncOne(k, followed[k]);
  }
  refresh(false);
}

// Says next to each field whose default a change moved what it now is and why (TRL's trainers checkpoint every
// layer, a strategy its ZeRO stage): a folded group lists it in its summary.
function noteFollowers(prev, key) {
  for (const k of FOLLOWERS) {
    if (k === key || prev[k] === state[k] || !FIELD[k] || !applies(k, state)) continue;
    note(k, `Now ${valueText(FIELD[k])}: the default with ${FIELD[key].label.toLowerCase()} ${valueText(FIELD[key])}.`);
  }
}

function syncOne(key, v) {
  state[key] = v;
  syncField(FIELD[key]);
}

// ---------- the model field ----------

let modelText = null;   // what the model field holds when it names no model (else it shows state.model)
let modelError = null;

// A name that selects no model: the error says so, and the closest models are listed to pick from.
function unknownModel(text, near) {
  showModelResults(near);
  return `“${clip(text.trim(), 60)}” is not a preset or a model of the catalog.` +
    (near.length ? ` Did you mean ${near.slice(0, 3).map((m) => m.id).join(', ')}? Pick one below.` : '') +
    ' For another model, choose “Paste config.json” and paste its config.json.';
}
let resultsKey = '';
function showModelResults(near) {
  const list = $('model-results');
  list.hidden = !near.length;
  // The same list is kept (leaving the field to click one rebuilt it between the press and the release otherwise).
  const key = near.map((m) => m.id).join('\n');
  if (key === resultsKey) return;
  resultsKey = key;
  clear(list);
  for (const m of near)
    list.append(h('li', {}, h('button', { type: 'button', class: 'small result', dataset: { model: m.id },
      onclick: () => pickModel(m.id) }, m.id, h('span', { class: 'result-sub' }, ` · ${count(m.parameters)}`))));
}

// The model field: a name selects its model as soon as the core reads it as one (the field keeps what is typed
// until it is left); anything else is reported next to the field with the closest models, until it does. Cleared
// and left, it shows the model again.
let typingModel = false;
function onModelText(text, type) {
  typingModel = type !== 'change';
  const t = text.trim();
  const found = t === 'custom' || t === 'hf' ? { id: t, near: [] } : t ? findModel(t) : { id: null, near: [] };
  const id = found.id;
  if (id) {
    modelText = null;
    modelError = null;
    showModelResults([]);
    if (id !== state.model) return selectModel(id);
    if (type === 'change' || text !== id) return refresh(true);  // shows the id for a pasted URL once left
    return refresh(false);
  }
  if (!t) {
    modelText = type === 'change' ? null : text;
    modelError = null;
    showModelResults([]);
    return refresh(type === 'change');
  }
  modelText = text;
  modelError = unknownModel(t, found.near);
  refresh(false);
}

function pickModel(v) {
  modelText = null;
  modelError = null;
  typingModel = false;
  showModelResults([]);
  commit();
  selectModel(v);
}

// What a switch to the explicit form keeps of the model: the dense shape of a preset (sizes, MLP, norm, positions,
// biases). Never its experts (nor dropout): a MoE preset becomes one dense model with an expert's FFN width. A catalog
// model or a pasted config starts from the Llama-style defaults.
const shapeKeys = () => ARCH_KEYS.filter((k) => !['experts', 'experts_per_token', 'dropout'].includes(k));

function selectModel(v) {
  if (v === 'custom' && state.model !== 'custom') {
    const arch = baseArch[state.model] || {};
    for (const k of ARCH_KEYS) state['model.' + k] = DEFAULTS['model.' + k];
    for (const k of shapeKeys()) {
      const a = arch[k];
      const ok = typeof a === typeof DEFAULTS['model.' + k] && (!CHOICES['model.' + k] || CHOICES['model.' + k].includes(a));
      if (ok) state['model.' + k] = a;
    }
    if (arch.kv_heads === undefined) state['model.kv_heads'] = state['model.heads'];
    if (arch.activation === undefined || !CHOICES['model.activation'].includes(arch.activation))
      state['model.activation'] = defaultOf(state, 'model.activation');
  }
  if (v === 'hf' && !state.hf) state.hf = null;
  state.model = v;
  state.targets = fitTargets(state);
  clampSeqLen();
  refresh(true);
  if (v === 'hf') $(fid('hf')).focus();
}

// The fields whose meaning a field's value decides (they appear in the schema's conditions): a change of it rebuilds
// the form.
let SHAPING = new Set();
function shapingKeys() {
  const keys = new Set(['model', 'gpu', 'framework', 'framework_version']);  // a profile and module names follow these
  for (const row of Object.values(ROWS)) {
    for (const all of row.applies || []) for (const a of all) if (LINK_OF[a.key]) keys.add(LINK_OF[a.key]);
    for (const k of row.follows || []) if (LINK_OF[k]) keys.add(LINK_OF[k]);
  }
  for (const k of ARCH_KEYS) keys.add('model.' + k);
  return keys;
}

// A change that leaves a field without meaning gives it back its default, where the configuration would still carry it
// (a member of an object, or a key only sent where it applies, keeps what was typed for when it applies again); a
// ZeRO stage the new strategy does not take falls back to its default.
function letGo(prev, key) {
  for (const k of PARAM_ORDER) {
    const row = ROWS[k];
    if (!row || k === key || row.parent || row.echo !== 'always' || !applies(k, prev) || applies(k, state)) continue;
    state[k] = defaultOf(state, k);
  }
  if (!Object.hasOwn(ZERO[state.strategy] || {}, String(state.zero))) state.zero = defaultOf(state, 'zero');
  const most = MAX_GPUS[state.strategy];
  if (key === 'strategy' && most && state.gpus > most) {
    state.gpus = most;
    note('gpus', `Set to ${most}: strategy “${state.strategy}” runs on ${most} GPU.`);
  }
}

// A note next to a field the page changed for the user (shown until the next change).
function note(key, text) {
  const el = $(nid(key));
  if (el) el.textContent = text;
}

// Puts the state into every control (after a link, a suggestion, or a change that resets others).
function syncInputs() {
  const zs = $(fid('zero'));
  clear(zs);
  const zl = zeroLabel(state);
  for (const [v, t] of Object.entries(zl)) zs.append(h('option', { value: v }, t));
  if (!(state.zero in zl)) zs.append(h('option', { value: state.zero }, String(state.zero)));
  for (const f of FIELDS) syncField(f);
}

function syncField(f) {
  const el = $(fid(f.key));
  const v = state[f.key];
  if (f.kind === 'bool') el.checked = !!v;
  else if (f.kind === 'targets') syncTargets(el, v, state);
  else if (f.kind === 'tristate') el.value = v === '' || v === undefined ? '' : String(v);
  else if (f.kind === 'hf') {
    if (document.activeElement !== el) el.value = hfText || (state.hf ? JSON.stringify(state.hf, null, 2) : '');
  } else if (f.kind === 'model') {
    if (!(typingModel && document.activeElement === el)) el.value = modelText !== null ? modelText : v;  // never while typed in
  } else {
    const t = v === null || v === undefined ? '' : String(v);
    if (el.value !== t) el.value = t;  // the field being typed in keeps its caret
  }
}

// A field shows where it applies; elsewhere only while the configuration still carries a value of it the core may
// refuse (and an error names it).
function fieldVisible(f, described) {
  if (fieldErrors.has(f.key)) return true;
  if (f.show && !f.show(state)) {
    const row = ROWS[f.key];
    if (!row || row.parent || row.echo !== 'always') return false;
    return state[f.key] !== defaultOf(state, f.key, described);
  }
  return true;
}

// ---------- model changes ----------

// The longest sequence a model with learned positions takes: the preset's max_positions, else (a catalog model,
// a pasted config) the bound named by the core's message. 0: no bound.
function maxPositions(s) {
  const arch = baseArch[s.model];
  if (arch) return arch.position === 'learned' && Number.isInteger(arch.max_positions) ? arch.max_positions : 0;
  const r = describeState(s);
  const m = (r.errors || []).map((e) => e.field === 'seq_len' && /max_positions (\d+)/.exec(e.message)).find(Boolean);
  return m ? Number(m[1]) : 0;
}

// A model change brings the sequence length down to what the model allows, and says so next to the field.
function clampSeqLen() {
  const note = $(nid('seq_len'));
  note.textContent = '';
  const max = maxPositions(state);
  if (!max || !Number.isInteger(state.seq_len) || state.seq_len <= max) return;
  note.textContent = `Set to ${max} (was ${state.seq_len}): this model has ${max} learned positions.`;
  state.seq_len = max;
}

// ---------- suggestions, charts ----------

function applySuggestion(sgt) {
  flush();
  const prev = { ...state };
  state = applyPatch(state, sgt.config);
  const precision = state.precision;
  state = follow(prev, state);
  // The core estimated the suggestion with the precision it was sent, unless the change names one.
  if (!(sgt.config && 'precision' in sgt.config)) state.precision = precision;
  commit(sgt.change);
  refresh(true);
  $('verdict').focus();
}

// A plan: the keys whose values differ from the estimate's own, applied as a suggestion's are.
function applyPlan(plan, text) {
  const now = lastResult ? lastResult.config : {};
  const patch = {};
  for (const [k, v] of Object.entries(plan.config)) if (JSON.stringify(now[k]) !== JSON.stringify(v)) patch[k] = v;
  applySuggestion({ change: `Plan: ${text}`, config: patch });
}

function pickPoint(key, v) {
  flush();
  state[key] = v;
  $(nid('seq_len')).textContent = '';
  commit();
  refresh(true);
}

function renderCharts(config, r) {
  // One row and one column of the grid, each around where the total crosses the capacity.
  const { drawChart, microBatchAxis, sequenceAxis } = details;
  const mbs = microBatchAxis(r.max_micro_batch, state.micro_batch);
  const seqs = sequenceAxis((t) => mod.sweep(t), config, state.seq_len);
  const byMb = JSON.parse(mod.sweep(JSON.stringify({ config, micro_batch: mbs })));
  const bySeq = JSON.parse(mod.sweep(JSON.stringify({ config, seq_len: seqs })));
  if (byMb.errors || bySeq.errors) {
    clear($('chart-mb'));
    clear($('chart-seq'));
    return;
  }
  drawChart($('chart-mb'), { xs: byMb.micro_batch, ys: byMb.total_bytes[0], capacity: byMb.capacity_bytes,
    current: state.micro_batch, xLabel: 'micro-batch', title: `Memory per GPU against micro-batch at ${state.seq_len} tokens`,
    onPick: (v) => pickPoint('micro_batch', v) });
  drawChart($('chart-seq'), { xs: bySeq.seq_len, ys: bySeq.total_bytes.map((row) => row[0]), capacity: bySeq.capacity_bytes,
    current: state.seq_len, xLabel: 'sequence length', title: `Memory per GPU against sequence length at micro-batch ${state.micro_batch}`,
    onPick: (v) => pickPoint('seq_len', v) });
}

// ---------- compare ----------

const estimates = new Map();  // config text -> report, for A
function estimateOf(s) {
  const text = JSON.stringify(toConfig(s));
  if (!estimates.has(text)) {
    if (estimates.size > 32) estimates.clear();
    estimates.set(text, JSON.parse(mod.answer(text)));
  }
  return estimates.get(text);
}

function setPin(s) {
  flush();
  pinned = s ? { ...s } : null;
  commit();
  refresh(false);
}

function showCompare() {
  $('pin').textContent = pinned ? 'Pin B as A' : 'Pin as A';
  $('pin').dataset.pinned = String(!!pinned);
  if (!pinned) return renderCompare($('compare'), { a: null });
  const a = estimateOf(pinned);
  renderCompare($('compare'), {
    a, b: lastResult, stale: document.body.classList.contains('stale'), embed: look.embed, onUnpin: () => setPin(null),
    summaryA: summaryLine(pinned, a.gpu ? a.gpu.name : clip(pinned.gpu), presets),
    changed: differences(toQuery(pinned), toQuery(state)),
  });
}

// ---------- share links, history ----------

const pinExtra = () => (pinned ? { pin: toQuery(pinned) } : {});
const shareQuery = () => toQuery(state, pinExtra());
function pageUrl(query) {
  const u = new URL(location.href);
  u.search = query;
  u.hash = '';
  return u.toString();
}
function lookExtra() {
  const x = {};
  if (look.embed) x.embed = 1;
  if (look.theme !== 'auto') x.theme = look.theme;
  if (look.view !== 'full') x.view = look.view;
  return x;
}

let recorded = false;
function updateUrl() {
  const c = commitNext;
  commitNext = null;
  record(toQuery(state, { ...pinExtra(), ...lookExtra() }), { s: { ...state }, pin: pinned && { ...pinned } },
    { commit: !!c, via: c && c.via, first: !recorded });
  recorded = true;
  // While a field is invalid the link is the last valid configuration's, marked stale.
  const stale = document.body.classList.contains('stale');
  if (!stale) $('share-url').value = pageUrl(shareQuery());
  $('share-url').setAttribute('aria-invalid', String(stale));
  $('share-stale').hidden = !stale;
  $('open-full').href = `${location.pathname}?${shareQuery()}`;
  if (!$('embed-box').hidden) showEmbedCodes();
  const via = madeBy();
  $('undo-box').hidden = !via || look.embed;
  if (via) $('undo').textContent = `Undo “${clip(via, 60)}”`;
}

// Back or Forward: the entry's state (or, for an entry the page did not make, its link).
function restore(snapshot) {
  cancelAnimationFrame(pending);  // a change not yet shown belongs to the entry left, not to this one
  pending = 0;
  commitNext = null;
  if (snapshot && snapshot.s) {
    state = { ...initialState(), ...snapshot.s };
    pinned = snapshot.pin ? { ...initialState(), ...snapshot.pin } : null;
  } else {  // a link the page did not make: read as on load, its problems said
    const p = parseLink(location.search);
    state = p.state;
    pinned = p.pin;
    showLinkProblems(p.problems);
  }
  modelText = null;
  modelError = null;
  hfText = '';
  hfError = null;
  $(nid('seq_len')).textContent = '';
  if (!(snapshot && snapshot.s) && !new URLSearchParams(location.search).has('seq_len')) clampSeqLen();  // as on load
  refresh(true);
}

function showEmbedCodes() {
  const site = pageUrl('').replace(/\?$/, '');
  const codes = embedCodes(shareQuery(), site, $('embed-theme').value, $('embed-view').value);
  $('embed-div').value = codes.div;
  $('embed-iframe').value = codes.iframe;
}

// ---------- the update loop ----------

let pending = 0;
let syncNext = false;
function refresh(sync) {
  syncNext = syncNext || sync;
  if (!pending) pending = requestAnimationFrame(() => { pending = 0; const s = syncNext; syncNext = false; update(s); });
}
// Runs a scheduled update now (before a change that must not merge with the one being typed).
function flush() {
  if (!pending) return;
  cancelAnimationFrame(pending);
  pending = 0;
  const s = syncNext;
  syncNext = false;
  update(s);
}
// The next update completes a change: a history entry of its own (via: a suggestion's text, for Undo).
function commit(via = null) { commitNext = { via }; }

function update(sync) {
  const t0 = performance.now();
  if (sync) syncInputs();
  const config = toConfig(state);
  const text = JSON.stringify(config);
  // The evidence follows below the fold; on the first load the suggestions follow the painted answer too.
  const first = document.body.dataset.ready !== 'true';
  let r = JSON.parse(first ? mod.answerWithoutSuggestions(text) : mod.answer(text));
  const errors = r.errors || [];
  const own = new Map();
  if (hfError && state.model === 'hf') own.set('hf', hfError);
  if (modelError) own.set('model', modelError);
  fieldErrors = showFieldErrors(errors, state, own);
  const valid = !r.errors && !(hfError && state.model === 'hf') && !modelError;
  // While a field is invalid, what is shown is from the last valid configuration: dimmed, marked stale, inert.
  document.body.classList.toggle('stale', !valid);
  for (const el of document.querySelectorAll('#suggestions, .charts')) el.inert = !valid;
  $('results').hidden = false;
  if (valid) {
    lastResult = r;
    renderAnswer(r, summaryLine(state, r.gpu.name, presets));
    showStackChoices(r.config);
    const below = () => {
      details.showMakeFit(r, JSON.stringify(config));
      renderCharts(config, r);
      exportsText = text;
      renderEvidence();
      renderExports();
    };
    const rest = () => {
      if (lastResult !== r) return;  // a newer answer is shown (a change before the first load's next task)
      if (r.suggestions === null) {
        r = lastResult = JSON.parse(mod.answer(text));
        showMini(true);
      }
      renderSuggestions(r, applySuggestion);
      $('config-json').textContent = JSON.stringify(config, null, 2);
      showCompare();
      if (details) below();
      else showDetails = below;  // once their module is in
    };
    // On the first load the answer is painted first; the details follow in the next task.
    if (!first) rest();
    else setTimeout(rest, 0);
  } else {
    delete $('total').dataset.bytes;
    $('fits').dataset.fits = 'invalid';
    $('fits').textContent = 'Invalid';
    $('verdict-text').textContent = 'Fix the highlighted settings; the figures below are from the last valid configuration.';
    exportsText = null;
    if (details) renderExports();
    if (lastResult) showCompare();
  }
  showMini(valid);
  const described = describeState(state);
  for (const f of FIELDS) $('row-' + fid(f.key)).hidden = !fieldVisible(f, described);
  showGroups(described, first);
  updateUrl();
  performance.measure('vramcalc:update', { start: t0 });
  if (first) {
    document.body.dataset.ready = 'true';
    performance.mark('vramcalc:first-estimate');
  }
}

// The answer in one line, for when it has scrolled away: verdict, total against capacity, headroom, largest
// micro-batch and the first change that fits.
function showMini(valid) {
  $('mini-fits').dataset.fits = $('fits').dataset.fits;
  $('mini-fits').textContent = $('fits').textContent;
  const r = lastResult;
  $('mini-total').textContent = r ? gib(r.total_bytes) : '—';
  $('mini-capacity').textContent = r ? `of ${gib(r.gpu.capacity_bytes)} per GPU` : 'per GPU';
  $('mini-head').textContent = r ? (r.headroom_bytes >= 0 ? `${gib(r.headroom_bytes)} free` : `${gib(-r.headroom_bytes)} over`) : '';
  $('mini-mb').textContent = r ? `largest micro-batch ${r.max_micro_batch || 'none'}` : '';
  const fix = valid && r && !r.fits && r.suggestions ? r.suggestions.find((sgt) => sgt.fits) : null;
  $('mini-fix').textContent = !valid ? 'Fix the highlighted settings' : !r || r.fits || !r.suggestions ? ''
    : fix ? `First fix: ${fix.change} → ${gib(fix.total_bytes)}` : 'No single change fits';
}

// The values the stack chose for the knobs left to it, next to them (the placeholder, the first option).
function showStackChoices(config) {
  const v = config && config.framework_version;
  $(fid('framework_version')).placeholder = typeof v === 'string' && !state.framework_version ? `${clip(v, 32)} (the current)` : '';
  const n = config && config.loss_chunks;
  $(fid('loss_chunks')).placeholder = Number.isInteger(n) ? `${n} (the stack’s)` : '';
  for (const key of ['lm_head_chunks', 'longest_batch_first']) {
    const first = $(fid(key)).options[0];
    if (config && typeof config[key] === 'boolean') first.textContent = `${UNSET_LABELS[key]['']}: ${config[key] ? 'yes' : 'no'}`;
  }
}

// ---------- start ----------

function parseLink(search) {
  const models = new Set([...presets.models.map((m) => m.id), ...catalog.map((m) => m.id)]);
  const p = fromQuery(search, { gpus: presets.gpus.map((g) => g.id), models });
  // A link without targets gets the model's own modules (GPT-2's c_attn, all-linear for fused q/k/v ...).
  for (const s of [p.state, p.pin]) if (s && s.targets === defaultOf(s, 'targets')) s.targets = fitTargets(s);
  return p;
}

function init() {
  readSchema(mod);  // every key, its bounds, choices and defaults, as the core reads them
  buildFields();
  SHAPING = shapingKeys();
  presets = JSON.parse(mod.models());
  catalog = Array.isArray(presets.catalog) ? presets.catalog : [];
  for (const m of presets.models) baseArch[m.id] = m.architecture;
  const parsed = parseLink(location.search);
  state = parsed.state;
  pinned = parsed.pin;
  look = { embed: parsed.embed, theme: parsed.theme, view: parsed.view };
  buildForm();
  showLinkProblems(parsed.problems);
  if (!new URLSearchParams(location.search).has('seq_len')) clampSeqLen();  // the model's, not the default's
  $('copy-link').addEventListener('click', () => copy($('share-url').value, 'share-url', 'Link'));
  $('copy-embed').addEventListener('click', () => {
    $('embed-box').hidden = false;
    showEmbedCodes();
    copy($('embed-div').value, 'embed-div', 'Widget code');
  });
  for (const id of ['embed-theme', 'embed-view']) $(id).addEventListener('change', showEmbedCodes);
  $('copy-embed-div').addEventListener('click', () => copy($('embed-div').value, 'embed-div', 'Widget code'));
  $('copy-embed-iframe').addEventListener('click', () => copy($('embed-iframe').value, 'embed-iframe', 'Iframe code'));
  $('copy-config').addEventListener('click', () => copy($('config-json').textContent, 'config-json', 'Configuration'));
  $('pin').addEventListener('click', () => setPin(state));
  $('plans-go').addEventListener('click', () => details && details.searchPlans(toConfig(state), lastResult, applyPlan));
  $('sizing-go').addEventListener('click', () => details && details.sizeRun(toConfig(state), applyPlan));
  $('undo').addEventListener('click', () => history.back());
  $('mini-go').addEventListener('click', () => { $('answer').scrollIntoView(); $('answer').focus({ preventScroll: true }); });
  // The one-line answer shows once the answer's figures (verdict, total, headroom, largest micro-batch) have
  // scrolled away above: on a phone the rest of the answer card (the bar, its legend) can fill the screen without them.
  new IntersectionObserver(([e]) => document.documentElement.classList.toggle('answer-away',
    !e.isIntersecting && e.boundingClientRect.top < 0)).observe(document.querySelector('#results .figures'));
  initHistory(restore);
  update(true);
  loadDetails();
}

// The details' module, fetched once the answer is shown; then the details of the latest valid answer.
let showDetails = null;
async function loadDetails() {
  details = await import('./details.js');
  details.initExports();
  if (showDetails) showDetails();
  showDetails = null;
  if (!lastResult) renderExports();
  document.body.dataset.details = 'true';
  performance.mark('vramcalc:details');
  watchExports();
}

// The evidence and the exports of the latest valid configuration (null while a field is invalid), written by the
// details' WebAssembly module once it is in: it is fetched when the evidence, the export or the AdamW card comes near
// the view, so that the first estimate waits only for what the answer needs.
let exportsText = null;
function renderEvidence() {
  if (more && exportsText !== null) {
    details.renderEvidence(JSON.parse(more.evidence(exportsText)).evidence);
    details.renderTimeline(JSON.parse(more.timeline(exportsText)).timeline);
  } else if (more === false) $('evidence').hidden = true;
}
function renderExports() {
  details.renderExports(exportsText === null ? null : more ? JSON.parse(more.exports(exportsText)) : more === false ? false : undefined);
}
function watchExports() {
  const near = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    near.disconnect();
    loadExports();
  }, { rootMargin: '50% 0px' });
  // The evidence shows once written (hidden before): its place is watched through the line above it.
  for (const id of ['params', 'export-card', 'adamw-form']) near.observe($(id));
}
async function loadExports() {
  try {
    more = await details.createModule();
  } catch (err) {
    console.error('vramcalc: the exports\' module did not load', err);
    more = false;
    renderEvidence();
    renderExports();
    return;
  }
  details.initAdamw(more);
  renderEvidence();
  renderExports();
  document.body.dataset.exports = 'true';
}

performance.mark('vramcalc:app-start');
loadCalculator((m) => {
  mod = m;
  init();
});
