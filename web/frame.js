// The page's look: its theme, and in the embed view (?embed=1) its extent and its height, posted to the page that
// frames it so that embed.js can size the frame. The message holds the height, the frame's name and whether
// embed.js has answered, nothing else.
import { THEMES } from './params.js';

export function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}

export function initFrame({ embed, theme, view }) {
  applyTheme(theme);
  if (!embed) return;
  document.body.classList.add('embed', `view-${view}`);
  if (window.parent === window) return;
  const id = /^[\w-]{1,64}$/.test(window.name) ? window.name : '';
  // embed.js names a frame that follows the host page vramcalc-N-dark or -light: its first paint in that scheme.
  const scheme = /^vramcalc-\d+-(light|dark)$/.exec(id);
  if (scheme && theme === 'auto') applyTheme(scheme[1]);
  let last = -1;
  let hosted = false;
  // The height right after each change, measured at once: a frame out of view runs no rendering steps, so a
  // ResizeObserver or requestAnimationFrame there would wait until the reader scrolls to it.
  const post = () => {
    const height = Math.ceil(document.documentElement.scrollHeight);
    if (height === last) return;
    last = height;
    window.parent.postMessage({ type: 'vramcalc:height', id, height, hosted }, '*');
  };
  new MutationObserver(post).observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
  new ResizeObserver(post).observe(document.body);
  // embed.js answers: it sizes the frame (no scrollbar needed here) and may pass the host page's theme.
  window.addEventListener('message', (e) => {
    if (e.source !== window.parent || !e.data || e.data.type !== 'vramcalc:host') return;
    if (THEMES.includes(e.data.theme)) applyTheme(e.data.theme);
    if (hosted) return;
    hosted = true;
    document.documentElement.classList.add('hosted');
    last = -1;
    post();
  });
  post();
}
