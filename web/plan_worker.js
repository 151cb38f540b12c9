// The planner's module in a worker: plans and sizing run off the page's thread (sizing over the catalog takes
// seconds in WebAssembly). A message {id, fn: 'plan' | 'sizing', text} is answered with {id, json} (the core's JSON
// text, errors included) or {id, failed: true} when the module could not load.
let planner = null;
self.onmessage = async ({ data }) => {
  try {
    planner ||= import('./vramcalc-plan.js').then((m) => m.default());
    const mod = await planner;
    self.postMessage({ id: data.id, json: data.fn === 'sizing' ? mod.sizing(data.text) : mod.plan(data.text) });
  } catch (err) {
    planner = null;
    console.error('vramcalc: the planner module did not load', err);
    self.postMessage({ id: data.id, failed: true });
  }
};
