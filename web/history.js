// Back and Forward through committed changes. A change opens a history entry; keystrokes rewrite the entry they
// opened until the field's change event (or a suggestion, a model pick, a chart point, pin or unpin) commits it.
// Each entry holds the page's state, so that going back restores exactly what was shown.
let sealed = true;
let onRestore = null;

export function initHistory(restore) {
  onRestore = restore;
  window.addEventListener('popstate', (e) => {
    sealed = true;
    onRestore(e.state && e.state.vramcalc ? e.state.vramcalc : null);
  });
}

// query: the link of what is shown; snapshot: what restores it; commit: whether the change is complete; via: what
// made it (a suggestion's change, shown by the Undo control).
export function record(query, snapshot, { commit = false, via = null, first = false } = {}) {
  const url = `${location.pathname}?${query}`;
  const entry = { vramcalc: snapshot, via: via || (!sealed && history.state ? history.state.via : null) };
  if (first) {
    history.replaceState(entry, '', url);
    sealed = true;
    return;
  }
  if (location.search.slice(1) === query) {
    if (commit) sealed = true;
    return;
  }
  if (sealed) history.pushState(entry, '', url);
  else history.replaceState(entry, '', url);
  sealed = commit;
}

// The change that made the current entry, when it was a suggestion (else null).
export const madeBy = () => (history.state && typeof history.state.via === 'string' ? history.state.via : null);
