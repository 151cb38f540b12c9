#!/usr/bin/env node
// Size and speed of the web page: bytes shipped (raw and gzip), navigation to the first estimate shown in Chromium,
// and estimates per second inside WebAssembly without JSON. Prints figures against the goals; never fails on time.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { SITE, requireSite, loadModule, serve, launch } from './lib.mjs';

requireSite();
const GOALS = { gzip: 250 * 1024, firstEstimateMs: 300, fast3gMs: 1500, changeMs: 50, estimatesPerSecond: 200000,
  planMs: 200, sizingMs: 1000 };
const CONFIG = JSON.stringify({ model: 'llama-2-7b', gpu: 'a100-80gb', precision: 'bf16-mixed', strategy: 'deepspeed',
  zero: 2, gpus: 8, seq_len: 4096, micro_batch: 2, checkpointing: 'full' });
// The planner's runs (cli/bench.cpp's).
const PLAN_CONFIG = JSON.stringify({ model: 'llama-2-70b', gpu: 'h100-80gb', gpus: 64, strategy: 'fsdp', seq_len: 4096,
  micro_batch: 2, grad_accum: 4, plan: true });
const SIZING_CONFIG = JSON.stringify({ model: 'llama-2-13b', gpu: 'a100-80gb', seq_len: 4096, micro_batch: 2, grad_accum: 8,
  train_tokens: 1e9 });
const seconds = Number(process.argv[2] || 1);

// What the page loads: everything but the modules fetched only when asked, the planner's (Make it fit) and the
// details' (when the export or AdamW card comes near the view).
const onDemand = (f) => f.startsWith('vramcalc-plan.') || f.startsWith('vramcalc-details.');
let raw = 0;
let gz = 0;
let onDemandGz = 0;
console.log('Site files (build/wasm/site):');
for (const f of readdirSync(SITE).sort()) {
  const data = readFileSync(join(SITE, f));
  const z = gzipSync(data, { level: 9 }).length;
  if (onDemand(f)) onDemandGz += z;
  else raw += data.length, gz += z;
  console.log(`  ${f.padEnd(20)} ${String(data.length).padStart(8)} B raw ${String(z).padStart(8)} B gzip${onDemand(f) ? '  (on demand)' : ''}`);
}
console.log(`  ${'the page'.padEnd(20)} ${String(raw).padStart(8)} B raw ${String(gz).padStart(8)} B gzip` +
  `  (goal <= ${GOALS.gzip / 1024} KB gzip: ${gz <= GOALS.gzip ? 'met' : 'MISSED'}); the planner's and the details' modules on demand: ` +
  `${(onDemandGz / 1024).toFixed(1)} KB gzip`);

const mod = await loadModule();
const node = mod.benchEstimates(CONFIG, seconds);
const t0 = performance.now();
let n = 0;
while (performance.now() - t0 < seconds * 1000) { mod.answer(CONFIG); n++; }
const jsonRate = n / ((performance.now() - t0) / 1000);

// Where the first estimate's time goes, from a cold browser each time (a new Chromium process): the HTML, the
// module's fetch and compile, the first estimate painted, the details below it (evidence, suggestions, exports,
// charts); then a field change to updated numbers. Marks from web/app.js and web/load.js.
const server = await serve(SITE, { encoding: 'gzip' });
const PAGE = '?model=llama-2-7b&gpu=a100-80gb&gpus=8&strategy=deepspeed&zero=2';
async function visit({ network, url = server.url, query = PAGE } = {}) {
  const browser = await launch();
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    if (network) {
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.enable');
      await cdp.send('Network.emulateNetworkConditions', { offline: false, ...network });
    }
    await page.goto(url + query);
    await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 60000 });
    const parts = await page.evaluate(() => {
      const at = (name) => (performance.getEntriesByName(name)[0] || {}).startTime;
      const nav = performance.getEntriesByType('navigation')[0];
      return { html: nav.responseEnd, appStart: at('vramcalc:app-start'), wasmReady: at('vramcalc:wasm-ready'),
        first: at('vramcalc:first-estimate'), details: at('vramcalc:details') };
    });
    if (network || query !== PAGE) return { parts };
    // A field change: typed, then the frame that shows its numbers (the answer, suggestions, charts, exports).
    const changes = [];
    for (const v of ['2', '3', '4', '1', '2', '8']) {
      changes.push(await page.evaluate(async (value) => {
        const el = document.getElementById('f-micro_batch');
        const t0 = performance.now();
        el.value = value;
        el.dispatchEvent(new Event('input', { bubbles: true }));
        await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
        const m = performance.getEntriesByName('vramcalc:update').at(-1);
        return { total: m.startTime + m.duration - t0, update: m.duration };
      }, v));
    }
    // The planner in the page's worker (plan_worker.js), its module loaded by a first call: a plan for a 70B run
    // on 64 GPUs (the labelled group included, as "Search the plans" asks) and sizing over the catalog.
    const planner = await page.evaluate(async ([plan, sizing]) => {
      const worker = new Worker('plan_worker.js', { type: 'module' });
      let id = 0;
      const call = (fn, text) => new Promise((ok) => {
        const mine = ++id;
        worker.onmessage = ({ data }) => { if (data.id === mine) ok(data); };
        worker.postMessage({ id: mine, fn, text });
      });
      const timed = async (fn, text) => { const t0 = performance.now(); await call(fn, text); return performance.now() - t0; };
      const load = await timed('plan', plan);
      const plans = [await timed('plan', plan), await timed('plan', plan), await timed('plan', plan)];
      const sizings = [await timed('sizing', sizing), await timed('sizing', sizing)];
      worker.terminate();
      return { load, plans, sizings };
    }, [PLAN_CONFIG, SIZING_CONFIG]);
    let rate = 0;
    if (seconds > 0)
      rate = await page.evaluate(async ([config, s]) => {
        const { default: create } = await import('./vramcalc.js');
        return (await create()).benchEstimates(config, s);
      }, [CONFIG, seconds]);
    return { parts, changes, rate, planner };
  } finally {
    await browser.close();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const runs = [];
for (let i = 0; i < 5; i++) runs.push(await visit());
// The page a first-time user opens, without a link: the defaults (7B full fine-tuning on one A100 80GB) do not fit,
// so its answer carries the suggestions.
const fresh = [];
for (let i = 0; i < 5; i++) fresh.push(await visit({ query: '' }));
// "Fast 3G" as the goal states it: 1.6 Mbps down, 750 kbps up, 150 ms round trip (DevTools' own preset adds
// 562.5 ms to every request instead).
const seen = server.requests.length;
const fast3g = await visit({ network: { latency: 150, downloadThroughput: 1.6e6 / 8, uploadThroughput: 750e3 / 8 } });
const wasmFetches = server.requests.slice(seen).filter((u) => u.startsWith('/vramcalc.wasm')).length;
await server.close();
// The same from a host that serves brotli (most static hosts; GitHub Pages serves gzip only).
const brServer = await serve(SITE, { encoding: 'br' });
const fast3gBr = await visit({ url: brServer.url, network: { latency: 150, downloadThroughput: 1.6e6 / 8, uploadThroughput: 750e3 / 8 } });
await brServer.close();
const part = (k) => median(runs.map((r) => r.parts[k]));
console.log('From a cold browser to the first estimate (Chromium, 127.0.0.1, gzip; medians of 5):');
console.log(`  HTML received ${part('html').toFixed(0)} ms, scripts running ${part('appStart').toFixed(0)} ms, ` +
  `module fetched and compiled ${part('wasmReady').toFixed(0)} ms, first estimate shown ${part('first').toFixed(0)} ms, ` +
  `details below it ${part('details').toFixed(0)} ms`);
console.log(`  first estimate ${part('first').toFixed(0)} ms  (goal <= ${GOALS.firstEstimateMs} ms: ` +
  `${part('first') <= GOALS.firstEstimateMs ? 'met' : 'missed'})`);
const freshFirst = median(fresh.map((r) => r.parts.first)), freshReady = median(fresh.map((r) => r.parts.wasmReady));
console.log(`  the page without a link (its defaults do not fit: the answer carries suggestions): module ready ` +
  `${freshReady.toFixed(0)} ms, first estimate ${freshFirst.toFixed(0)} ms  (goal <= ${GOALS.firstEstimateMs} ms: ` +
  `${freshFirst <= GOALS.firstEstimateMs ? 'met' : 'missed'})`);
console.log(`  on Fast 3G (1.6 Mbps, 150 ms RTT): first estimate ${fast3g.parts.first.toFixed(0)} ms, the module fetched ` +
  `${wasmFetches} time(s) a visit  (goal <= ` +
  `${GOALS.fast3gMs} ms: ${fast3g.parts.first <= GOALS.fast3gMs ? 'met' : 'missed'})`);
console.log(`  on Fast 3G from a brotli host: first estimate ${fast3gBr.parts.first.toFixed(0)} ms (gzip is the goal's measure)`);
const changes = runs.flatMap((r) => r.changes);
console.log(`A field change to updated numbers: median ${median(changes.map((c) => c.total)).toFixed(1)} ms, worst ` +
  `${Math.max(...changes.map((c) => c.total)).toFixed(1)} ms (of which the update ${median(changes.map((c) => c.update)).toFixed(1)} ms)` +
  `  (goal <= ${GOALS.changeMs} ms: ${median(changes.map((c) => c.total)) <= GOALS.changeMs ? 'met' : 'missed'})`);
const plansMs = median(runs.flatMap((r) => r.planner.plans)), sizingMs = median(runs.flatMap((r) => r.planner.sizings));
console.log('The planner in the page (its worker; medians over the cold-browser runs):');
console.log(`  its module fetched and compiled with a first plan ${median(runs.map((r) => r.planner.load)).toFixed(0)} ms; ` +
  `a plan for 70B on 64 H100 ${plansMs.toFixed(0)} ms  (goal <= ${GOALS.planMs} ms: ${plansMs <= GOALS.planMs ? 'met' : 'missed'})`);
console.log(`  sizing, 13B over the catalog ${sizingMs.toFixed(0)} ms  (goal <= ${GOALS.sizingMs} ms: ` +
  `${sizingMs <= GOALS.sizingMs ? 'met' : 'missed'})`);
const browserRate = runs.at(-1).rate;
console.log('Estimates per second inside WebAssembly, breakdown only, no JSON (7B, ZeRO-2, 8 GPUs):');
console.log(`  Chromium ${Math.round(browserRate).toLocaleString('en')}/s, Node ${Math.round(node).toLocaleString('en')}/s` +
  `  (goal >= ${GOALS.estimatesPerSecond.toLocaleString('en')}: ${Math.min(browserRate, node) >= GOALS.estimatesPerSecond ? 'met' : 'missed'})`);
console.log(`  the page's answer, JSON text to JSON text (Node): ${Math.round(jsonRate).toLocaleString('en')}/s`);
