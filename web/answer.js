// The answer: the verdict and figures, the breakdown bar and its legend, the phases, the suggestions.
import { $, h, clear, gib, count, grouped } from './dom.js';
import { clip } from './params.js';
import { LABELS } from './fields.js';

export const TERMS = {
  weights: ['Weights', 'The model’s parameters held on this GPU, in the training precision. Sharded by ZeRO-3 / FSDP FULL_SHARD, split by tensor and pipeline parallelism; 4-bit under QLoRA.'],
  gradients: ['Gradients', 'One gradient per trainable parameter, live from the backward pass until the optimizer step. Sharded from ZeRO-2; tiny with LoRA.'],
  optimizer_states: ['Optimizer states', 'AdamW keeps two fp32 moments per trainable parameter (m and v, 8 bytes); 8-bit AdamW about 2, SGD none. Sharded from ZeRO-1, moved to CPU by offload.'],
  inference_engine: ['vLLM engine', 'A colocated vLLM’s gpu_memory_utilization share of the card, reserved for its weights and KV cache (outside PyTorch’s allocator).'],
  paged_optimizer_states: ['Paged optimizer states', 'bitsandbytes’ paged states: unified memory that the driver can evict to CPU RAM under pressure. Counted in the total (nvidia-smi), not in what PyTorch allocates.'],
  master_weights: ['Master weights', 'An fp32 copy of 16-bit weights that the optimizer updates (DeepSpeed and Megatron mixed precision), so that small updates are not rounded away.'],
  activations: ['Activations', 'Tensors saved in the forward pass for the backward pass. Grows with micro-batch × sequence length; checkpointing and flash attention cut it.'],
  logits: ['Logits', 'The vocabulary-wide output of the last layer (and its fp32 copy for the loss): micro-batch × sequence × vocabulary.'],
  temporaries: ['Temporaries', 'Short-lived buffers at the peak moment: the gradient being produced, attention scores, the foreach optimizer’s scratch copies.'],
  allocator_overhead: ['Allocator overhead', 'Memory PyTorch’s caching allocator has reserved but is not using (fragmentation): reserved minus allocated.'],
  collective_streams_cached: ['Collective streams’ cache', 'Blocks FSDP’s all-gather and reduce-scatter streams keep cached (the sharded gradients freed by zero_grad, an all-gather buffer): reserved and shown by nvidia-smi, released by PyTorch before it would run out of memory, so not part of the verdict.'],
  cuda_context: ['CUDA context', 'The CUDA context, cuBLAS/cuDNN workspaces and loaded kernels: taken before the first tensor.'],
  nccl_buffers: ['NCCL buffers', 'NCCL’s connection buffers for the run’s process groups (data, tensor and context parallel, the pipeline), as the NCCL of the chosen torch release allocates them: outside PyTorch’s allocator, so nvidia-smi shows them and max_memory_reserved does not.'],
};
const PHASES = {
  forward: 'Forward pass: activations are saved layer by layer for the backward pass.',
  loss: 'Forward done and the loss computed: every saved activation and the logits are live.',
  backward: 'Backward pass: gradients appear while saved activations are freed.',
  optimizer_step: 'Optimizer step: gradients, optimizer states and the update’s temporaries are live together.',
  generation: 'Generation (GRPO, distillation, PPO): in the training process, the prefill, then the KV cache of every completion at its longest (PPO: a chunk of the rollout at a time, generate’s fp32 scores kept); with vLLM in sleep mode, the model states next to the woken engine.',
  reference: 'Reference scoring: a no-grad forward for the reference log-probabilities (DPO: the policy’s graph is alive; PPO: over the rollout a chunk at a time, with whole logits).',
  old_logps: 'Old log-probabilities: a no-grad forward of the policy over the completions (always with vLLM; in-process when generations serve several updates).',
  policy_forward: 'Policy forward: every saved activation and TRL’s head (fused: no whole logits; ORPO, SimPO and PPO: whole logits; PPO: the value model’s graph too).',
  kl_policy: 'KL pass (KTO): a no-grad forward of the policy over the mismatched completions, before its own forward.',
  reference_kl: 'Reference KL pass (KTO): the reference over the mismatched completions, the policy’s graph alive.',
  teacher: 'Teacher forward (distillation): the frozen teacher’s no-grad pass, the student’s graph alive.',
  value: 'Value pass (PPO): the value model’s no-grad forward over the rollout, a chunk at a time: a value per token.',
  reward: 'Reward pass (PPO): the frozen reward model scores the rollout’s completions, a chunk at a time.',
  entropy_stats: 'Entropy statistics (PPO): after each micro-batch’s update, a no-grad softmax over the completion’s logits for the logged entropy.',
};
// Suggestions that save less than this are not listed (a change nobody would make for 11 MiB).
export const MIN_SAVING = 0.05 * 2 ** 30;

export const phaseName = (p) => String(p).replace('_', ' ');

const known = (x) => typeof x === 'number' && Number.isFinite(x);
// Seconds as people read a step or a run: ms below one second, hours above one.
export function duration(s) {
  if (!known(s)) return '—';
  if (s < 1e-3) return `${+(s * 1e6).toPrecision(3)} µs`;
  if (s < 1) return `${+(s * 1000).toPrecision(3)} ms`;
  if (s < 60) return `${+s.toPrecision(3)} s`;
  if (s < 3600) return `${+(s / 60).toPrecision(3)} min`;
  return hours(s / 3600);
}
export const hours = (x) => (!known(x) ? '—' : `${x < 10 ? x.toFixed(1) : grouped(Math.round(x))} h` +
  (x >= 48 ? ` (${(x / 24).toFixed(x >= 240 ? 0 : 1)} days)` : ''));
export const rate = (x) => (known(x) ? grouped(Math.round(x)) : '—');
export const money = (x) => (known(x) ? grouped(x, 2, x < 1000 ? 2 : 0) : '—');
// A step time with its lower-bound mark (offloaded CPU work is not timed).
export const stepText = (s, bound) => (known(s) ? `${bound ? '≥ ' : ''}${duration(s)}` : '—');
// A suggestion's time against the current one: "+12% time".
export function timeChange(s, base) {
  if (!known(s) || !known(base) || base <= 0) return '';
  const pct = Math.round((s / base - 1) * 100);
  return pct === 0 ? 'same time' : `${pct > 0 ? '+' : '−'}${Math.abs(pct)}% time`;
}

export function renderAnswer(r, summary) {
  const fits = r.fits;
  const badge = $('fits');
  badge.dataset.fits = String(fits);
  badge.textContent = fits ? 'Fits' : 'Does not fit';
  const total = $('total');
  total.dataset.bytes = String(r.total_bytes);
  total.textContent = gib(r.total_bytes);
  $('capacity').textContent = gib(r.gpu.capacity_bytes);
  $('gpu-name').textContent = r.gpu.name;
  const head = r.headroom_bytes;
  $('headroom').textContent = head >= 0 ? `${gib(head)} free` : `${gib(-head)} over`;
  $('headroom').className = 'fig-value ' + (head >= 0 ? 'ok' : 'bad');
  // None: the core says whether the sequence is the cause (the states fit with one token) or the states themselves.
  const c = r.config || {};
  const tokens = c.seq_len ?? (c.prompt_len && c.completion_len ? c.prompt_len + c.completion_len : 0);
  $('max-mb').textContent = r.max_micro_batch > 0 ? String(r.max_micro_batch) : 'none';
  $('max-mb-sub').textContent = r.sequence_too_long && tokens ? `one sequence of ${grouped(tokens)} tokens is too long`
    : r.max_micro_batch > 0 ? '' : 'the model states alone do not fit';
  $('peak-phase').textContent = phaseName(r.peak_phase);
  const pct = Math.round((r.total_bytes / r.gpu.capacity_bytes) * 100);
  $('verdict-text').textContent = fits
    ? `${gib(r.total_bytes)} of ${gib(r.gpu.capacity_bytes)} per GPU (${pct}%).`
    : `Needs ${gib(r.total_bytes)} per GPU, ${pct}% of the ${gib(r.gpu.capacity_bytes)} available.`;
  $('params').textContent = `${count(r.parameters.total)} parameters, ${count(r.parameters.trainable)} trainable`
    + (r.cpu_bytes ? ` · ${gib(r.cpu_bytes)} of CPU RAM for offloaded states` : '')
    + ` · peak allocated ${gib(r.peak_allocated_bytes)}, reserved ${gib(r.peak_reserved_bytes)}`;
  const w = clear($('warnings'));
  for (const t of r.warnings) w.append(h('li', {}, t));
  w.hidden = r.warnings.length === 0;
  $('embed-summary').textContent = summary;
  renderBar(r);
  renderPhases(r);
  renderTime(r);
}

function figure(id, text, sub) {
  $(id).textContent = text;
  $(id + '-sub').textContent = sub;
}

// Step time, throughput and MFU; with the run's tokens its hours and GPU-hours, with a price its cost.
function renderTime(r) {
  const t = r.step_time_s;
  const bound = r.step_time_is_lower_bound === true;
  const step = $('step-time');
  step.dataset.seconds = known(t) ? String(t) : '';
  step.dataset.lowerBound = String(bound && known(t));
  figure('step-time', stepText(t, bound), !known(t) ? `unknown: ${r.step_time_unknown || 'not timed'}`
    : bound ? 'a lower bound: the offloaded CPU work is not timed' : 'one optimizer step');
  $('step-bound').hidden = !(bound && known(t));
  figure('tokens-s', known(r.tokens_per_s) ? `${rate(r.tokens_per_s)} tokens/s` : '—',
    known(r.tokens_per_s_per_gpu) ? `${rate(r.tokens_per_s_per_gpu)} per GPU` : '');
  figure('mfu', known(r.mfu) ? `${(r.mfu * 100).toFixed(r.mfu < 0.1 ? 1 : 0)}%` : '—', 'model FLOPs over the dense peak');
  const run = known(r.hours);
  $('run-figure').hidden = !run;
  if (run) figure('run-hours', hours(r.hours), `${rate(r.gpu_hours)} GPU-hours`);
  $('cost-figure').hidden = !known(r.cost);
  const price = r.config && r.config.price_per_gpu_hour;
  if (known(r.cost)) figure('cost', money(r.cost), `at ${money(price)} per GPU-hour`);
  $('run-note').textContent = !run && known(price) && price > 0
    ? 'Give the tokens to train on (Run and cost) for the run’s hours and cost.' : '';
}

// One line saying what was estimated (the embed view's caption, the compare panel's A).
export function summaryLine(s, gpuName, presets) {
  const model = s.model === 'custom' ? 'Custom model' : s.model === 'hf' ? `${clip(s.hf?.model_type || 'HF')} config`
    : (presets.models.find((m) => m.id === s.model) || {}).name || s.model;
  const par = s.strategy === 'single' ? '1 GPU' : `${s.gpus} GPUs, ${LABELS.strategy[s.strategy]}${s.zero ? ` stage ${s.zero}` : ''}`;
  const version = s.framework_version ? ` ${clip(s.framework_version, 32)}` : '';
  const stack = s.framework === 'hf' && !version ? '' : ` · ${LABELS.framework[s.framework]}${version}`;
  const ft = s.finetune === 'full' ? '' : ` · ${s.finetune === 'lora' ? 'LoRA' : 'QLoRA'} rank ${s.rank}`;
  // TRL's trainers: the sequence is prompt + completion (the core derives seq_len).
  const tokens = s.method && s.method !== 'sft' ? Number(s.prompt_len) + Number(s.completion_len) : s.seq_len;
  return `${model} · ${gpuName} · ${par} · micro-batch ${s.micro_batch} × ${tokens} tokens · ${s.precision}${ft}${stack}`;
}

function showTerm(key, bytes, total) {
  const [name, text] = TERMS[key];
  const d = clear($('term-detail'));
  d.append(h('strong', {}, `${name}: ${gib(bytes)} (${((bytes / total) * 100).toFixed(1)}%). `), text);
  for (const el of document.querySelectorAll('[data-term]')) el.classList.toggle('active', el.dataset.term === key);
}

function renderBar(r) {
  const terms = Object.keys(TERMS).filter((k) => r.per_gpu_bytes[k] > 0);
  const scale = Math.max(r.total_bytes, r.gpu.capacity_bytes);
  const bar = clear($('bar'));
  for (const k of terms) {
    const b = r.per_gpu_bytes[k];
    const seg = h('div', { class: `seg t-${k}`, dataset: { term: k }, title: `${TERMS[k][0]}: ${gib(b)}` });
    seg.style.width = `${(b / scale) * 100}%`;
    seg.addEventListener('mouseenter', () => showTerm(k, b, r.total_bytes));
    bar.append(seg);
  }
  const cap = h('div', { class: 'cap-marker', title: `capacity ${gib(r.gpu.capacity_bytes)}` }, h('span', {}, 'capacity'));
  cap.style.left = `${(r.gpu.capacity_bytes / scale) * 100}%`;
  bar.append(cap);
  bar.setAttribute('aria-label', `Breakdown of ${gib(r.total_bytes)}: ` + terms.map((k) => `${TERMS[k][0]} ${gib(r.per_gpu_bytes[k])}`).join(', '));
  const legend = clear($('legend'));
  for (const k of terms) {
    const b = r.per_gpu_bytes[k];
    const item = h('li', {}, h('button', { type: 'button', class: 'term', dataset: { term: k },
      'aria-describedby': 'term-detail',
      onfocus: () => showTerm(k, b, r.total_bytes), onmouseenter: () => showTerm(k, b, r.total_bytes),
      onclick: () => showTerm(k, b, r.total_bytes) },
    h('span', { class: `swatch t-${k}`, 'aria-hidden': 'true' }), h('span', { class: 'term-name' }, TERMS[k][0]),
    h('span', { class: 'term-val' }, gib(b))));
    legend.append(item);
  }
  const d = clear($('term-detail'));
  d.append('Hover or focus a term to see what it is and what shrinks it.');
}

function renderPhases(r) {
  const body = clear($('phases'));
  const max = Math.max(...r.phases.map((p) => p.allocated_bytes));
  for (const p of r.phases) {
    const peak = p.name === r.peak_phase;
    const bar = h('span', { class: 'mini' }, h('span', { class: peak ? 'fill peak' : 'fill' }));
    bar.firstChild.style.width = `${(p.allocated_bytes / max) * 100}%`;
    body.append(h('tr', { class: peak ? 'peak' : '' },
      h('th', { scope: 'row' }, phaseName(p.name), peak ? h('span', { class: 'tag' }, 'peak') : null),
      h('td', { class: 'num' }, gib(p.allocated_bytes)), h('td', { class: 'num', dataset: { seconds: String(p.time_s ?? '') } }, duration(p.time_s)),
      h('td', { class: 'bar-cell' }, bar),
      h('td', { class: 'desc' }, PHASES[p.name] || '')));
  }
}

// The suggestions worth a line: those saving at least MIN_SAVING.
export const shownSuggestions = (r) => r.suggestions.filter((sgt) => r.total_bytes - sgt.total_bytes >= MIN_SAVING);

export function renderSuggestions(r, onApply) {
  const list = clear($('suggestions'));
  const shown = shownSuggestions(r);
  if (!shown.length) list.append(h('li', { class: 'empty' }, 'No change to suggest.'));
  for (const sgt of shown) {
    const change = timeChange(sgt.step_time_s, r.step_time_s);
    const t = known(sgt.step_time_s) ? `${stepText(sgt.step_time_s, sgt.step_time_is_lower_bound)} per step${change ? ` (${change})` : ''}` : '';
    list.append(h('li', {}, h('button', { type: 'button', class: 'suggest', onclick: () => onApply(sgt) },
      h('span', { class: 'change' }, sgt.change),
      h('span', { class: `result ${sgt.fits ? 'ok' : 'bad'}` }, `→ ${gib(sgt.total_bytes)} · ${sgt.fits ? 'fits' : 'does not fit'}`),
      h('span', { class: 'time', dataset: { seconds: String(sgt.step_time_s ?? '') } }, t)),
    h('p', { class: 'why' }, sgt.why)));
  }
}
