// "What this rests on": the committed measurements that cover this kind of run, with the estimator's error on
// them, and the terms that are allowances rather than measured (the estimate's `evidence`, from the core).
import { $, h, clear, gib } from './dom.js';
import { TERMS } from './answer.js';

export const percent = (x) => (typeof x === 'number' && Number.isFinite(x) ? `${x < 10 ? x.toFixed(1) : Math.round(x)}%` : '—');
const SOURCES = { cpu: 'measured on CPU', gpu: 'published GPU runs' };
const NAMES = { cublas_workspace: 'cuBLAS workspace', nccl_buffers: 'NCCL buffers', deepspeed_buckets: 'DeepSpeed buckets',
  cpu_offload: 'CPU offload', ring_attention: 'Ring attention', compile: 'torch.compile' };
const str = (v) => (typeof v === 'string' ? v : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function group(g) {
  const cases = num(g.cases) ?? 0;
  const compared = num(g.compared) ?? 0;
  const matches = Array.isArray(g.matches) ? g.matches.filter((m) => typeof m === 'string') : [];
  const ran = num(g.ran);
  const source = g.source === 'gpu' ? 'gpu' : 'cpu';
  const figures = compared
    ? `${compared} of ${cases} compared · median error ${percent(g.median_error)} · max ${percent(g.max_error)}`
    : `${cases} case${cases === 1 ? '' : 's'}, none with a figure to compare`;
  return h('li', { class: 'ev-group', dataset: { source, cases: String(cases), compared: String(compared),
    median: String(g.median_error ?? ''), max: String(g.max_error ?? ''), matches: matches.join(',') } },
  h('p', { class: 'ev-head' }, h('span', { class: `ev-src src-${source}` }, SOURCES[source]), ' ',
    h('strong', {}, str(g.set)), ` · ${str(g.group)}`),
  h('p', { class: 'ev-nums' }, figures,
    ran ? ` · ${ran} run${ran === 1 ? '' : 's'} without a figure, ${num(g.ran_estimated_to_fit) ?? 0} estimated to fit` : ''),
  h('p', { class: 'ev-meta' }, `Shares: ${matches.join(', ') || 'the method and strategy'} · ${str(g.versions)} · `,
    h('code', {}, str(g.file))));
}

export function renderEvidence(ev) {
  const box = $('evidence');
  box.hidden = !ev || typeof ev !== 'object';
  if (box.hidden) return;
  $('evidence-summary').textContent = str(ev.summary);
  const measured = Array.isArray(ev.measured) ? ev.measured.filter((g) => g && typeof g === 'object') : [];
  const allowances = Array.isArray(ev.allowances) ? ev.allowances.filter((a) => a && typeof a === 'object') : [];
  const groups = clear($('evidence-groups'));
  for (const g of measured) groups.append(group(g));
  const more = ev.more && typeof ev.more === 'object' ? ev.more : null;
  $('evidence-more').textContent = more && num(more.groups)
    ? `And ${more.groups} looser group${more.groups === 1 ? '' : 's'} (${num(more.cases) ?? 0} cases) not listed.` : '';
  $('evidence-groups-h').hidden = !measured.length;
  const list = clear($('evidence-allowances'));
  for (const a of allowances) {
    const term = str(a.term);
    const name = Object.hasOwn(TERMS, term) ? TERMS[term][0] : Object.hasOwn(NAMES, term) ? NAMES[term] : term.replace(/_/g, ' ');
    const bytes = num(a.bytes) ?? 0;
    list.append(h('li', { dataset: { term, bytes: String(bytes) } }, h('strong', {}, name), ' ',
      h('span', { class: 'num' }, bytes ? gib(bytes) : 'left out'), ` · ${str(a.why)}`));
  }
  $('evidence-allowances-h').hidden = !allowances.length;
  const n = (k, one) => `${k} ${one}${k === 1 ? '' : 's'}`;
  $('evidence-toggle').textContent = measured.length
    ? `${n(measured.length, 'group')} of measured cases, ${n(allowances.length, 'allowance')}` : `The ${n(allowances.length, 'allowance')}`;
}
