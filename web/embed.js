// vramcalc widgets for documentation pages. Load once per page, from the head: <script src="https://SITE/embed.js">
//   <vramcalc-widget settings="model=llama-2-7b&amp;gpu=a100-80gb&amp;view=compact"></vramcalc-widget>
// Older snippets keep working: <div data-vramcalc="..."></div> and <iframe data-vramcalc src="https://SITE/?embed=1&...">.
// The frame lives in the element's shadow root, so a framework that renders or hydrates the page sees no foreign
// children; it is as tall as its view from the start, so the page never shifts; it follows the host page's colours
// unless the settings give a theme.
(() => {
  const script = document.currentScript || document.querySelector('script[src$="/embed.js"]');
  const base = new URL('./', script && script.src ? script.src : location.href);
  const key = `__vramcalc ${base.origin}${base.pathname}`;
  if (window[key]) { window[key](); return; }
  // Each embed view's height in CSS pixels, the same at every width and for every estimate (web/style.css lays the
  // views out in blocks of fixed heights; tests/web/embed_hosts.test.mjs checks that each view fits its height).
  const HEIGHTS = { full: 590, compact: 266 };
  const frames = new Map();  // iframe -> {owner: the host element, host: follows the host's theme, theme: last sent, min}
  const seen = new WeakSet();  // the old forms' elements already mounted
  let count = 0;

  // [r, g, b, a] of any CSS colour (rgb, hsl, oklch, color(...)), as the canvas paints it.
  const ink = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
  function rgba(color) {
    ink.clearRect(0, 0, 1, 1);
    ink.fillStyle = color;
    ink.fillRect(0, 0, 1, 1);
    return ink.getImageData(0, 0, 1, 1).data;
  }

  // The host page's scheme: the luminance of the first opaque background behind the widget, else the canvas's.
  function hostTheme(el) {
    for (let n = el; n; n = n.parentElement || n.getRootNode().host) {
      const [r, g, b, a] = rgba(getComputedStyle(n).backgroundColor);
      if (a > 127) return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128 ? 'dark' : 'light';
    }
    const scheme = getComputedStyle(document.documentElement).colorScheme;
    return /dark/.test(scheme) && (!/light/.test(scheme) || matchMedia('(prefers-color-scheme: dark)').matches)
      ? 'dark' : 'light';
  }

  // Tells the frame that it is sized from here and, where it follows the host, the host's scheme: nothing private,
  // so to any origin (a frame not loaded yet ignores it, and asks again with its first height).
  function hello(frame, f, always) {
    const theme = f.host ? hostTheme(f.owner) : undefined;
    if (!always && theme === f.theme) return;
    f.theme = theme;
    if (frame.contentWindow) frame.contentWindow.postMessage({ type: 'vramcalc:host', theme }, '*');
  }

  function manage(frame, owner, host, view) {
    const f = { owner, host, theme: undefined, min: HEIGHTS[view] || HEIGHTS.full };
    Object.assign(frame.style, { border: '0', width: '100%', display: 'block', overflow: 'hidden', height: `${f.min}px` });
    frames.set(frame, f);
    frame.addEventListener('load', () => hello(frame, f, true));
    hello(frame, f, true);
  }

  const sheet = new CSSStyleSheet();
  sheet.replaceSync(':host { display: block; }');

  // A frame of the settings (a share link's query) in el's shadow root; theme: data-theme of the old div form.
  function mount(el, settings, theme) {
    const q = new URLSearchParams(settings);
    q.delete('embed');
    q.set('embed', '1');
    const pinned = q.get('theme') || theme || 'host';
    const host = pinned === 'host';
    if (host) q.delete('theme');
    else q.set('theme', pinned);
    const frame = document.createElement('iframe');
    frame.loading = 'lazy';
    // The name carries the host's scheme, so that the frame's first paint is already in it.
    frame.name = `vramcalc-${++count}${host ? `-${hostTheme(el)}` : ''}`;
    frame.title = el.getAttribute('title') || el.getAttribute('data-title') || 'vramcalc: GPU memory estimate';
    frame.src = new URL(`?${q}`, base).href;
    let root = el.shadowRoot;
    if (!root) {
      try { root = el.attachShadow({ mode: 'open' }); } catch { root = el; }
    }
    if (root !== el) root.adoptedStyleSheets = [sheet];
    for (const old of root.querySelectorAll('iframe')) frames.delete(old);
    root.replaceChildren(frame);
    manage(frame, el, host, q.get('view'));
    return frame;
  }

  class Widget extends HTMLElement {
    static observedAttributes = ['settings'];
    static heights = HEIGHTS;
    connectedCallback() {
      const settings = this.getAttribute('settings') || '';
      if (this.frame && this.shown === settings) return;
      this.shown = settings;
      this.frame = mount(this, settings);
    }
    attributeChangedCallback() { if (this.isConnected) this.connectedCallback(); }
    disconnectedCallback() { frames.delete(this.frame); this.frame = null; }
  }

  // The older forms, where they appear.
  function scan() {
    for (const el of document.querySelectorAll('div[data-vramcalc], iframe[data-vramcalc]')) {
      if (seen.has(el)) continue;
      seen.add(el);
      if (el.tagName === 'DIV') { mount(el, el.getAttribute('data-vramcalc') || '', el.dataset.theme); continue; }
      let src;
      try { src = new URL(el.src, location.href); } catch { continue; }
      if (src.origin !== base.origin) continue;
      manage(el, el, el.dataset.theme === 'host' || !src.searchParams.has('theme'), src.searchParams.get('view'));
    }
  }

  window.addEventListener('message', (e) => {
    if (e.origin !== base.origin || !e.data || e.data.type !== 'vramcalc:height') return;
    for (const [frame, f] of frames) {
      if (!frame.isConnected) { frames.delete(frame); continue; }
      if (frame.contentWindow !== e.source) continue;
      const height = Number(e.data.height);
      if (Number.isFinite(height) && height > 0) frame.style.height = `${Math.min(Math.max(Math.ceil(height), f.min), 20000)}px`;
      if (e.data.hosted !== true) hello(frame, f, true);
    }
  });

  // The host's colours change (a toggle of any attribute or class on <html> or <body>, a stylesheet swapped in the
  // head, the system's scheme; read again when a colour transition ends): the widgets that follow it follow.
  const rethemed = () => { for (const [frame, f] of frames) if (f.host) hello(frame, f, false); };
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', rethemed);
  document.addEventListener('transitionend', rethemed, true);
  const themes = new MutationObserver(rethemed);
  const added = new MutationObserver((list) => {
    const widget = (n) => n.nodeType === 1 && (n.matches('[data-vramcalc]') || n.querySelector('[data-vramcalc]'));
    if (list.some((m) => [...m.addedNodes].some(widget))) scan();
  });
  let body = null;
  const observe = () => {
    themes.observe(document.documentElement, { attributes: true, childList: true });
    if (document.head) themes.observe(document.head, { attributes: true, childList: true, subtree: true });
    if (document.body && document.body !== body) {
      body = document.body;
      themes.observe(body, { attributes: true });
      added.observe(body, { childList: true, subtree: true });
    }
  };
  new MutationObserver(() => { if (document.body !== body) { observe(); scan(); } })
    .observe(document.documentElement, { childList: true });
  window[key] = scan;
  if (!customElements.get('vramcalc-widget')) customElements.define('vramcalc-widget', Widget);
  observe();
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => { observe(); scan(); });
  else scan();
})();
