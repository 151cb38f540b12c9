// Model names: what a typed id or hub URL selects, and the ids close to an unknown one.

// What a typed or pasted model name means as an id: "https://huggingface.co/Qwen/Qwen3-8B/tree/main" ->
// "Qwen/Qwen3-8B" (as core/model/model_catalog.cpp reads it: the host, then anything after owner/name, goes).
export function modelIdOf(text) {
  let t = String(text).trim().replace(/^https?:\/\//i, '').replace(/^www\./i, '')
    .replace(/^(huggingface\.co|hf\.co)\//i, '');
  t = t.split(/[?#]/)[0];
  const parts = t.split('/');
  if (parts.length > 2) t = parts.slice(0, 2).join('/');
  return t.replace(/\/+$/, '').trim();
}

// The id (as spelled in `ids`) a typed name or hub URL selects, case-insensitively; null when none.
export function resolveModel(text, ids) {
  if (String(text).length > 512) return null;
  const want = modelIdOf(text).toLowerCase();
  if (!want) return null;
  for (const id of ids) if (id.toLowerCase() === want) return id;
  return null;
}

const squash = (t) => t.toLowerCase().replace(/[^a-z0-9]/g, '');
function editDistance(a, b, cap) {
  if (Math.abs(a.length - b.length) > cap) return cap + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      best = Math.min(best, row[j]);
    }
    if (best > cap) return cap + 1;
    prev = row;
  }
  return prev[b.length];
}

// Up to n ids close to an unknown name: those containing it, then those a few edits away.
export function closeModels(text, ids, n = 3) {
  const id = modelIdOf(text);
  const q = squash(id);
  const qName = squash(id.split('/').pop());
  if (q.length < 2 || q.length > 80) return [];
  const cap = Math.max(1, Math.min(4, Math.floor(qName.length / 3)));
  const scored = [];
  for (const cand of ids) {
    const full = squash(cand);
    const name = squash(cand.split('/').pop());
    let score;
    if (full.includes(q) || (qName.length >= 3 && name.includes(qName))) score = (name.length - qName.length) / 1000;
    else score = 1 + Math.min(editDistance(q, full, cap), editDistance(qName, name, cap));
    if (score <= cap) scored.push([score, cand]);
  }
  return scored.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)).slice(0, n).map((x) => x[1]);
}
