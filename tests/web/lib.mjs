// Shared by the web tests and the benchmark: paths, a tiny static server on 127.0.0.1, Chromium via playwright-core.
import { createServer } from 'node:http';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { gzipSync, brotliCompressSync, constants as zlib } from 'node:zlib';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SITE = process.env.VRAMCALC_SITE || join(ROOT, 'build/wasm/site');
export const CLI = process.env.VRAMCALC_CLI || join(ROOT, 'build/native/cli/vramcalc');
export const ARTIFACTS = join(ROOT, 'tests/web/artifacts');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// Missing prerequisites fail the test with a message saying what to run (never a silent pass).
export function requireSite() {
  for (const f of ['index.html', 'vramcalc.js', 'vramcalc.wasm', 'app.js'])
    if (!existsSync(join(SITE, f)))
      throw new Error(`the wasm site is missing (${join(SITE, f)}): build it with ` +
        '`NODE_PATH=/usr/share/nodejs cmake --preset wasm && ' +
        'NODE_PATH=/usr/share/nodejs cmake --build build/wasm -j2`');
}
export function requireCli() {
  if (!existsSync(CLI)) throw new Error(`the native CLI is missing (${CLI}): cmake --preset native && cmake --build build/native -j2`);
}
export function requirePlaywright() {
  try {
    return createRequire(join(ROOT, 'package.json'))('playwright-core');
  } catch {
    throw new Error(`playwright-core is missing (${join(ROOT, 'node_modules')}): run \`npm ci\` at the repository root`);
  }
}

// The page's WebAssembly module (wasm/bindings.cpp), or with `name` another of the site's ('vramcalc-details').
export async function loadModule(name = 'vramcalc') {
  requireSite();
  const { default: create } = await import(join(SITE, `${name}.js`));
  return create({ wasmBinary: readFileSync(join(SITE, `${name}.wasm`)) });
}

// Brings the export card into view, which fetches the exports' module, and waits for the exports it writes.
export async function showExports(page) {
  await page.locator('#export-card').scrollIntoViewIfNeeded();
  await page.waitForSelector('body[data-exports=true]', { timeout: 15000 });
}

// Runs the native CLI on one request; returns {code, stdout}.
export function cli(command, input) {
  const r = spawnSync(CLI, [command, '-'], { input, encoding: 'utf8', maxBuffer: 64 << 20 });
  return { code: r.status, stdout: r.stdout };
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', '.svg': 'image/svg+xml', '.json': 'application/json' };

// Serves SITE on 127.0.0.1 at a free port. Returns {url, close, requests}.
// encoding 'gzip' or 'br': compress what the browser accepts so (each file once, at start; gzip at zlib's default level, brotli
// at its highest, as hosts precompress static files), and let a preload be used, as a real host does (the
// benchmark's figures); the tests' default never compresses nor lets the browser keep a response.
const ENCODERS = {
  gzip: (body) => gzipSync(body),
  br: (body) => brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } }),
};
export async function serve(root = SITE, { encoding = null } = {}) {
  const requests = [];
  const compressed = new Map();  // path -> encoded bytes, made before the first request (as a host precompresses)
  if (encoding)
    for (const name of readdirSync(root)) {
      const file = join(root, name);
      if (statSync(file).isFile()) compressed.set(file, ENCODERS[encoding](readFileSync(file)));
    }
  const server = createServer({ maxHeaderSize: 1 << 20 }, (req, res) => {
    requests.push(req.url);
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = normalize(join(root, path));
    if (!file.startsWith(root)) { res.writeHead(403).end(); return; }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) { res.writeHead(404).end('not found'); return; }
    const headers = { 'content-type': TYPES[extname(file)] || 'application/octet-stream', 'cache-control': encoding ? 'no-cache' : 'no-store' };
    let body = readFileSync(file);
    if (encoding && new RegExp(`\\b${encoding}\\b`).test(req.headers['accept-encoding'] || '')) {
      if (!compressed.has(file)) compressed.set(file, ENCODERS[encoding](body));
      body = compressed.get(file);
      headers['content-encoding'] = encoding;
    }
    res.writeHead(200, headers);
    res.end(body);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, requests, close: () => new Promise((ok) => server.close(ok)) };
}

export async function launch() {
  const { chromium } = requirePlaywright();
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing (${CHROMIUM}): apt-get install chromium`);
  return chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

// A page of `url` in a new context that records what must never happen: a dialog, a script error, a request to
// an origin outside `origins`, a CSP violation (in any frame). `ready`: wait for the calculator's first estimate.
export async function openPage(browser, url, { origins = [new URL(url).origin + '/'], viewport = { width: 1280, height: 900 },
  ready = true, colorScheme = 'light', setup, unfold = true } = {}) {
  const context = await browser.newContext({ viewport, colorScheme });
  const page = await context.newPage();
  const log = { dialogs: [], errors: [], foreign: [] };
  page.on('dialog', (d) => { log.dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => log.errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') log.errors.push(m.text()); });
  context.on('request', (r) => {
    if (!origins.some((o) => r.url().startsWith(o)) && !r.url().startsWith('data:')) log.foreign.push(r.url());
  });
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  if (setup) await setup(context, page);
  await page.goto(url);
  if (ready) await page.waitForSelector('body[data-ready=true][data-details=true]', { timeout: 15000 });
  if (ready && unfold) await unfoldSettings(page);
  return { page, context, log };
}

// Opens every folded group of the form, as the "Show every setting" button does (tests of the knobs themselves).
export async function unfoldSettings(page) {
  // Pressed from script: a click would scroll the page down to the button.
  if (await page.isVisible('#unfold') && await page.getAttribute('#unfold', 'aria-pressed') !== 'true')
    await page.evaluate(() => document.getElementById('unfold').click());
}

// Two animation frames: the page's scheduled update has run.
export async function settle(page) {
  await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
}
