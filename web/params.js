// The page's state as flat, readable fields, and share links: state <-> query parameters <-> core configuration.
// Every key, its type, bounds, choices, default rule and when it applies come from the core's schema
// (core/setup/schema.cpp), read once at start (readSchema); every default given the other fields comes from the
// core too (describe). Nothing here repeats the core's tables. Anything a link holds that the schema does not accept
// is reported and ignored, never shown as markup.

import { compactHf, fromBase64Url, toBase64Url } from './hfjson.js';

export { HF_DROP, hfKeyDropped, compactHf, toBase64Url, fromBase64Url } from './hfjson.js';

// Filled by readSchema: the link parameters the core's keys take, by kind.
export const ROWS = {};       // link parameter -> the schema's row
export const CHOICES = {};    // link parameter -> allowed values
export const LABELS = {};     // link parameter -> value -> label
export const INTS = {};       // link parameter -> [lo, hi]
export const NUMBERS = {};    // link parameter -> [lo, hi]
export const BOOLS = [];
export const DEFAULTS = {};
export const ARCH_KEYS = [];  // the explicit architecture's keys the page's form shows
export const ARCH_DEFAULTS = {};
export let FOLLOWERS = [];    // fields whose default follows other fields
export let PROFILE_GOVERNED = [];  // fields a change of framework gives back to its profile
export let PARAM_ORDER = [];  // the order keys take in a link (also every key a link may hold)
export let GROUPS = [];       // the schema's groups: [{id, title}]
export const LINK_OF = {};    // the core's dotted key -> its link parameter
export const ZERO = {};       // strategy -> the zero stages it takes -> what each means
export const MAX_GPUS = {};   // strategy -> the most GPUs it runs on (0: any number)
let ARCH = {};                // model.<key> -> the architecture's row

// Page-only values that stand for "the default": a field left at it follows the core (its placeholder or first
// option says what the core chose).
const UNSET = { framework_version: '', backend_version: '', alloc_conf: '', loss_chunks: '', lm_head_chunks: '', longest_batch_first: '',
  teacher: '', value_model: '', reward_model: '', reference: 'default', reward_dtype: 'default', steps_per_generation: 0 };
export const isUnset = (key, v) => Object.hasOwn(UNSET, key) && v === UNSET[key];
// Starting values the core has no default for (it requires them), and a custom GPU's.
const START = { prompt_len: 512, completion_len: 512, 'gpu.memory_gib': 80, 'gpu.name': 'Custom GPU' };
// Keys whose value names a model of the catalog (a preset or a Hugging Face id), read from a link like `model`.
const MODEL_KEYS = ['teacher', 'value_model', 'reward_model'];
// The page's own parameters beside the core's keys: the model given as custom or hf, its architecture or config.json,
// a custom GPU.
const PAGE_KEYS = ['model', 'hf', 'gpu', 'gpu.memory_gib', 'gpu.name'];

let core = null;  // the module: describe(), schema()

// Reads the core's schema and the defaults of an empty configuration. Call once, before anything else here.
export function readSchema(mod) {
  core = mod;
  const schema = JSON.parse(mod.schema());
  GROUPS = schema.groups;
  for (const st of schema.strategies) ZERO[st.name] = st.zero, MAX_GPUS[st.name] = st.max_gpus;
  const order = [];
  for (const row of schema.keys) {
    if (!row.link) continue;
    LINK_OF[row.name] = row.link;
    if (PAGE_KEYS.includes(row.link)) continue;
    ROWS[row.link] = row;
    order.push(row.link);
    if (row.choices) {
      CHOICES[row.link] = row.choices.map((c) => c.name);
      LABELS[row.link] = Object.fromEntries(row.choices.map((c) => [c.name, c.label]));
      if (isUnsetChoice(row.link)) CHOICES[row.link].unshift(UNSET[row.link]);
    }
    if (row.type === 'integer') INTS[row.link] = [row.link === 'steps_per_generation' ? 0 : row.min, row.max];
    if (row.type === 'number') NUMBERS[row.link] = [row.link === 'vllm_share' ? 0 : row.min, row.max];
    if (row.type === 'boolean') BOOLS.push(row.link);
  }
  ARCH = {};
  for (const a of schema.architecture) {
    if (!a.common) continue;
    const key = 'model.' + a.name;
    ARCH[key] = a;
    ARCH_KEYS.push(a.name);
    ARCH_DEFAULTS[a.name] = a.name === 'head_dim' ? 0 : a.value;
    if (a.choices) {
      CHOICES[key] = a.choices.map((c) => c.name);
      LABELS[key] = Object.fromEntries(a.choices.map((c) => [c.name, c.label]));
    }
    if (a.type === 'integer') INTS[key] = [a.name === 'head_dim' ? 0 : a.min, a.max];
    if (a.type === 'boolean') BOOLS.push(key);
  }
  FOLLOWERS = order.filter((k) => ROWS[k].follows);
  PROFILE_GOVERNED = order.filter((k) => ROWS[k].profile);
  PARAM_ORDER = ['model', 'hf', ...ARCH_KEYS.map((k) => 'model.' + k), 'gpu', 'gpu.memory_gib', 'gpu.name', ...order];
  // An empty configuration's values, then the page's own starts and its "unset" values.
  const d = describe({});
  for (const k of order) DEFAULTS[k] = d.defaults[k];
  Object.assign(DEFAULTS, { model: d.defaults.model, hf: null, gpu: d.defaults.gpu }, START, UNSET);
  for (const k of ARCH_KEYS) DEFAULTS['model.' + k] = ARCH_DEFAULTS[k];
}
const isUnsetChoice = (key) => Object.hasOwn(UNSET, key) && typeof UNSET[key] === 'string' && UNSET[key] !== '';

// What the core reads a model name as (a preset or catalog id, a hub URL, the one catalog model a spelling names),
// and the closest models (core/model/model_search.cpp): null id when it names none or several.
export function findModel(text, limit = 5) {
  const r = JSON.parse(core.searchModels(String(text).slice(0, 512), limit));
  return { id: r.resolves || null, near: r.results || [] };
}

// ---------- the core's view of a state ----------

// A schema value as the page holds it: lists as comma-separated text, fsdp_version as a choice.
function pageValue(key, v) {
  if (Array.isArray(v)) return v.join(',');
  if (CHOICES[key] && typeof v === 'number') return String(v);
  return v;
}

const described = new Map();  // configuration text -> {defaults by link parameter, modules, roles}
function describe(config) {
  const text = JSON.stringify(config);
  let d = described.get(text);
  if (!d) {
    const r = JSON.parse(core.describe(text));
    const defaults = {};
    for (const [name, v] of Object.entries(r.defaults || {})) if (LINK_OF[name]) defaults[LINK_OF[name]] = pageValue(LINK_OF[name], v);
    d = { defaults, modules: r.modules || [], roles: r.roles || {}, errors: r.errors || [] };
    if (described.size >= 64) described.clear();
    described.set(text, d);
  }
  return d;
}
// What the core says of a state. Loops over fields take it once (the state does not change inside them) and pass it.
export const describeState = (s) => describe(toConfig(s));
// The model's own LoRA targets and each role's module name (q, k, v, o, gate, up, down, head), as the core reads them.
export const modulesOf = (s) => describeState(s).modules;
export const rolesOf = (s) => describeState(s).roles;

export function defaultOf(state, key, described = null) {
  if (Object.hasOwn(UNSET, key)) return UNSET[key];
  if (Object.hasOwn(START, key)) return START[key];
  if (key.startsWith('model.')) {
    const a = ARCH[key];
    if (!a) return DEFAULTS[key];
    if (a.follows) return a.by ? a.by[state['model.' + a.follows]] ?? ARCH_DEFAULTS[key.slice(6)] : state['model.' + a.follows];
    return ARCH_DEFAULTS[key.slice(6)];
  }
  if (!ROWS[key]) return DEFAULTS[key];
  const v = (described || describeState(state)).defaults[key];
  return v === undefined || v === null ? DEFAULTS[key] : v;
}

// Whether a field's key means something for the state: the schema's condition (any alternative, all its atoms).
export function applies(key, state) {
  const row = ROWS[key];
  return !row || !row.applies || holds(row.applies, state);
}
// Whether a schema condition holds for the state: any alternative, all its atoms.
export function holds(condition, state) {
  return condition.some((all) => all.every((atom) => {
    const link = LINK_OF[atom.key];
    const v = link === undefined ? undefined : state[link];
    if (atom.in) return atom.in.includes(typeof v === 'boolean' || typeof v === 'number' ? String(v) : v);
    return Number(v) > atom.above;
  }));
}
// The condition in a link's words ("finetune=lora or qlora"), for messages.
export function appliesText(key) {
  const row = ROWS[key];
  if (!row || !row.applies) return '';
  return row.applies.map((all) => all.map((a) => {
    const link = LINK_OF[a.key] || a.key;
    return a.in ? `${link}=${a.in.join(' or ')}` : `${link} above ${a.above}`;
  }).join(' and ')).join('; or ');
}

// The state's framework profile applied to the knobs it governs (the rest of the state is kept).
export function applyProfile(s) {
  const out = { ...s };
  const d = describeState(out);  // each governed default reads the profile and keys outside the profile's
  for (const k of PROFILE_GOVERNED) out[k] = defaultOf(out, k, d);
  return out;
}

// The followers after a change from `prev` to `next`: those that were at their default and that the change left
// alone take their new default.
export function follow(prev, next) {
  const out = { ...next };
  const before = describeState(prev);
  let after = describeState(out);
  for (const k of FOLLOWERS) {  // in the schema's order: a follower's followers come after it
    if (prev[k] !== defaultOf(prev, k, before) || out[k] !== prev[k]) continue;
    const v = defaultOf(out, k, after);
    if (v !== out[k]) out[k] = v, after = describeState(out);
  }
  return out;
}

// Targets from one model's names to another's, role by role (LitGPT's "mlp" stands for gate, up and down).
export function translateTargets(targets, from, to) {
  const out = [];
  for (const t of String(targets).split(',')) {
    if (t === 'all-linear') out.push(t);
    for (const [role, name] of Object.entries(from)) if (name === t && to[role]) out.push(to[role]);
  }
  return [...new Set(out)].join(',');
}

// ---------- limits of a link ----------

// A release ("0.2.1", "0.3.0rc1", "2.6.0+cu124": core/setup/frameworks.cpp reads the leading numbers) or a date, of
// at most 32 characters (the schema's text keys); the page also keeps a link's version to letters, digits and . + _ -.
const RELEASE = /^[0-9][0-9A-Za-z.+_-]{0,31}$/;
const VERSION_CHARS = 32;
export const MAX_PARAM_CHARS = 200;
export const MAX_HF_CHARS = 16384;
export const MAX_PROBLEMS = 20;
// How the page looks (not what it estimates): the embed view, its theme, its extent; and a pinned configuration A
// (its own query, read by the same parser).
export const THEMES = ['auto', 'light', 'dark'];
export const VIEWS = ['full', 'compact'];
export const MAX_PIN_CHARS = MAX_HF_CHARS + 4096;
const VIEW_KEYS = ['embed', 'theme', 'view', 'pin'];

export const initialState = () => ({ ...DEFAULTS });

// ---------- state -> configuration ----------

// A field's value as the core's key takes it.
function coreValue(key, v) {
  const row = ROWS[key];
  if (row.type === 'integer' && typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  if (row.type === 'list') return String(v).split(',').map((t) => t.trim()).filter(Boolean);
  return v;
}
const isSet = (v) => !(v === '' || v === 0 || v === null || v === undefined);

// Whether the configuration carries the field: the core echoes it (always, when it applies, or when it applies and is
// set), and the page holds a value of its own, not its "unset" one.
// The run's and the machine's figures (which feed the step time and cost only) go in when given.
function carried(key, s) {
  const row = ROWS[key];
  const v = s[key];
  if (isUnset(key, v)) return false;
  if (row.group === 'run') return v !== DEFAULTS[key];  // constants: these follow nothing
  if (row.echo === 'always' && !row.parent) return true;
  return applies(key, s) && (row.echo !== 'when_set' || isSet(v));
}

// The configuration the core reads, from the page's fields.
export function toConfig(s) {
  const c = {};
  for (const key of PARAM_ORDER) {
    const row = ROWS[key];
    if (!row) continue;
    if (row.parent) {
      const parent = ROWS[LINK_OF[row.parent]];
      if (!carried(key, s) || !parent || !(c[row.parent] && typeof c[row.parent] === 'object')) continue;
      c[row.parent][row.name.slice(row.parent.length + 1)] = coreValue(key, s[key]);
      continue;
    }
    if (!carried(key, s)) continue;
    if (key === 'finetune') c.finetune = s.finetune === 'full' ? 'full' : { method: s.finetune };
    else if (key === 'vllm') c.inference_engine = s.vllm === 'none' ? 'none' : { name: 'vllm', mode: s.vllm };
    else c[row.name] = coreValue(key, s[key]);
  }
  if (s.model === 'custom') {
    const m = {};
    for (const k of ARCH_KEYS) {
      const v = s['model.' + k];
      if (k === 'head_dim' && (v === 0 || v === '')) continue;
      if (k === 'kv_heads' && v === '') continue;
      m[k] = v === '' ? ARCH_DEFAULTS[k] : v;
    }
    c.model = m;
  } else if (s.model === 'hf') {
    c.model = { hf_config: s.hf || {} };
  } else {
    c.model = s.model;
  }
  c.gpu = s.gpu === 'custom' ? { name: s['gpu.name'], memory_gib: s['gpu.memory_gib'] } : s.gpu;
  return c;
}

// A suggestion's patch (core configuration keys) applied to the page's fields. A value the page cannot show (a
// choice it does not list, checkpointing every N-th layer) leaves its field as it was.
export function applyPatch(s, patch) {
  const out = { ...s };
  const put = (name, v) => {
    const key = LINK_OF[name];
    if (!key || !ROWS[key]) return;
    if (CHOICES[key]) {
      if (CHOICES[key].includes(String(v))) out[key] = String(v);
    } else if (ROWS[key].type === 'list') {
      if (Array.isArray(v)) out[key] = v.join(',');
    } else out[key] = v;
  };
  for (const [k, v] of Object.entries(patch || {})) {
    if (k === 'finetune') {
      if (typeof v === 'string') out.finetune = v;
      else if (v && typeof v === 'object') {
        if (v.method) out.finetune = v.method;
        for (const [m, x] of Object.entries(v)) if (m !== 'method') put(`finetune.${m}`, x);
      }
    } else if (k === 'gpu') {
      if (typeof v === 'string') out.gpu = v;
      else if (v && typeof v === 'object') {
        out.gpu = 'custom';
        if (v.memory_gib !== undefined) out['gpu.memory_gib'] = v.memory_gib;
        if (v.name !== undefined) out['gpu.name'] = v.name;
      }
    } else if (k === 'model' || MODEL_KEYS.includes(k)) {
      if (typeof v === 'string') out[k] = v;
    } else if (k === 'inference_engine') {
      if (v === 'none') out.vllm = 'none';
      else if (v && typeof v === 'object' && v.name === 'vllm') {
        out.vllm = v.mode === 'server' ? 'server' : 'colocate';
        for (const [m, x] of Object.entries(v)) if (m !== 'name' && m !== 'mode') put(`inference_engine.${m}`, x);
      }
    } else {
      put(k, v);
    }
  }
  return out;
}

// ---------- state <-> link ----------

// The share link's query: the model and GPU always, then every setting that differs from its default.
export function toQuery(s, extra = {}) {
  const q = new URLSearchParams();
  const d = describeState(s);
  for (const k of PARAM_ORDER) {
    const v = s[k];
    let keep;
    if (k === 'model' || k === 'gpu') keep = true;
    else if (k === 'hf') keep = s.model === 'hf';
    else if (k.startsWith('model.')) keep = s.model === 'custom' && (ARCH[k].required || v !== defaultOf(s, k));
    else if (k === 'gpu.memory_gib') keep = s.gpu === 'custom';
    else if (k === 'gpu.name') keep = s.gpu === 'custom' && v !== DEFAULTS[k];
    else if (ROWS[k].parent || ROWS[k].strict) keep = applies(k, s) && v !== defaultOf(s, k, d);
    else keep = v !== defaultOf(s, k, d);
    if (!keep || v === '' || v === null || v === undefined) continue;
    const t = k === 'hf' ? toBase64Url(JSON.stringify(compactHf(v))) : String(v);
    if (t.length <= (k === 'hf' ? MAX_HF_CHARS : MAX_PARAM_CHARS)) q.set(k, t);
  }
  for (const [k, v] of Object.entries(extra)) q.set(k, String(v));
  return q.toString();
}

// A short, printable rendering of untrusted text for messages (shown with textContent only).
export function clip(text, n = 40) {
  const t = String(text).replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
  return t.length > n ? t.slice(0, n - 1) + '\u2026' : t;
}

function parseInt10(text, [lo, hi]) {
  if (!/^[0-9]{1,9}$/.test(text)) return null;
  const v = Number(text);
  return v >= lo && v <= hi ? v : null;
}

// The embed view's settings, read before the calculator has loaded (fromQuery reports their problems later).
export function readView(search) {
  let p;
  try { p = new URLSearchParams(search); } catch { p = new URLSearchParams(); }
  const embed = p.get('embed') === '1' || p.get('embed') === 'true';
  return { embed, theme: THEMES.includes(p.get('theme')) ? p.get('theme') : 'auto',
    view: VIEWS.includes(p.get('view')) ? p.get('view') : 'full' };
}

// Reads a link's query. Returns {state, problems:[{param, message}], embed, theme, view, pin}. Invalid or unknown
// parameters are reported and left out; the state holds only checked values. A model is read as the core reads it
// (findModel; an id of `models`, the presets' and the catalog's, is itself); `gpus` holds the GPU ids. pin: the
// state of a pinned configuration A, read from its own query (nested: no pin, embed, theme or view).
export function fromQuery(search, { gpus, models = new Set(), nested = false }) {
  const state = initialState();
  const problems = [];
  let embed = false;
  let theme = 'auto';
  let view = 'full';
  let pin = null;
  const report = (param, message) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ param: clip(param), message });
    else if (problems.length === MAX_PROBLEMS) problems.push({ param: '', message: 'more problems not listed' });
  };
  const result = () => ({ state, problems, embed, theme, view, pin });
  let params;
  try {
    params = new URLSearchParams(search);
  } catch {
    report('', 'the link could not be read');
    return result();
  }
  const seen = new Map();
  let count = 0;
  for (const [key, value] of params) {
    if (++count > 200) { report('', 'more than 200 parameters; the rest are ignored'); break; }
    if (seen.has(key)) { report(key, 'given more than once; the first value is used'); continue; }
    seen.set(key, value);
  }
  const get = (k) => seen.get(k);
  const known = new Set(nested ? PARAM_ORDER : [...PARAM_ORDER, ...VIEW_KEYS]);
  for (const [key, value] of seen) {
    if (!known.has(key)) {
      report(key, nested && VIEW_KEYS.includes(key) ? 'not used inside pin; ignored' : 'unknown parameter; ignored');
      continue;
    }
    const limit = key === 'hf' ? MAX_HF_CHARS : key === 'pin' ? MAX_PIN_CHARS : MAX_PARAM_CHARS;
    if (value.length > limit) {
      report(key, `value is ${value.length} characters long (at most ${limit}); ignored`);
      seen.set(key, undefined);
    }
  }
  const refused = new Set();
  const bad = (key, why) => { refused.add(key); report(key, `${why}, got "${clip(get(key))}"; ignored`); };
  const unused = (k) => get(k) !== undefined && !refused.has(k);

  const embedText = get('embed');
  if (embedText !== undefined) {
    if (embedText === '1' || embedText === 'true') embed = true;
    else if (embedText !== '0' && embedText !== 'false') bad('embed', 'must be 1 or 0');
  }
  const themeText = get('theme');
  if (themeText !== undefined) {
    if (THEMES.includes(themeText)) theme = themeText;
    else bad('theme', `must be one of ${THEMES.join(', ')}`);
  }
  const viewText = get('view');
  if (viewText !== undefined) {
    if (VIEWS.includes(viewText)) view = viewText;
    else bad('view', `must be one of ${VIEWS.join(', ')}`);
  }
  const pinText = get('pin');
  if (pinText === '') report('pin', 'is empty; ignored');
  else if (pinText !== undefined) {
    const a = fromQuery(pinText, { gpus, models, nested: true });
    pin = a.state;
    for (const p of a.problems) report(`pin: ${p.param}`, p.message);
  }

  // The model: a preset, an explicit architecture, or a Hugging Face config.json.
  let model = get('model');
  if (model === undefined && get('hf') !== undefined) model = 'hf';
  if (model !== undefined) {
    const found = model === 'custom' || model === 'hf' || models.has(model) ? { id: model, near: [] } : findModel(model, 3);
    if (found.id) state.model = found.id;
    else {
      const near = found.near.map((m) => m.id);
      report('model', `"${clip(model)}" is not a preset or a Hugging Face id of the catalog (nor "custom" or "hf"); ` +
        `ignored${near.length ? `. Did you mean ${near.join(', ')}?` : ''}`);
    }
  }
  if (state.model === 'hf') {
    const text = get('hf');
    let hf = null;
    if (text === undefined) report('hf', 'model=hf needs an hf parameter (base64url of the config.json)');
    else if (!/^[A-Za-z0-9_-]+$/.test(text)) bad('hf', 'must be base64url text');
    else {
      try {
        const obj = JSON.parse(fromBase64Url(text));
        if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new Error('not an object');
        hf = compactHf(obj);
      } catch {
        report('hf', 'is not base64url of a JSON object; ignored');
      }
    }
    if (hf) state.hf = hf;
    else state.model = DEFAULTS.model;
  } else if (get('hf') !== undefined) {
    report('hf', 'only used with model=hf; ignored');
  }
  for (const k of ARCH_KEYS) {
    const key = 'model.' + k;
    const text = get(key);
    if (text === undefined) continue;
    if (state.model !== 'custom') { report(key, 'only used with model=custom; ignored'); continue; }
    state[key] = readScalar(key, text, bad);
    if (state[key] === undefined) state[key] = DEFAULTS[key];
  }
  if (state.model === 'custom')
    for (const k of ARCH_KEYS) if (get('model.' + k) === undefined) state['model.' + k] = defaultOf(state, 'model.' + k);

  // The framework and its version before the rest: their profile gives precision, loss ... their defaults.
  const fw = get('framework') === undefined ? undefined : readScalar('framework', get('framework'), bad);
  const fv = get('framework_version') === undefined ? undefined : readScalar('framework_version', get('framework_version'), bad);
  if (fw !== undefined || fv !== undefined) Object.assign(state, applyProfile({ ...state, framework: fw ?? state.framework, framework_version: fv ?? '' }));
  for (const key of PARAM_ORDER) {
    if (key === 'model' || key === 'hf' || key === 'framework' || key === 'framework_version' || key.startsWith('model.'))
      continue;
    const text = get(key);
    if (text === undefined) continue;
    const v = readScalar(key, text, bad, { gpus });
    if (v !== undefined) state[key] = v;
  }
  // Links from before the Generation field: a vllm_share above 0 meant a colocated vLLM, 0 generation in-process.
  if (get('vllm') === undefined && unused('vllm_share')) {
    if (state.vllm_share > 0) state.vllm = 'colocate';
    else state.vllm_share = DEFAULTS.vllm_share;
  }
  let described = describeState(state);
  for (const k of FOLLOWERS) {
    if (unused(k)) continue;
    const v = defaultOf(state, k, described);
    if (v !== state[k]) state[k] = v, described = describeState(state);
  }
  // What the link set that does not apply to its own settings: reported here and dropped, unless the core reads it and
  // says what is wrong with it next to its field.
  const refusedByCore = new Set(described.errors.map((e) => LINK_OF[e.field]));
  for (const k of PARAM_ORDER) {
    const row = ROWS[k];
    if (!row || !unused(k) || applies(k, state) || (carried(k, state) && refusedByCore.has(k))) continue;
    report(k, `only used with ${appliesText(k)}; ignored`);
    state[k] = defaultOf(state, k);
  }
  if (state.gpu !== 'custom') {
    for (const k of ['gpu.memory_gib', 'gpu.name'])
      if (get(k) !== undefined) { report(k, 'only used with gpu=custom; ignored'); state[k] = DEFAULTS[k]; }
  }
  return result();
}

function readScalar(key, text, bad, ids = {}) {
  if (key in INTS) {
    const v = parseInt10(text, INTS[key]);
    if (v === null) bad(key, `must be an integer from ${INTS[key][0]} to ${INTS[key][1]}`);
    if (v !== null && CHOICES[key]) return String(v);
    return v === null ? undefined : v;
  }
  if (key in NUMBERS) {
    const [lo, hi] = NUMBERS[key];
    const open = ROWS[key] && ROWS[key].max_excluded;
    const v = /^[0-9]{1,19}(\.[0-9]{1,17})?(e[+-]?[0-9]{1,2})?$/i.test(text) ? Number(text) : NaN;
    if (v >= lo && (open ? v < hi : v <= hi)) return v;
    bad(key, `must be a number from ${lo} to ${open ? 'below ' : ''}${hi}`);
    return undefined;
  }
  if (BOOLS.includes(key)) {
    if (text === 'true' || text === 'false') return text === 'true';
    bad(key, 'must be true or false');
    return undefined;
  }
  if (key in CHOICES) {
    if (CHOICES[key].includes(text)) return text;
    bad(key, `must be one of ${CHOICES[key].join(', ')}`);
    return undefined;
  }
  if (MODEL_KEYS.includes(key)) {
    const id = findModel(text, 1).id;
    if (id) return id;
    bad(key, 'must be a preset id or a Hugging Face id of the catalog');
    return undefined;
  }
  if (key === 'gpu') {
    if (text === 'custom' || ids.gpus.includes(text)) return text;
    bad(key, 'must be a GPU id from the catalog or "custom"');
    return undefined;
  }
  if (key === 'gpu.memory_gib') {
    const v = /^[0-9]{1,7}(\.[0-9]{1,12})?$/.test(text) ? Number(text) : NaN;
    if (v >= 0.0625 && v <= 2 ** 20) return v;
    bad(key, 'must be a number of GiB from 0.0625 to 1048576');
    return undefined;
  }
  if (key === 'gpu.name') {
    if (/^[\p{L}\p{N} ._()+\-/]{1,60}$/u.test(text)) return text;
    bad(key, 'must be 1 to 60 letters, digits, spaces or . _ ( ) + - /');
    return undefined;
  }
  if (key === 'model.dropout') {
    const v = /^0(\.[0-9]{1,12})?$/.test(text) ? Number(text) : NaN;
    if (v >= 0 && v < 1) return v;
    bad(key, 'must be a number from 0 to below 1');
    return undefined;
  }
  if (key === 'framework_version' || key === 'backend_version') {
    if (RELEASE.test(text)) return text;
    bad(key, key === 'framework_version'
      ? `must be a release ("0.2.1") or a date ("2024-05-20") of at most ${VERSION_CHARS} characters`
      : `must be a release ("0.41.1") of at most ${VERSION_CHARS} characters`);
    return undefined;
  }
  if (key === 'alloc_conf') {  // its options and values are the core's to check
    if (/^[A-Za-z0-9_:.,+ ]{1,512}$/.test(text)) return text;
    bad(key, 'must be PYTORCH_CUDA_ALLOC_CONF’s text: option:value pairs separated by commas');
    return undefined;
  }
  if (key === 'targets') {
    const list = text.split(',');
    if (list.length && list.length <= 64 && list.every((t) => /^[A-Za-z0-9_.-]{1,64}$/.test(t))) return text;
    bad(key, 'must be a comma-separated list of module names (letters, digits, _ . -)');
    return undefined;
  }
  bad(key, 'is not understood');
  return undefined;
}
