// Copying: the share link, the embed code (the widget element with embed.js, or an iframe) and the configs.
import { $ } from './dom.js';
import './embed.js';  // defines <vramcalc-widget>, whose views' heights the iframe code takes

const esc = (t) => t.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

// query: the configuration's link query; site: the page's URL without query; theme '' leaves it to the host page.
// The widget: the custom element and embed.js (which sizes it); the iframe, for hosts that take no script, as tall as
// embed.js makes its view.
export function embedCodes(query, site, theme, view) {
  const extra = new URLSearchParams();
  if (theme) extra.set('theme', theme);
  if (view !== 'full') extra.set('view', view);
  const settings = [query, extra.toString()].filter(Boolean).join('&');
  const script = `<script src="${esc(new URL('embed.js', site).href)}"></script>`;
  const src = new URL(`?${[query, 'embed=1', extra.toString()].filter(Boolean).join('&')}`, site).href;
  const height = customElements.get('vramcalc-widget').heights[view];
  return {
    div: `<vramcalc-widget settings="${esc(settings)}"></vramcalc-widget>\n${script}`,
    iframe: `<iframe data-vramcalc src="${esc(src)}" title="vramcalc: GPU memory estimate" width="100%" height="${height}" ` +
      `style="border:0" loading="lazy"></iframe>\n${script}`,
  };
}

export async function copy(text, inputId, what) {
  const status = $('copy-status');
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = `${what} copied.`;
  } catch {
    const el = $(inputId);
    if (el.select) {
      el.focus();
      el.select();
    } else {
      const range = document.createRange();
      range.selectNodeContents(el);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
    }
    status.textContent = `${what} selected: press Ctrl+C (⌘C) to copy.`;
  }
}
