// What the page shows below the answer — the evidence, the charts, the exports, the plans, the AdamW step — as one
// module that app.js imports once the calculator is ready, so that its bytes never delay the first estimate.
export { drawChart, microBatchAxis, sequenceAxis } from './charts.js';
export { initAdamw } from './adamw.js';
export { renderEvidence } from './evidence.js';
export { renderTimeline } from './timeline.js';
export { renderExports, initExports } from './exports.js';
export { showMakeFit, searchPlans, sizeRun } from './plans.js';

// The WebAssembly module of the exports and the AdamW step (wasm/details_bindings.cpp), fetched when app.js asks.
export async function createModule() {
  const { default: create } = await import('./vramcalc-details.js');
  return create();
}
