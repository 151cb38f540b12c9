// Compiles the page's WebAssembly module as soon as the preloaded bytes arrive, while the browser lays out the page
// and before the page's modules run (load.js instantiates what this compiled). A classic async script: the earliest
// a script can start under the page's CSP.
if (typeof WebAssembly === 'object' && WebAssembly.compileStreaming) {
  self.vramcalcCompiled = WebAssembly.compileStreaming(fetch('vramcalc.wasm'));
  self.vramcalcCompiled.catch(() => {});  // load.js falls back to its own fetch, and says why if that fails too
}
