// Share links drawn at random from the core's schema (every key the page has a field for, valid values only): the page
// given each (opened on the first, then reached by history) must show no link problem, send a configuration the CLI echoes byte for byte as it echoes the drawn
// one, and show the CLI's total. The drawing reads nothing but `vramcalc schema` and asks the core only whether a
// drawn configuration is valid; the link is written from the schema's link names, not by the page's code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cli, CLI, loadModule } from './lib.mjs';
import { withSiteAndBrowser } from './hooks.mjs';

let server;
let browser;
withSiteAndBrowser((s, b) => { server = s; browser = b; });

const LINKS = Number(process.env.VRAMCALC_RANDOM_LINKS || 200);
const SEED = Number(process.env.VRAMCALC_RANDOM_SEED || 20261202);

// A small deterministic generator (mulberry32), so that a failure names a seed that reproduces it.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const schema = JSON.parse(execFileSync(CLI, ['schema'], { encoding: 'utf8' }));
const rows = new Map(schema.keys.map((k) => [k.name, k]));
// The page's own fields for the model and the GPU: drawn apart (a catalog id), never through the generic rows.
const DRAWN_APART = new Set(['model', 'gpu', 'gpu.name', 'gpu.memory_gib']);

// A key's value as the schema's conditions compare it: a method's name for the object keys, numbers as text.
function conditionValue(name, config, defaults) {
  const v = name in config ? config[name] : defaults[name];
  if (v && typeof v === 'object') return v.method ?? v.mode ?? '';
  return typeof v === 'number' || typeof v === 'boolean' ? String(v) : v;
}
function applies(row, config, defaults) {
  if (!row.applies) return true;
  return row.applies.some((all) => all.every((a) => {
    const v = conditionValue(a.key, config, defaults);
    return a.in ? a.in.includes(v) : Number(v) > a.above;
  }));
}

const pick = (r, list) => list[Math.floor(r() * list.length)];
// A value within the row's bounds, drawn from those people type: small powers of two, the bounds, round numbers.
function drawValue(r, row, described, config) {
  const lo = row.min ?? 0;
  const hi = row.max ?? 0;
  if (row.choices) {
    const c = pick(r, row.choices).name;
    return row.type === 'integer' ? Number(c) : c;
  }
  if (row.type === 'boolean') return r() < 0.5;
  if (row.type === 'integer') {
    // Mostly small (counts that must divide one another), sometimes up to 2^16.
    const top = r() < 0.4 ? 2 : r() < 0.67 ? 64 : 1 << 16;
    const cands = [lo, lo + 1];
    for (let p = 1; p <= Math.min(hi, top); p *= 2) if (p >= lo) cands.push(p);
    return pick(r, cands.filter((v) => v <= hi));
  }
  if (row.type === 'number') {
    const cands = [lo, hi, lo + (hi - lo) / 2, ...[0.1, 0.3, 0.5, 1, 2.5, 10, 100, 1e9, 2e12].filter((v) => v > lo && v < hi)];
    return Number(pick(r, cands).toPrecision(6));
  }
  if (row.type === 'list') {
    const modules = described.modules;
    const n = 1 + Math.floor(r() * Math.min(3, modules.length));
    return [...new Set(Array.from({ length: n }, () => pick(r, modules)))];
  }
  if (row.type === 'model') return r() < 0.5 ? config.model : pick(r, ['gpt2', 'llama-2-7b', 'llama-3.1-8b']);
  if (row.type === 'text') {
    const texts = { framework_version: ['0.2.1', '2024-05-20', '4.46.0'],
      alloc_conf: ['expandable_segments:True', 'max_split_size_mb:128', 'roundup_power2_divisions:4'] };
    return pick(r, texts[row.name] || ['0.41.1', '0.45.0']);
  }
  return undefined;
}

// Draws a valid configuration: the model and the GPU, then each key in the schema's order, with some probability,
// where it applies and the core accepts it (three tries).
function drawConfig(r, mod, models, gpus) {
  let config = { model: pick(r, models), gpu: pick(r, gpus) };
  const describe = (c) => JSON.parse(mod.describe(JSON.stringify(c)));
  let d = describe(config);
  for (const row of schema.keys) {
    // A key that applies only under an earlier choice is drawn more often once that choice is made.
    if (!row.link || DRAWN_APART.has(row.name) || r() > (row.applies ? 0.7 : 0.35)) continue;
    if (!applies(row, config, d.defaults)) continue;
    if (row.parent && !(config[row.parent] && typeof config[row.parent] === 'object')) continue;
    for (let attempt = 0; attempt < 3; ++attempt) {
      const next = structuredClone(config);
      if (!put(next, row, drawValue(r, row, d, next))) break;
      let nd = describe(next);
      // The keys the core then names are drawn again (a TRL method's prompt and completion lengths, GRPO's
      // generations against the micro-batch), twice at most.
      for (let fix = 0; fix < 2 && nd.errors.length; ++fix) {
        for (const e of nd.errors) {
          const named = rows.get(e.field);
          if (!named || !named.link || named === row || DRAWN_APART.has(named.name)) continue;
          if (named.name in next && !named.parent && !applies(named, next, nd.defaults)) delete next[named.name];
          else put(next, named, drawValue(r, named, nd, next));
        }
        nd = describe(next);
      }
      if (nd.errors.length) continue;
      config = next;
      d = nd;
      break;
    }
  }
  // A key drawn before a later one made it inapplicable (seq_len before a TRL method) leaves the link.
  for (const row of schema.keys) {
    if (!row.link || DRAWN_APART.has(row.name) || row.parent || !(row.name in config)) continue;
    if (!applies(row, config, d.defaults)) delete config[row.name];
  }
  assert.deepEqual(describe(config).errors, [], JSON.stringify(config));
  return config;
}

// Sets a drawn value in a configuration, in the core's JSON form; false when there is none.
function put(config, row, v) {
  if (v === undefined) return false;
  if (row.name === 'finetune') config.finetune = v === 'full' ? 'full' : { method: v };
  else if (row.name === 'inference_engine') config.inference_engine = v === 'none' ? 'none' : { name: 'vllm', mode: v };
  else if (row.parent) config[row.parent][row.name.slice(row.parent.length + 1)] = v;
  else config[row.name] = v;
  return true;
}

// The link of a configuration, written from the schema's link names.
function linkOf(config) {
  const q = new URLSearchParams();
  for (const row of schema.keys) {
    if (!row.link) continue;
    let v;
    if (row.parent) {
      const parent = config[row.parent];
      v = parent && typeof parent === 'object' ? parent[row.name.slice(row.parent.length + 1)] : undefined;
    } else v = config[row.name];
    if (v === undefined) continue;
    if (row.name === 'finetune') v = typeof v === 'object' ? v.method : v;
    if (row.name === 'inference_engine') v = typeof v === 'object' ? v.mode : v;
    q.set(row.link, Array.isArray(v) ? v.join(',') : String(v));
  }
  return '?' + q.toString();
}

const echoOf = (configText) => {
  const r = cli('estimate', configText);
  assert.equal(r.code, 0, `the CLI rejected ${configText}`);
  const out = JSON.parse(r.stdout);
  return { config: JSON.stringify(out.config), total: String(out.total_bytes) };
};

test(`${LINKS} random share links: the page's configuration and total are the CLI's (seed ${SEED})`, async () => {
  const mod = await loadModule();
  const list = JSON.parse(mod.models());
  const models = [...list.models.map((m) => m.id), ...list.catalog.map((m) => m.id)];
  const gpus = list.gpus.map((g) => g.id);
  const r = rng(SEED);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const seenKeys = new Set();
  const linked = () => schema.keys.filter((k) => k.link && !DRAWN_APART.has(k.name));
  const unseen = () => linked().filter((k) => !seenKeys.has(k.link)).map((k) => k.link);
  let visited = 0;
  const visit = async (config) => {
    const link = linkOf(config);
    for (const k of new URLSearchParams(link).keys()) seenKeys.add(k);
    const want = echoOf(JSON.stringify(config));
    // The first link opens the page; every later one arrives as a link the page did not make (Back or Forward to
    // it), read by the same parser as on load, without reloading the module each time.
    if (visited++ === 0) {
      await page.goto(server.url + link);
      await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
    } else {
      await page.evaluate((q) => {
        history.pushState(null, '', q);
        dispatchEvent(new PopStateEvent('popstate', { state: null }));
      }, link);
      await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
    }
    const where = `link ${visited - 1} ${link}`;
    assert.equal(await page.isHidden('#link-problems'), true,
      `${where}: the page found problems: ${await page.textContent('#link-problems')}`);
    const sent = await page.textContent('#config-json');
    assert.equal(echoOf(sent).config, want.config, `${where}: the page sent ${sent}`);
    assert.equal(await page.getAttribute('#total', 'data-bytes'), want.total, `${where}: total`);
  };
  try {
    for (let i = 0; i < LINKS; ++i) await visit(drawConfig(r, mod, models, gpus));
    // Then, from the same draw, the links that bring a key no link has carried yet (drawing is cheap, visiting is
    // not), until every key has been in one.
    for (let extra = 0; extra < 4000 && LINKS >= 200 && unseen().length; ++extra) {
      const config = drawConfig(r, mod, models, gpus);
      const keys = [...new URLSearchParams(linkOf(config)).keys()];
      if (keys.some((k) => !seenKeys.has(k))) await visit(config);
    }
  } finally {
    await context.close();
  }
  assert.deepEqual(errors, []);
  // Every key the page has a field for appeared in some link (the draw reaches the whole schema).
  if (LINKS >= 200) assert.deepEqual(unseen(), [], 'keys no link drew');
});
