// The form's fields: labels, groups, when each is shown, and the ids of their controls and messages.
import { CHOICES, ARCH_KEYS, DEFAULTS, REFERENCE_METHODS } from './params.js';

export const LABELS = {
  framework: { hf: 'Hugging Face transformers + PEFT', torchtune: 'torchtune', torchtitan: 'torchtitan', litgpt: 'LitGPT' },
  method: { sft: 'Supervised (fine-tuning or pre-training)', dpo: 'DPO (TRL DPOTrainer)', ipo: 'IPO (DPOTrainer, loss ipo)',
    kto: 'KTO (TRL KTOTrainer)', orpo: 'ORPO (TRL ORPOTrainer)', simpo: 'SimPO (TRL CPOTrainer, loss simpo)',
    grpo: 'GRPO (TRL GRPOTrainer)', rloo: 'RLOO (TRL RLOOTrainer)', distill: 'On-policy distillation (TRL DistillationTrainer)', ppo: 'PPO (TRL 1.12 PPOTrainer)' },
  teacher_dtype: { bf16: 'bf16 (the checkpoint’s usual dtype)', fp16: 'fp16', fp32: 'fp32' },
  reward_dtype: { default: 'The policy’s weight dtype', bf16: 'bf16', fp16: 'fp16', fp32: 'fp32' },
  divergence: { 'reverse-kl': 'Reverse KL (TRL’s default, beta 1)', 'forward-kl': 'Forward KL (beta 0)', jsd: 'Generalized JSD (0 < beta < 1)' },
  vllm: { none: 'In the training process (transformers generate)', colocate: 'vLLM colocated on the training GPUs',
    server: 'vLLM server on other GPUs' },
  reference: { default: 'TRL’s default', model: 'A second model', 'base-without-adapters': 'The policy with adapters off',
    precomputed: 'Precomputed log-probabilities', none: 'None (GRPO with beta 0)' },
  loss: { full: 'Full cross-entropy (whole logits)', chunked: 'Chunked cross-entropy',
    fused: 'Cross-entropy kernel over the 16-bit logits (flash-attn, Liger)', 'fused-linear': 'Fused linear cross-entropy (Liger)' },
  pp_schedule: { '1f1b': '1F1B', gpipe: 'GPipe (all forwards, then all backwards)',
    'interleaved-1f1b': 'Interleaved 1F1B (several stages per GPU)' },
  backend: { bitsandbytes: 'bitsandbytes (Linear4bit: PEFT, LitGPT)', torchao: 'torchao (NF4Tensor: torchtune)' },
  adapter_dtype: { fp32: 'fp32 (PEFT)', base: 'Base weights’ dtype (LitGPT, torchtune)' },
  lm_head_chunks: { '': 'The stack’s choice', true: 'Yes, per chunk', false: 'No, once for all tokens' },
  longest_batch_first: { '': 'The stack’s choice', true: 'Yes: the first micro-batch', false: 'No: any step' },
  precision: { 'bf16-mixed': 'bf16 mixed (fp32 master weights)', '16-mixed': 'fp16 mixed (fp32 master weights)',
    '32-true': 'fp32', 'bf16-true': 'bf16 only (no fp32 copy)', '16-true': 'fp16 only (no fp32 copy)',
    'bf16-base-mixed': 'bf16 frozen base + fp32 adapters, autocast (the LoRA recipe)',
    '16-base-mixed': 'fp16 frozen base + fp32 adapters, autocast (the LoRA recipe)',
    fp8: 'FP8 linears over bf16 (torchao float8 or Transformer Engine; H100, H200, B200, Ada, MI300)' },
  fp8_recipe: { 'torchao-tensorwise': 'torchao, tensorwise scaling', 'torchao-rowwise': 'torchao, rowwise scaling',
    'te-delayed': 'Transformer Engine, delayed scaling', 'te-current': 'Transformer Engine, current scaling' },
  optimizer: { adamw: 'AdamW', 'adamw-8bit': 'AdamW 8-bit (bitsandbytes)', 'paged-adamw': 'Paged AdamW (bitsandbytes)',
    'paged-adamw-8bit': 'Paged AdamW 8-bit (bitsandbytes)', adafactor: 'Adafactor', lion: 'Lion',
    sgd: 'SGD', 'sgd-momentum': 'SGD with momentum' },
  optimizer_impl: { foreach: 'foreach (PyTorch default)', fused: 'fused', 'single-tensor': 'single tensor (for loop)' },
  finetune: { full: 'Full fine-tune', lora: 'LoRA', qlora: 'QLoRA (4-bit base weights)' },
  checkpointing: { none: 'None', selective: 'Selective (attention only)',
    'selective-op': 'Selective per op (torchtitan: every other matmul kept)', full: 'Full (every layer)' },
  attention: { eager: 'Eager (scores materialised)', flash: 'Flash / SDPA (no score matrix)' },
  strategy: { single: 'Single GPU', ddp: 'DDP (data parallel)', deepspeed: 'DeepSpeed ZeRO', fsdp: 'PyTorch FSDP',
    megatron: 'Megatron-LM (tensor/pipeline)' },
  offload: { none: 'Nothing', optimizer: 'Optimizer states to CPU', 'optimizer+params': 'Optimizer and parameters to CPU' },
  device: { cuda: 'CUDA (the GPU)', cpu: 'CPU kernels (validation)' },
  torch: { 2: 'PyTorch 2.x', '1.13': 'PyTorch 1.13' },
  fsdp_version: { 1: 'FSDP 1 (FullyShardedDataParallel)', 2: 'FSDP 2 (fully_shard)' },
  fsdp_wrap: { 'adapters-apart': 'LoRA adapters in their own units', layers: 'One unit per decoder layer' },
  'model.mlp': { swiglu: 'Gated (SwiGLU: gate, up, down)', geglu: 'Gated (GeGLU: gate, up, down)', gelu: 'Plain (up, down)' },
  'model.activation': { silu: 'SiLU', gelu: 'GELU (erf)', gelu_pytorch_tanh: 'GELU, tanh approximation',
    gelu_new: 'gelu_new (GPT-2)', gelu_fast: 'gelu_fast', quick_gelu: 'QuickGELU', gelu_accurate: 'gelu_accurate',
    relu: 'ReLU', relu2: 'ReLU²', gpt_oss_glu: 'gpt-oss clamped GLU', bloom_gelu: 'BLOOM GELU' },
  'model.norm': { rmsnorm: 'RMSNorm', layernorm: 'LayerNorm' },
  'model.position': { rope: 'RoPE', learned: 'Learned', alibi: 'ALiBi', none: 'None' },
};
export const zeroLabel = (s) => (s.strategy === 'fsdp'
  ? { 0: '0 · NO_SHARD', 2: '2 · SHARD_GRAD_OP', 3: '3 · FULL_SHARD' }
  : s.strategy === 'megatron' ? { 0: '0 · off', 1: '1 · distributed optimizer' }
    : { 0: '0 · off', 1: '1 · optimizer states', 2: '2 · + gradients', 3: '3 · + parameters' });

export const sharded = (s) => s.strategy === 'deepspeed' || s.strategy === 'fsdp';
const ARCH_LABELS = { layers: 'Layers', hidden: 'Hidden size', heads: 'Attention heads', kv_heads: 'KV heads',
  head_dim: 'Head dim (0: hidden / heads)', ffn: 'FFN size', vocab: 'Vocabulary', mlp: 'MLP', activation: 'Activation',
  norm: 'Norm',
  bias: 'Biases on projections', tied_embeddings: 'Tied embeddings', position: 'Positions',
  max_positions: 'Max positions', dropout: 'Dropout', experts: 'Experts (MoE)', experts_per_token: 'Experts per token',
  qkv_bias: 'q/k/v biases', lm_head_bias: 'LM head bias', norms_per_layer: 'Norms per layer' };
export const isCustom = (s) => s.model === 'custom';

function archField(k) {
  const key = 'model.' + k;
  const kind = typeof DEFAULTS[key] === 'boolean' ? 'bool' : key in CHOICES ? 'select' : k === 'dropout' ? 'number' : 'int';
  return { key, label: ARCH_LABELS[k], kind, show: isCustom, sub: true };
}

const isLora = (s) => s.finetune !== 'full';
const isQlora = (s) => s.finetune === 'qlora';
const chunked = (s) => s.loss === 'chunked';
// Tensor, pipeline and context parallelism: Megatron-LM's, or FSDP 2 on a device mesh (torchtitan).
export const meshed = (s) => s.strategy === 'megatron' || (s.strategy === 'fsdp' && s.fsdp_version === '2');
const fsdpTp = (s) => s.strategy === 'fsdp' && Number(s.tp) > 1;
const piped = (s) => Number(s.pp) > 1;
const multi = (s) => s.strategy !== 'single';
const untimed = (s) => !(Number(s.train_tokens) > 0);
const trl = (s) => s.method !== 'sft';
const grpo = (s) => s.method === 'grpo' || s.method === 'rloo';  // completions in groups per prompt
const distill = (s) => s.method === 'distill';
const ppo = (s) => s.method === 'ppo';
const referenced = (s) => REFERENCE_METHODS.includes(s.method);
const colocated = (s) => grpo(s) && s.vllm === 'colocate';
export const GROUPS = [
  { title: 'Training stack', fields: [
    { key: 'framework', label: 'Framework', kind: 'select',
      hint: 'Whose training code runs the step: it sets precision, loss, LoRA adapter dtype and module names to that stack’s defaults; change any of them afterwards.' },
    { key: 'framework_version', label: 'Framework version', kind: 'text', maxlength: 32,
      hint: 'A release (0.2.1) or a date (2024-05-20): the stack’s code in force then, whose defaults it sets again. Empty: the current revision.' },
  ] },
  { title: 'Training method', fields: [
    { key: 'method', label: 'Method', kind: 'select',
      hint: 'TRL 1.16’s trainers and TRL 1.12’s PPOTrainer (one GPU or DDP), each measured: the reference model or the policy with adapters off, generation, the teacher, PPO’s value and reward models, and the head that scores the tokens.' },
    { key: 'reference', label: 'Reference log-probabilities', kind: 'select', show: referenced },
    { key: 'teacher', label: 'Teacher model', kind: 'text', maxlength: 512, list: 'model-list', show: distill,
      hint: 'A preset or a Hugging Face id of the catalog, with the student’s vocabulary.' },
    { key: 'teacher_dtype', label: 'Teacher dtype', kind: 'select', show: distill,
      hint: 'TRL loads the teacher in its checkpoint’s dtype (teacher_model_init_kwargs to change it).' },
    { key: 'divergence', label: 'Divergence', kind: 'select', show: distill },
    { key: 'value_model', label: 'Value model', kind: 'text', maxlength: 512, list: 'model-list', show: ppo,
      hint: 'The critic (a sequence-classification head on a backbone): trained whole beside the policy, with its gradients and optimizer states. A preset or a Hugging Face id of the catalog; empty: the policy’s model.' },
    { key: 'reward_model', label: 'Reward model', kind: 'text', maxlength: 512, list: 'model-list', show: ppo,
      hint: 'Frozen: it scores each rollout’s completions, no gradients. A preset or a Hugging Face id of the catalog; empty: the policy’s model.' },
    { key: 'reward_dtype', label: 'Reward model dtype', kind: 'select', show: ppo,
      hint: 'The dtype the frozen reward model is loaded in. Default: the policy’s weight dtype (fp32 under bf16 or fp16 mixed precision).' },
    { key: 'rollout_forward_batch', label: 'Rollout rows at a time', kind: 'int', show: ppo,
      hint: 'local_rollout_forward_batch_size (TRL’s default 64): prompts generated and scored at once; generation’s KV cache and the reference’s whole logits grow with it.' },
    { key: 'num_mini_batches', label: 'Mini-batches per rollout', kind: 'int', show: ppo,
      hint: 'The rollout is micro-batch × accumulation steps × mini-batches prompts; generate’s fp32 scores of the whole rollout stay live through the update.' },
    { key: 'prompt_len', label: 'Prompt tokens', kind: 'int', show: trl },
    { key: 'completion_len', label: 'Completion tokens', kind: 'int', show: trl,
      hint: 'The sequence is prompt + completion; a pair’s chosen and rejected each (DPO, IPO, ORPO, SimPO).' },
    { key: 'num_generations', label: 'Generations per prompt', kind: 'int', show: grpo,
      hint: 'Must divide the completions of a step (the micro-batch counts completions under GRPO and RLOO).' },
    { key: 'vllm', label: 'Generation', kind: 'select', show: grpo },
    { key: 'vllm_share', label: 'vLLM’s share of the GPU', kind: 'number', show: colocated,
      hint: 'gpu_memory_utilization (TRL’s default 0.3): reserved on each training GPU for vLLM’s weights and KV cache.' },
    { key: 'vllm_sleep', label: 'vLLM sleep mode', kind: 'bool', show: colocated,
      hint: 'vllm_enable_sleep_mode: vLLM frees its share after each generation, so it only meets the model states.' },
    { key: 'steps_per_generation', label: 'Steps per generation', kind: 'int', show: grpo,
      hint: 'Micro-batches’ completions generated at once (0: gradient accumulation steps, TRL’s default): the KV cache grows with it.' },
    { key: 'num_iterations', label: 'Updates per generation', kind: 'int', show: grpo,
      hint: 'num_iterations (μ): above 1, or when generation and optimizer steps are misaligned, the policy’s old log-probs are scored too.' },
  ] },
  { title: 'Model', fields: [
    { key: 'model', label: 'Model', kind: 'model',
      hint: 'Type to search the presets and Hugging Face ids (Qwen/Qwen3-8B), or paste a huggingface.co link.' },
    { key: 'hf', label: 'Hugging Face config.json', kind: 'hf', show: (s) => s.model === 'hf',
      hint: 'Paste the model’s config.json; keys that never affect memory (token ids, RoPE settings, dtype…) stay out of the link.' },
    ...ARCH_KEYS.map(archField),
    { key: 'finetune', label: 'Fine-tuning', kind: 'select' },
    { key: 'rank', label: 'LoRA rank', kind: 'int', show: isLora },
    { key: 'targets', label: 'LoRA target modules', kind: 'targets', show: isLora },
    { key: 'lora_dropout', label: 'LoRA dropout', kind: 'number', show: isLora,
      hint: 'Above 0, each adapted layer also keeps its dropped input and a mask for backward.' },
    { key: 'adapter_dtype', label: 'Adapter dtype', kind: 'select', show: isLora,
      hint: 'The dtype of the LoRA weights, their gradients and inputs: fp32 doubles them under 16-bit training.' },
    { key: 'backend', label: '4-bit back end', kind: 'select', show: isQlora,
      hint: 'Whose 4-bit weights and matmul QLoRA runs: what its backward saves differs.' },
    { key: 'backend_version', label: 'Back end version', kind: 'text', maxlength: 32, show: isQlora,
      hint: 'The back end’s release (0.41.1). Empty: the current one.' },
  ] },
  { title: 'Batch', fields: [
    { key: 'seq_len', label: 'Sequence length (tokens)', kind: 'int', show: (s) => !trl(s) },
    { key: 'micro_batch', label: 'Micro-batch per GPU', kind: 'int',
      hint: 'Under TRL’s trainers it counts pairs (DPO, IPO, ORPO, SimPO), examples (KTO), completions (GRPO) or prompts (distillation; PPO: one completion each, a rollout of micro-batch × accumulation steps × mini-batches prompts).' },
    { key: 'grad_accum', label: 'Gradient accumulation steps', kind: 'int',
      hint: 'Micro-batches per optimizer step: multiplies the global batch. Above 1, earlier micro-batches’ gradients stay live through the next forward (unless allocated up front, as DeepSpeed and Megatron do), FSDP’s no_sync accumulation keeps every layer’s unsharded gradient, and a pipeline keeps more micro-batches in flight (GPipe: all).' },
    { key: 'longest_batch_first', label: 'Longest batch comes first', kind: 'tristate',
      hint: 'The loop runs the longest sample first (lit-gpt’s scripts, June 2023 to February 2024): the peak is that first micro-batch’s, with no gradients, optimizer states or previous step yet; later batches are taken as shorter.' },
  ] },
  { title: 'Precision & optimizer', fields: [
    { key: 'precision', label: 'Precision', kind: 'select',
      hint: 'LoRA and QLoRA on one GPU or DDP default to PEFT’s recipe (a bf16 frozen base, fp32 adapters); a choice of yours stays.' },
    { key: 'fp8_recipe', label: 'FP8 recipe', kind: 'select', show: (s) => s.precision === 'fp8',
      hint: 'torchao’s Float8Linear saves its bf16 input and weight for backward: FP8 speeds the matmuls, it does not shrink the activations. Transformer Engine saves 1-byte inputs but keeps fp8 weight copies (read from its source, not measured).' },
    { key: 'optimizer', label: 'Optimizer', kind: 'select' },
    { key: 'optimizer_impl', label: 'Optimizer implementation', kind: 'select' },
    { key: 'optimizer_in_backward', label: 'Optimizer step in backward', kind: 'bool',
      hint: 'Each gradient is applied and freed as backward produces it (torchtune’s optimizer_in_bwd): no full set of gradients.' },
    { key: 'torch', label: 'PyTorch version', kind: 'select' },
  ] },
  { title: 'Memory savers', fields: [
    { key: 'checkpointing', label: 'Activation checkpointing', kind: 'select' },
    { key: 'activation_offload', label: 'Offload activations to CPU', kind: 'bool',
      hint: 'Saved activations wait in pinned CPU RAM and come back ahead of their backward (torchtune); about two layers stay on the GPU.' },
    { key: 'attention', label: 'Attention kernel', kind: 'select' },
    { key: 'loss', label: 'Loss', kind: 'select',
      hint: 'How the loss meets the logits: whole with an fp32 copy, a chunk at a time, a kernel that reads the 16-bit logits (no fp32 copy), or fused with the output projection (no logits kept).' },
    { key: 'loss_chunks', label: 'Loss chunks', kind: 'int', show: chunked,
      hint: 'More chunks: smaller fp32 pieces of the logits alive at once. Empty: the stack’s own count.' },
    { key: 'lm_head_chunks', label: 'Output projection per chunk', kind: 'tristate', show: chunked,
      hint: 'Runs the output projection per chunk too (LitGPT’s LoRA script), so backward holds one chunk’s logit gradients.' },
    { key: 'offload', label: 'Offload to CPU', kind: 'select', show: sharded,
      hint: 'DeepSpeed ZeRO-Offload or FSDP CPU offload.' },
  ] },
  { title: 'Parallelism', fields: [
    { key: 'strategy', label: 'Strategy', kind: 'select' },
    { key: 'gpus', label: 'GPUs in all', kind: 'int', show: (s) => s.strategy !== 'single' },
    { key: 'zero', label: 'ZeRO stage / sharding', kind: 'zero', show: (s) => s.strategy !== 'single' && s.strategy !== 'ddp' },
    { key: 'fsdp_version', label: 'FSDP version', kind: 'select', show: (s) => s.strategy === 'fsdp' },
    { key: 'fsdp_wrap', label: 'FSDP units under LoRA', kind: 'select', show: (s) => s.strategy === 'fsdp' && s.finetune !== 'full',
      hint: 'Adapters in their own units (PEFT’s policy, as transformers’ Trainer sets it), or one unit per layer: FSDP 1 then keeps gradients and activations as for full fine-tuning.' },
    { key: 'tp', label: 'Tensor parallel (tp)', kind: 'int', show: meshed,
      hint: 'Megatron-LM, or FSDP 2 on a device mesh (torchtitan): GPUs must be a multiple of tp × pp × cp.' },
    { key: 'pp', label: 'Pipeline parallel (pp)', kind: 'int', show: meshed },
    { key: 'cp', label: 'Context parallel (cp)', kind: 'int', show: meshed,
      hint: 'Each GPU holds seq_len / cp tokens of every sequence; needs flash attention.' },
    { key: 'sequence_parallel', label: 'Sequence parallelism', kind: 'bool', show: (s) => s.strategy === 'megatron' || fsdpTp(s),
      hint: 'Norms and dropout on sequence shards (on by default with FSDP and tp > 1, as torchtitan runs it).' },
    { key: 'loss_parallel', label: 'Loss parallel', kind: 'bool', show: fsdpTp,
      hint: 'The logits stay sharded over the vocabulary for the loss (torchtitan).' },
    { key: 'pp_schedule', label: 'Pipeline schedule', kind: 'select', show: piped },
    { key: 'pp_stages_per_rank', label: 'Pipeline stages per GPU', kind: 'int', show: piped,
      hint: 'Above 1 with the interleaved schedule only (its default: 2).' },
  ] },
  { title: 'GPU', fields: [
    { key: 'gpu', label: 'GPU', kind: 'gpu' },
    { key: 'gpu.memory_gib', label: 'Memory (GiB)', kind: 'number', show: (s) => s.gpu === 'custom' },
    { key: 'gpu.name', label: 'Name', kind: 'text', show: (s) => s.gpu === 'custom' },
    { key: 'device', label: 'Kernels', kind: 'select' },
  ] },
  { title: 'Run and cost', fields: [
    { key: 'train_tokens', label: 'Tokens to train on', kind: 'number', tokens: true,
      hint: 'The whole run (2T, 500M or 1e9), for its hours and GPU-hours. Empty: give epochs and the dataset’s tokens instead.' },
    { key: 'epochs', label: 'Epochs', kind: 'number', show: untimed },
    { key: 'dataset_tokens', label: 'Tokens in the dataset', kind: 'number', tokens: true, show: untimed },
    { key: 'price_per_gpu_hour', label: 'Price per GPU-hour', kind: 'number',
      hint: 'In any currency, none built in: the cost comes out in the same.' },
    { key: 'gpus_per_node', label: 'GPUs per node', kind: 'int', show: multi, sub: true,
      hint: 'GPUs sharing NVLink; the rest talk over the network.' },
    { key: 'inter_node_gbps', label: 'Network per GPU between nodes (GB/s)', kind: 'number', show: multi, sub: true,
      hint: 'Empty or 0: the GPU’s reference system (DGX / HGX).' },
  ] },
];
export const FIELDS = GROUPS.flatMap((g) => g.fields);
export const FIELD = Object.fromEntries(FIELDS.map((f) => [f.key, f]));
export const fid = (key) => 'f-' + key.replace(/\./g, '-');
export const eid = (key) => 'e-' + key.replace(/\./g, '-');
export const nid = (key) => 'n-' + key.replace(/\./g, '-');
