// Loading the WebAssembly module: one state while it loads or fails — a line while loading; on failure what
// happened, in words, and Retry (which fetches the module again). The details go to the console, never the page.
import { $, h, clear } from './dom.js';

function show(what, retry) {
  const box = clear($('load-state'));
  box.hidden = what === 'ready';
  box.className = `load-state ${what}`;
  box.setAttribute('role', what === 'failed' ? 'alert' : 'status');
  if (what === 'loading') box.append(h('p', {}, 'Loading the calculator…'));
  if (what === 'failed') {
    $('results').hidden = true;
    const reason = typeof WebAssembly === 'object'
      ? 'Its WebAssembly module could not be loaded: check the connection, then retry.'
      : 'This browser cannot run WebAssembly, which the calculator needs.';
    box.append(h('p', { class: 'box-title' }, 'The calculator could not start.'), h('p', {}, reason),
      h('button', { type: 'button', id: 'retry', onclick: retry }, 'Retry'));
  }
}

// The glue's factory with the module instantiated from `compiled` (Emscripten's instantiateWasm hook).
function instantiate(create, compiled) {
  return new Promise((ok, fail) => {
    create({
      instantiateWasm(imports, done) {
        WebAssembly.instantiate(compiled, imports).then((instance) => done(instance, compiled), fail);
        return {};
      },
    }).then(ok, fail);
  });
}

let attempts = 0;
let scriptFailed = false;

// Calls ready(module) once the module has loaded.
export async function loadCalculator(ready) {
  const retry = () => loadCalculator(ready);
  show('loading');
  attempts++;
  let mod;
  try {
    // A retry after the script itself failed asks for it under another URL: the module map keeps the failure. (The
    // URL in a variable: the bundler leaves it to the browser.)
    const url = scriptFailed ? `./vramcalc.js?retry=${attempts}` : './vramcalc.js';
    let create;
    try {
      ({ default: create } = await import(url));
    } catch (err) {
      scriptFailed = true;
      throw err;
    }
    // The module compile.js compiled while the page was laid out; on a retry, or where that failed, the glue's own fetch.
    const compiled = attempts === 1 && self.vramcalcCompiled ? await self.vramcalcCompiled.catch(() => null) : null;
    mod = await (compiled ? instantiate(create, compiled) : create());
  } catch (err) {
    console.error('vramcalc: the WebAssembly module did not load', err);
    show('failed', retry);
    if (!document.activeElement || document.activeElement === document.body) $('retry').focus();
    return;
  }
  performance.mark('vramcalc:wasm-ready');
  show('ready');
  ready(mod);
}
