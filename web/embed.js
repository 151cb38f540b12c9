// vramcalc widgets for documentation pages. Load with <script src="https://SITE/embed.js" async></script>; it turns
//   <div data-vramcalc="model=llama-2-7b&gpu=a100-80gb&theme=dark&view=compact"></div>
//   <iframe data-vramcalc src="https://SITE/?embed=1&model=..."></iframe>
// into frames of the embed view that take their content's height (no inner scrollbar). Without a theme in the
// settings (or with data-theme="host") the widget follows the host page's own colours, also when they change.
(() => {
  const script = document.currentScript;
  const base = new URL('./', script && script.src ? script.src : location.href);
  const key = `__vramcalc ${base.origin}${base.pathname}`;
  if (window[key]) { window[key](); return; }
  const frames = new Map();  // iframe -> whether it follows the host page's theme
  let count = 0;

  // The host page's scheme: the luminance of the first opaque background behind the widget.
  function hostTheme(el) {
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const m = /rgba?\(([\d.]+)[, ]+([\d.]+)[, ]+([\d.]+)(?:[, /]+([\d.]+))?/.exec(getComputedStyle(n).backgroundColor);
      if (m && (m[4] === undefined || Number(m[4]) > 0.5)) {
        const [r, g, b] = [m[1], m[2], m[3]].map(Number);
        return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128 ? 'dark' : 'light';
      }
    }
    return /dark/.test(getComputedStyle(document.documentElement).colorScheme) &&
      matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  }

  // Tells the frame that it is sized from here (and the host's theme, where it follows it): nothing private, so to
  // any origin (a frame not loaded yet ignores it, and asks again with its first height).
  function hello(frame) {
    if (!frame.contentWindow) return;
    frame.contentWindow.postMessage({ type: 'vramcalc:host', theme: frames.get(frame) ? hostTheme(frame) : undefined }, '*');
  }

  function manage(frame, host) {
    frame.style.border = '0';
    frame.style.width = '100%';
    frame.style.display = 'block';
    frame.style.overflow = 'hidden';
    frames.set(frame, host);
    frame.addEventListener('load', () => hello(frame));
    hello(frame);
  }

  function setup(el) {
    if (el.dataset.vramcalcReady) return;
    el.dataset.vramcalcReady = '1';
    if (el.tagName === 'IFRAME') {
      let src;
      try { src = new URL(el.src, location.href); } catch { return; }
      if (src.origin !== base.origin) return;
      manage(el, el.dataset.theme === 'host' || !src.searchParams.has('theme'));
      return;
    }
    const q = new URLSearchParams(el.getAttribute('data-vramcalc') || '');
    q.delete('embed');
    q.set('embed', '1');
    // The theme: the settings', else data-theme's, else the host page's.
    const theme = q.get('theme') || el.dataset.theme || 'host';
    const host = theme === 'host';
    if (host) q.delete('theme');
    else q.set('theme', theme);
    const frame = document.createElement('iframe');
    frame.loading = 'lazy';
    frame.src = new URL(`?${q}`, base).href;
    frame.name = `vramcalc-${++count}`;
    frame.title = el.getAttribute('data-title') || 'vramcalc: GPU memory estimate';
    frame.style.height = '180px';
    el.replaceChildren(frame);
    manage(frame, host);
  }

  function scan() {
    for (const el of document.querySelectorAll('div[data-vramcalc], iframe[data-vramcalc]')) setup(el);
  }

  window.addEventListener('message', (e) => {
    if (e.origin !== base.origin || !e.data || e.data.type !== 'vramcalc:height') return;
    for (const frame of frames.keys()) {
      if (!frame.isConnected) { frames.delete(frame); continue; }
      if (frame.contentWindow !== e.source) continue;
      const height = Number(e.data.height);
      if (Number.isFinite(height) && height > 0) frame.style.height = `${Math.min(Math.ceil(height), 20000)}px`;
      if (e.data.hosted !== true) hello(frame);
    }
  });

  // The host page's theme changes (a toggle, the system's scheme): the widgets that follow it follow.
  const rethemed = () => { for (const [frame, host] of frames) if (host) hello(frame); };
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', rethemed);
  const themes = new MutationObserver(rethemed);
  const added = new MutationObserver((list) => {
    const widget = (n) => n.nodeType === 1 && (n.matches('[data-vramcalc]') || n.querySelector('[data-vramcalc]'));
    if (list.some((m) => [...m.addedNodes].some(widget))) scan();
  });
  const observe = () => {
    for (const n of [document.documentElement, document.body])
      if (n) themes.observe(n, { attributes: true, attributeFilter: ['class', 'data-theme', 'style'] });
    if (document.body) added.observe(document.body, { childList: true, subtree: true });
  };
  window[key] = scan;
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => { scan(); observe(); });
  else { scan(); observe(); }
})();
