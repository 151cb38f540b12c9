#!/usr/bin/env node
// Size and speed of the web page: bytes shipped (raw and gzip), navigation to the first estimate shown in Chromium,
// and estimates per second inside WebAssembly without JSON. Prints figures against the goals; never fails on time.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { SITE, requireSite, loadModule, serve, launch } from './lib.mjs';

requireSite();
const GOALS = { gzip: 250 * 1024, firstEstimateMs: 300, estimatesPerSecond: 200000 };
const CONFIG = JSON.stringify({ model: 'llama-2-7b', gpu: 'a100-80gb', precision: 'bf16-mixed', strategy: 'deepspeed',
  zero: 2, gpus: 8, seq_len: 4096, micro_batch: 2, checkpointing: 'full' });
const seconds = Number(process.argv[2] || 1);

let raw = 0;
let gz = 0;
console.log('Site files (build/wasm/site):');
for (const f of readdirSync(SITE).sort()) {
  const data = readFileSync(join(SITE, f));
  const z = gzipSync(data, { level: 9 }).length;
  raw += data.length;
  gz += z;
  console.log(`  ${f.padEnd(16)} ${String(data.length).padStart(8)} B raw ${String(z).padStart(8)} B gzip`);
}
console.log(`  ${'total'.padEnd(16)} ${String(raw).padStart(8)} B raw ${String(gz).padStart(8)} B gzip` +
  `  (goal <= ${GOALS.gzip / 1024} KB gzip: ${gz <= GOALS.gzip ? 'met' : 'MISSED'})`);

const mod = await loadModule();
const node = mod.benchEstimates(CONFIG, seconds);
const t0 = performance.now();
let n = 0;
while (performance.now() - t0 < seconds * 1000) { mod.estimate(CONFIG); n++; }
const jsonRate = n / ((performance.now() - t0) / 1000);

const server = await serve();
const browser = await launch();
const times = [];
let browserRate = 0;
try {
  for (let i = 0; i < 6; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(server.url + '?model=llama-2-7b&gpu=a100-80gb&strategy=deepspeed&gpus=8&zero=2');
    await page.waitForSelector('body[data-ready=true]');
    const ms = await page.evaluate(() => performance.getEntriesByName('vramcalc:first-estimate')[0].startTime);
    times.push(ms);
    if (i === 5)
      browserRate = await page.evaluate(async ([config, s]) => {
        const { default: create } = await import('./vramcalc.js');
        const m = await create();
        return m.benchEstimates(config, s);
      }, [CONFIG, seconds]);
    await context.close();
  }
} finally {
  await browser.close();
  await server.close();
}
const cold = times[0];
const warm = times.slice(1).sort((a, b) => a - b)[Math.floor((times.length - 1) / 2)];
console.log(`Navigation to the first estimate shown (Chromium, 127.0.0.1): first load ${cold.toFixed(0)} ms, ` +
  `median of the next ${times.length - 1} ${warm.toFixed(0)} ms  (goal <= ${GOALS.firstEstimateMs} ms: ` +
  `${cold <= GOALS.firstEstimateMs ? 'met' : 'missed'})`);
console.log('Estimates per second inside WebAssembly, breakdown only, no JSON (7B, ZeRO-2, 8 GPUs):');
console.log(`  Chromium ${Math.round(browserRate).toLocaleString('en')}/s, Node ${Math.round(node).toLocaleString('en')}/s` +
  `  (goal >= ${GOALS.estimatesPerSecond.toLocaleString('en')}: ${Math.min(browserRate, node) >= GOALS.estimatesPerSecond ? 'met' : 'missed'})`);
console.log(`  full report, JSON text to JSON text (Node): ${Math.round(jsonRate).toLocaleString('en')}/s`);
