#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one DPO / GRPO training step run by TRL's own trainers (CPU).

Ground truth for vramcalc's ``"method": "dpo"`` (``"reference": "model" | "base-without-adapters" |
"precomputed"``) and ``"method": "grpo"`` (``num_generations``, ``prompt_len``, ``completion_len``, generation
in the training process with ``model.generate``, no vLLM).  Each case trains a tiny Llama (4 layers, hidden 256,
4 heads, 2 kv heads, ffn 768, vocab 2000, untied; random weights saved once to a folder, with a word-level
tokenizer, nothing downloaded) with ``DPOTrainer(...).train()`` or ``GRPOTrainer(...).train()`` for
``max_steps`` steps (3 by default) and measures the last one:

  model:  AutoModelForCausalLM.from_pretrained(dir, dtype=fp32 | bf16, attn_implementation="sdpa")
  LoRA:   peft_config=LoraConfig(r=8, lora_alpha=16, lora_dropout=0, q/k/v/o/gate/up/down) given to the trainer
          (the trainer calls get_peft_model; PEFT keeps fp32 adapters)
  DPO:    DPOConfig(per_device_train_batch_size=pairs, beta 0.1, loss "sigmoid", max_length None,
          precompute_ref_log_probs=<reference == "precomputed">); the reference model is the trainer's own:
          a second from_pretrained of the same folder (full fine-tuning), the policy with its adapters disabled
          (LoRA), or none (precomputed log-probs in the batch)
  GRPO:   GRPOConfig(per_device_train_batch_size=completions, num_generations, max_completion_length=C,
          generation_kwargs={"min_new_tokens": C} (every completion is exactly C tokens: no early EOS), beta
          0.04 (0: no reference), loss "dapo", use_vllm False); reward = the completion's length in characters
  both:   bf16=<precision is *-mixed> (CPU autocast through accelerate), gradient_checkpointing=<case>,
          use_cpu, optim = the Trainer default (adamw_torch_fused), max_grad_norm 1.0, no logging/saving

    build/venv-trl/bin/python tests/validation/stacks/trl/measure.py \\
        --out tests/validation/stacks/trl/measured.jsonl --trace-out tests/validation/stacks/trl/traces.txt

Also (same model, same precision conventions, same phase approach): DPO with loss_type ["ipo"]; ORPO
(``trl.experimental.orpo.ORPOTrainer``) and SimPO (``trl.experimental.cpo.CPOTrainer``, loss_type "simpo",
cpo_alpha 0): no reference, full logits, phases policy_forward (the model call) / loss; KTO (``KTOTrainer``, loss
"kto": KL term): phases kl_policy (``_compute_kl_logps`` with the policy, no_grad), policy_forward, reference_kl
(``_compute_kl_logps`` with the reference), reference; distillation (``DistillationTrainer``: on-policy, the
student generates every step; teacher = a 6-layer hidden-384 Llama of the same vocabulary, loaded by path):
phases generation, scoring, policy_forward / teacher (``_get_last_hidden_state`` with / without grad), loss
(``ChunkedDivergenceFunction``); RLOO (``RLOOTrainer``: GRPO's generation and fused-head path, but
``_generate_and_score_completions`` always runs the no-grad policy pass for the old log-probs, then the reference,
beta default 0.05 folded into the reward as a sequence-level KL, leave-one-out advantages, a per-sequence clipped
loss): the GRPO phases, with old_logps in every step that generates.

Counting is the method of tests/validation/measure_hf.py (profiler_memory.py): the whole run -- model loading,
trainer construction, every step -- is profiled with ``torch.profiler.profile(profile_memory=True)``; the
running sum of c10's CPU allocation events is the exact live-bytes curve.  The measured step runs from the
Trainer callback ``on_step_begin`` (after ``gc.collect()``) to ``on_step_end`` (after ``optimizer.step()``,
the scheduler and ``model.zero_grad()``).  ``step_start_bytes`` is computed from the tensors (parameters and
buffers of the policy and of the reference model, AdamW states, the step's batch -- DPO: the collated batch,
prefetched before the step; GRPO: the previous generation's buffered batch) and checked against the profiler's
running total at that instant.  Phases are profiler ranges opened by wrappers around the trainers' own methods:

  DPO:   reference       the reference forward (``self.ref_model(...)``, or ``self.model`` inside
                         ``use_adapter(model, None)``), under no_grad
         policy_forward  the policy model call in ``DPOTrainer._compute_loss`` (fused LM head: per-token log-probs)
         loss            the rest of ``compute_loss`` (sums over tokens, log-sigmoid, metrics)
  GRPO:  generation      ``GRPOTrainer._generate_single_turn`` (``unwrapped_model.generate``: KV cache, sampling)
         scoring         the rest of ``_generate_and_score_completions`` (tokenizing, padding, advantages)
         old_logps       ``_get_per_token_logps_and_entropies(self.model, ...)`` under no_grad (only when
                         gradient_accumulation_steps % (steps_per_generation * num_iterations) != 0; RLOO: always)
         reference       the same with ``self.ref_model`` or inside ``use_adapter(model, None)``
         reward          ``_calculate_rewards``
         policy_forward  ``_get_per_token_logps_and_entropies`` with grad (inside compute_loss)
         loss            the rest of ``compute_loss``
  RLOO:  as GRPO (the same method names in ``trl/trainer/rloo_trainer.py``)
  all:   backward (``accelerator.backward``), clip_grad (``Trainer._clip_grad_norm``), optimizer (between the
         ``on_pre_optimizer_step`` and ``on_optimizer_step`` callbacks), after_optimizer (scheduler, zero_grad)

Saved for backward: a saved_tensors_hook tracer (profiler_memory.BlockSavedTracer: pack returns a detached alias
of the same storage, no allocation; checked with --no-trace) around the measured step's ``compute_loss``, by
decoder layer / "outside".  Not under gradient checkpointing (reading a checkpointed node's saved tensors would
recompute the layer).
"""
import argparse
import contextlib
import datetime
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))

warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# transformers 5 loads checkpoints in a thread pool; the profiler does not see allocations made on those threads
os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")

import logging  # noqa: E402
logging.disable(logging.WARNING)

import torch  # noqa: E402
sys.path.append(os.path.dirname(os.path.dirname(HERE)))  # tests/validation, for profiler_memory
from profiler_memory import (  # noqa: E402
    storage as _storage, live_tensor_bytes, count_params, alloc_nodes as _alloc_nodes, ancestors as _ancestors,
    describe as _describe, opname as _opname, step_window, step_peaks, live_groups, print_groups,
    print_saved_by_block, BlockSavedTracer)


from profiler_memory import package_version as _ver  # noqa: E402


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

HF = OrderedDict(model_type="llama", num_hidden_layers=4, hidden_size=256, intermediate_size=768,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=2000,
                 max_position_embeddings=2048, hidden_act="silu", tie_word_embeddings=False,
                 attention_dropout=0.0, attention_bias=False, mlp_bias=False,
                 pad_token_id=0, eos_token_id=1, bos_token_id=None)
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LORA = OrderedDict(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=TARGETS)
PAD, EOS = 0, 1

CASES = []


def _dpo(name, finetune, precision, reference, pairs=2, prompt=64, completion=192, gc="none", vocab=None, steps=3,
         loss="sigmoid", family=None, softcap=None):
    """family "gemma2": GEMMA2_HF (Llama's shapes) with final_logit_softcapping = softcap (None: off)."""
    c = OrderedDict(name=name, method="dpo", finetune=finetune, precision=precision, reference=reference,
                    pairs=pairs, prompt_len=prompt, completion_len=completion, gc=gc, vocab=vocab,
                    steps=steps, loss=loss)
    if family:
        c["family"], c["softcap"] = family, softcap
    CASES.append(c)


def _pref(name, method, finetune, precision, pairs=2, prompt=64, completion=192, gc="none", steps=3, cpo_alpha=0.0):
    """ORPO (experimental ORPOTrainer) or SimPO (experimental CPOTrainer, loss_type "simpo"): no reference model."""
    c = OrderedDict(name=name, method=method, finetune=finetune, precision=precision, reference="none", pairs=pairs,
                    prompt_len=prompt, completion_len=completion, gc=gc, vocab=None, steps=steps)
    if method == "simpo":
        c["cpo_alpha"] = cpo_alpha
    CASES.append(c)


def _kto(name, finetune, precision, reference, examples=4, prompt=64, completion=192, gc="none", steps=3):
    """KTOTrainer: `examples` unpaired examples per step (half desirable, half undesirable), loss "kto" (KL term)."""
    CASES.append(OrderedDict(name=name, method="kto", finetune=finetune, precision=precision, reference=reference,
                             examples=examples, prompt_len=prompt, completion_len=completion, gc=gc, vocab=None,
                             steps=steps))


def _distill(name, finetune, precision, sequences=4, prompt=64, completion=64, gc="none", steps=2, beta=1.0):
    """DistillationTrainer (on-policy: the student generates every step), teacher = TEACHER_HF loaded by path."""
    CASES.append(OrderedDict(name=name, method="distill", finetune=finetune, precision=precision, reference="none",
                             sequences=sequences, prompt_len=prompt, completion_len=completion, gc=gc, vocab=None,
                             steps=steps, beta=beta))


def _grpo(name, finetune, precision, num_generations, prompts=2, prompt=32, completion=64, beta=0.04, gc="none",
          steps_per_generation=None, num_iterations=1, steps=2):
    reference = "none" if beta == 0 else ("model" if finetune == "full" else "base-without-adapters")
    CASES.append(OrderedDict(name=name, method="grpo", finetune=finetune, precision=precision, reference=reference,
                             num_generations=num_generations, prompts=prompts, prompt_len=prompt,
                             completion_len=completion, beta=beta, gc=gc, steps_per_generation=steps_per_generation,
                             num_iterations=num_iterations, steps=steps))


def _rloo(name, finetune, precision, num_generations, prompts=2, prompt=32, completion=64, beta=0.05, gc="none",
          steps_per_generation=None, num_iterations=1, steps=2):
    """RLOOTrainer: GRPO's settings (reward, generation, LoRA); beta 0.05 is RLOOConfig's default."""
    reference = "none" if beta == 0 else ("model" if finetune == "full" else "base-without-adapters")
    CASES.append(OrderedDict(name=name, method="rloo", finetune=finetune, precision=precision, reference=reference,
                             num_generations=num_generations, prompts=prompts, prompt_len=prompt,
                             completion_len=completion, beta=beta, gc=gc, steps_per_generation=steps_per_generation,
                             num_iterations=num_iterations, steps=steps))


# DPO: 2 pairs, prompt 64 + completion 192 (191 words + EOS) -> 4 sequences of 256 tokens
_dpo("dpo_full_ref_fp32", "full", "32-true", "model")
_dpo("dpo_full_ref_bf16mixed", "full", "bf16-mixed", "model")
_dpo("dpo_full_precomputed_fp32", "full", "32-true", "precomputed")
_dpo("dpo_full_ref_fp32_gc", "full", "32-true", "model", gc="nonreentrant")
_dpo("dpo_lora_noadapter_fp32", "lora", "32-true", "base-without-adapters")
_dpo("dpo_lora_noadapter_bf16base", "lora", "bf16-base-mixed", "base-without-adapters")
_dpo("dpo_lora_precomputed_fp32", "lora", "32-true", "precomputed")
# the fused LM head's tiles: N = 4 x 1039 = 4156 scored positions > 4096 (TOKEN_CHUNK_SIZE)
_dpo("dpo_lora_noadapter_fp32_s1040", "lora", "32-true", "base-without-adapters", prompt=64, completion=976, steps=2)
# vocab 40000 > 32768 (_CHUNKED_LOGPROB_CHUNK_SIZE): two vocabulary tiles
_dpo("dpo_lora_noadapter_fp32_v40000", "lora", "32-true", "base-without-adapters", vocab=40000)
# GRPO: 2 prompts x G completions per step, prompt 32, completion 64
_grpo("grpo_full_g4_fp32", "full", "32-true", 4)
_grpo("grpo_full_g8_fp32", "full", "32-true", 8)
_grpo("grpo_full_g4_bf16mixed", "full", "bf16-mixed", 4)
_grpo("grpo_full_g4_beta0_fp32", "full", "32-true", 4, beta=0.0)
_grpo("grpo_full_g4_spg2_fp32", "full", "32-true", 4, steps_per_generation=2, steps=3)
_grpo("grpo_full_g4_fp32_gc", "full", "32-true", 4, gc="nonreentrant")
_grpo("grpo_lora_g4_fp32", "lora", "32-true", 4)
_grpo("grpo_lora_g8_bf16base", "lora", "bf16-base-mixed", 8)
# DPO with the IPO loss (length-normalised log-probs): the same forward path as sigmoid
_dpo("dpo_ipo_full_ref_fp32", "full", "32-true", "model", loss="ipo")
# ORPO / SimPO: 2 pairs, prompt 64 + completion 192 (4 sequences of 256 tokens), full logits, no reference
_pref("orpo_full_fp32", "orpo", "full", "32-true")
_pref("orpo_lora_fp32", "orpo", "lora", "32-true")
_pref("simpo_full_fp32", "simpo", "full", "32-true")
_pref("simpo_full_bf16mixed", "simpo", "full", "bf16-mixed")
# KTO: 4 examples (2 desirable, 2 undesirable) of prompt 64 + completion 192; KL batch of 4 mismatched sequences
_kto("kto_full_ref_fp32", "full", "32-true", "model")
_kto("kto_lora_noadapter_fp32", "lora", "32-true", "base-without-adapters")
_kto("kto_full_precomputed_fp32", "full", "32-true", "precomputed")
# Distillation: 4 prompts of 64 tokens, 64 generated tokens each, teacher 6 layers / hidden 384
_distill("distill_full_fp32", "full", "32-true")
_distill("distill_full_bf16mixed", "full", "bf16-mixed")
_distill("distill_lora_fp32", "lora", "32-true")
_distill("distill_full_jsd_fp32", "full", "32-true", beta=0.5)
# RLOO: 2 prompts x 4 completions per step, prompt 32, completion 64 (as GRPO); old log-probs every generation
_rloo("rloo_full_g4_fp32", "full", "32-true", 4)
_rloo("rloo_full_g4_bf16mixed", "full", "bf16-mixed", 4)
_rloo("rloo_lora_g4_fp32", "lora", "32-true", 4)
_rloo("rloo_full_g4_beta0_fp32", "full", "32-true", 4, beta=0.0)
# Gemma-2 twins of dpo_lora_noadapter_fp32 (same shapes, GEMMA2_HF): the fused head with final_logit_softcapping 30
# (tanh in the CPU tile fold) and without it (the same backbone: the difference is the softcap alone)
_dpo("dpo_lora_noadapter_fp32_gemma2", "lora", "32-true", "base-without-adapters", family="gemma2", softcap=30.0)
_dpo("dpo_lora_noadapter_fp32_gemma2_nocap", "lora", "32-true", "base-without-adapters", family="gemma2",
     softcap=None)

# the distillation teacher: a bigger tiny Llama with the same vocabulary and tokenizer
TEACHER_HF = OrderedDict(HF, num_hidden_layers=6, hidden_size=384, intermediate_size=1152, num_attention_heads=6,
                         num_key_value_heads=2, head_dim=64)


# Gemma-2 with the Llama shapes above (untied, no dropout); sandwich norms, GELU-tanh, sqrt(H) embedding scale,
# alternating sliding (window 4096 > every sequence here) / full layers; attention softcapping off (SDPA ignores it
# anyway); final_logit_softcapping per case
GEMMA2_HF = OrderedDict(model_type="gemma2", num_hidden_layers=4, hidden_size=256, intermediate_size=768,
                        num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=2000,
                        max_position_embeddings=2048, hidden_activation="gelu_pytorch_tanh",
                        tie_word_embeddings=False, attention_dropout=0.0, attention_bias=False,
                        query_pre_attn_scalar=64, sliding_window=4096, attn_logit_softcapping=None,
                        final_logit_softcapping=None, pad_token_id=0, eos_token_id=1, bos_token_id=None)


def model_hf(case):
    hf = OrderedDict(GEMMA2_HF if case.get("family") == "gemma2" else HF)
    if case.get("family") == "gemma2":
        hf["final_logit_softcapping"] = case.get("softcap")
    if case.get("vocab"):
        hf["vocab_size"] = case["vocab"]
    return hf


def micro_batch(case):
    """sequences per forward: DPO/ORPO/SimPO 2 x pairs (chosen + rejected concatenated), GRPO
    per_device_train_batch_size, KTO the examples (per forward: target batch and KL batch alike), distillation the
    sequences"""
    m = case["method"]
    if m in ("dpo", "orpo", "simpo"):
        return 2 * case["pairs"]
    if m == "kto":
        return case["examples"]
    if m == "distill":
        return case["sequences"]
    return case["prompts"] * case["num_generations"]


def case_config(case):
    """The case in vramcalc's terms (beta, TRL's version and the generation schedule are in `hf` and `versions`;
    beta 0 is reference "none")."""
    cfg = OrderedDict()
    cfg["framework"] = "hf"
    cfg["method"] = "ipo" if case["method"] == "dpo" and case.get("loss") == "ipo" else case["method"]
    cfg["reference"] = case["reference"]
    if case["method"] in ("dpo", "orpo", "simpo"):
        cfg["micro_batch"] = case["pairs"]  # preference pairs; the forward runs 2 x pairs sequences
    elif case["method"] == "kto":
        cfg["micro_batch"] = case["examples"]  # unpaired examples (half desirable); each forward runs this many rows
    elif case["method"] == "distill":
        cfg["micro_batch"] = case["sequences"]  # prompts, one generated completion each
        cfg["divergence"] = {0.0: "forward-kl", 1.0: "reverse-kl"}.get(case["beta"], "jsd")  # TRL's beta
        cfg["teacher_dtype"] = "fp32"  # the checkpoint's dtype: teacher_model_init_kwargs unset -> dtype "auto"
    else:
        cfg["micro_batch"] = micro_batch(case)  # completions per step (per_device_train_batch_size)
        cfg["num_generations"] = case["num_generations"]
        cfg["steps_per_generation"] = case["steps_per_generation"] or 1
        cfg["num_iterations"] = case["num_iterations"]
    cfg["prompt_len"] = case["prompt_len"]
    cfg["completion_len"] = case["completion_len"]
    cfg["grad_accum"] = 1
    cfg["precision"] = case["precision"]
    cfg["optimizer"] = "adamw"
    cfg["optimizer_impl"] = "fused"
    cfg["checkpointing"] = "full" if case["gc"] != "none" else "none"
    cfg["attention"] = "flash"
    cfg["strategy"] = "single"
    cfg["gpus"] = 1
    cfg["device"] = "cpu"
    cfg["gpu"] = {"name": "cpu", "memory_gib": 1000}
    if case["finetune"] == "lora":
        cfg["finetune"] = OrderedDict([("method", "lora"), ("rank", 8), ("targets", list(TARGETS)), ("dropout", 0)])
    else:
        cfg["finetune"] = "full"
    cfg["model"] = {"hf_config": {k: v for k, v in model_hf(case).items()
                                  if k not in ("pad_token_id", "eos_token_id", "bos_token_id")}}
    if case["method"] == "distill":
        cfg["teacher"] = {"hf_config": {k: v for k, v in TEACHER_HF.items()
                                        if k not in ("pad_token_id", "eos_token_id", "bos_token_id")}}
    return cfg


# --------------------------------------------------------------------------
# Model, tokenizer, data
# --------------------------------------------------------------------------

def save_tiny(path, hf):
    """The random fp32 checkpoint (seed 0) and a word-level tokenizer: "<pad>"=0, "</s>"=1, "<unk>"=2, "w3".."wV-1"."""
    if os.path.exists(os.path.join(path, "config.json")) and os.path.exists(os.path.join(path, "tokenizer.json")):
        return
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    os.makedirs(path, exist_ok=True)
    config = AutoConfig.for_model(**dict(hf))
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    m.save_pretrained(path)
    del m
    V = hf["vocab_size"]
    vocab = {"<pad>": PAD, "</s>": EOS, "<unk>": 2}
    vocab.update({"w%d" % i: i for i in range(3, V)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins the words with spaces
    hft = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")
    hft.save_pretrained(path)


def model_dir(base, case):
    d = base + ("_v%d" % case["vocab"] if case.get("vocab") else "")
    if case.get("family"):
        d += "_%s_cap%s" % (case["family"], case["softcap"])
    return d


def words(rng, n, V):
    return " ".join("w%d" % rng.randrange(3, V) for _ in range(n))


def make_dataset(case):
    from datasets import Dataset
    rng = random.Random(1)
    V = model_hf(case)["vocab_size"]
    if case["method"] == "dpo":
        n = case["pairs"] * (case["steps"] + 1)
        # the completion strings get "</s>" appended by the trainer (add_eos): completion_len - 1 words + EOS
        return Dataset.from_dict({
            "prompt": [words(rng, case["prompt_len"], V) for _ in range(n)],
            "chosen": [" " + words(rng, case["completion_len"] - 1, V) for _ in range(n)],
            "rejected": [" " + words(rng, case["completion_len"] - 1, V) for _ in range(n)]})
    if case["method"] in ("orpo", "simpo"):
        n = case["pairs"] * (case["steps"] + 1)
        # ORPO/CPO tokenize prompt + answer and append the EOS id: completion_len - 1 words + EOS
        return Dataset.from_dict({
            "prompt": [words(rng, case["prompt_len"], V) for _ in range(n)],
            "chosen": [" " + words(rng, case["completion_len"] - 1, V) for _ in range(n)],
            "rejected": [" " + words(rng, case["completion_len"] - 1, V) for _ in range(n)]})
    if case["method"] == "kto":
        n = case["examples"] * (case["steps"] + 1)
        # KTO appends the EOS *string* when the completion does not end with it: end it with " </s>" ourselves
        return Dataset.from_dict({
            "prompt": [words(rng, case["prompt_len"], V) for _ in range(n)],
            "completion": [" " + words(rng, case["completion_len"] - 1, V) + " </s>" for _ in range(n)],
            "label": [i % 2 == 0 for i in range(n)]})
    if case["method"] == "distill":
        n = case["sequences"] * (case["steps"] + 1)
        return Dataset.from_dict({"prompt": [words(rng, case["prompt_len"], V) for _ in range(n)]})
    n = case["prompts"] * (case["steps"] + 1) * (case["steps_per_generation"] or 1)
    return Dataset.from_dict({"prompt": [words(rng, case["prompt_len"], V) for _ in range(n)]})


def reward_len(completions, **kwargs):
    """A trivial reward: the completion's length in characters."""
    return [float(len(c)) for c in completions]


# --------------------------------------------------------------------------
# Phases and the measured step
# --------------------------------------------------------------------------

class Phases:
    """A stack of profiler ranges named "phase:<name>" (None: no range, the enclosing phase stays)."""

    def __init__(self):
        from torch.profiler import record_function
        self._rf = record_function
        self.stack = []

    def push(self, name):
        rf = self._rf("phase:" + name) if name else None
        if rf is not None:
            rf.__enter__()
        self.stack.append(rf)

    def pop(self):
        rf = self.stack.pop()
        if rf is not None:
            rf.__exit__(None, None, None)

    @contextlib.contextmanager
    def phase(self, name):
        self.push(name)
        try:
            yield
        finally:
            self.pop()

    def wrap(self, obj, attr, name):
        """obj.attr(...) runs inside the phase name(*args, **kwargs) (a str or a callable)."""
        orig = getattr(obj, attr)

        def wrapped(*a, **k):
            with self.phase(name(*a, **k) if callable(name) else name):
                return orig(*a, **k)
        setattr(obj, attr, wrapped)
        return orig


def step_marker_callback(state_obj):
    from transformers import TrainerCallback

    class StepMarker(TrainerCallback):
        """Opens the "measured_step" range at on_step_begin of the last step (after gc.collect()) and closes it at
        on_step_end; the optimizer phase sits between on_pre_optimizer_step and on_optimizer_step."""

        def on_step_begin(self, args, state, control, **kw):
            s = state_obj
            s.opt = kw.get("optimizer")
            if state.global_step == args.max_steps - 1:
                gc.collect()
                s.measuring = True
                s.at_start = s.persistent()
                s.step_rf = s.phases._rf("measured_step")
                s.step_rf.__enter__()

        def on_pre_optimizer_step(self, args, state, control, **kw):
            state_obj.phases.push("optimizer")

        def on_optimizer_step(self, args, state, control, **kw):
            state_obj.phases.pop()
            state_obj.phases.push("after_optimizer")

        def on_step_end(self, args, state, control, **kw):
            s = state_obj
            s.phases.pop()
            if s.measuring:
                s.step_rf.__exit__(None, None, None)
                s.measuring = False
                s.at_end = s.persistent()
    return StepMarker()


class RunState:
    def __init__(self, case):
        self.case = case
        self.phases = Phases()
        self.trainer = None
        self.opt = None
        self.measuring = False
        self.at_start = self.at_end = None
        self.batch = None  # DPO: the collated batch of the coming step
        self.tracer = None
        self.trace = False
        self.loss_value = None

    def persistent(self):
        """The tensors that live across steps: (list of tensors, their total bytes)."""
        t = self.trainer
        ts = []
        for m in (t.model, getattr(t, "ref_model", None), getattr(t, "teacher_model", None)):
            if m is None:
                continue
            ts += list(m.parameters()) + list(m.buffers()) + [p.grad for p in m.parameters()]
        opt = self.opt if self.opt is not None else t.optimizer
        if opt is not None:
            for st in opt.state.values():
                ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
        if self.batch is not None:
            for b in self.batch:
                if hasattr(b, "values"):  # a dict or a BatchEncoding (a UserDict)
                    ts += [v for v in b.values() if isinstance(v, torch.Tensor)]
        if getattr(t, "_buffered_inputs", None):
            for b in t._buffered_inputs:
                ts += [v for v in b.values() if isinstance(v, torch.Tensor)]
        if isinstance(getattr(t, "_tr_loss", None), torch.Tensor):
            ts.append(t._tr_loss)
        # storage pointers only: holding the tensors would keep the old batch alive through the step
        return {_storage(x)[0] for x in ts if isinstance(x, torch.Tensor)}, live_tensor_bytes(ts)


def decoder_layers(model):
    m = model.get_base_model() if hasattr(model, "get_base_model") else model
    return m.model.layers


def install(s):
    """Wrap the trainer's methods so that each phase is a profiler range."""
    t = s.trainer
    P = s.phases
    case = s.case
    P.wrap(t.accelerator, "backward", "backward")
    P.wrap(t, "_clip_grad_norm", "clip_grad")
    orig_gbs = t.get_batch_samples

    def get_batch_samples(*a, **k):
        out = orig_gbs(*a, **k)
        s.batch = out[0]
        return out
    t.get_batch_samples = get_batch_samples

    orig_cl = t.compute_loss

    def compute_loss(*a, **k):
        with P.phase("loss"):
            if s.measuring and s.trace:
                with s.tracer.hooks():
                    loss = orig_cl(*a, **k)
                s.tracer.walk(loss if not isinstance(loss, tuple) else loss[0])
            else:
                loss = orig_cl(*a, **k)
        if s.measuring:
            s.loss_value = float(loss.detach())
        return loss
    t.compute_loss = compute_loss

    mod = None
    if case["method"] in ("dpo", "orpo", "simpo", "kto"):
        if case["method"] == "dpo":
            import trl.trainer.dpo_trainer as mod
        elif case["method"] == "kto":
            import trl.trainer.kto_trainer as mod
        s.in_kl = False

        def policy_pre(module, args):
            P.push("policy_forward" if torch.is_grad_enabled() else None)

        def policy_post(module, args, out):
            P.pop()
        t.model.register_forward_pre_hook(policy_pre)
        t.model.register_forward_hook(policy_post, always_call=True)
        if getattr(t, "ref_model", None) is not None:
            # KTO: the reference's KL forward sits inside the "reference_kl" range of _compute_kl_logps
            t.ref_model.register_forward_pre_hook(lambda m, a: P.push(None if s.in_kl else "reference"))
            t.ref_model.register_forward_hook(lambda m, a, o: P.pop(), always_call=True)
        if case["method"] == "kto":
            orig_kl = t._compute_kl_logps

            def compute_kl_logps(model, batch):
                ref = model is t.ref_model or getattr(s, "in_ref_adapter", False)
                with P.phase("reference_kl" if ref else "kl_policy"):
                    s.in_kl = True
                    try:
                        return orig_kl(model, batch)
                    finally:
                        s.in_kl = False
            t._compute_kl_logps = compute_kl_logps
    elif case["method"] == "distill":
        P.wrap(t, "_generate_and_score_completions", "scoring")
        P.wrap(t, "_generate_single_turn", "generation")
        # the student's backbone (with grad) and the teacher's (no_grad); the chunked divergence is in "loss"
        P.wrap(t, "_get_last_hidden_state", lambda *a, **k: "policy_forward" if torch.is_grad_enabled() else "teacher")
    else:
        # GRPO and RLOO: the same method names
        if case["method"] == "rloo":
            import trl.trainer.rloo_trainer as mod
        else:
            import trl.trainer.grpo_trainer as mod
        P.wrap(t, "_generate_and_score_completions", "scoring")
        P.wrap(t, "_generate_single_turn", "generation")
        P.wrap(t, "_calculate_rewards", "reward")
        s.in_ref_adapter = False

        def logps_phase(model, *a, **k):
            if torch.is_grad_enabled():
                return "policy_forward"
            if model is t.ref_model or s.in_ref_adapter:
                return "reference"
            return "old_logps"
        P.wrap(t, "_get_per_token_logps_and_entropies", logps_phase)

    if mod is None or not hasattr(mod, "use_adapter"):
        return
    orig_use_adapter = mod.use_adapter

    @contextlib.contextmanager
    def use_adapter(model, adapter_name):
        # the reference forward of a PEFT policy: adapters disabled (adapter_name None) or the "ref" adapter
        with P.phase("reference" if case["method"] in ("dpo", "kto") else None):
            prev = getattr(s, "in_ref_adapter", False)
            s.in_ref_adapter = True
            try:
                with orig_use_adapter(model, adapter_name):
                    yield
            finally:
                s.in_ref_adapter = prev
    mod.use_adapter = use_adapter


DPO_PHASES = ("reference", "policy_forward", "loss", "backward", "clip_grad", "optimizer", "after_optimizer")
PHASES = {
    "dpo": DPO_PHASES,
    "orpo": ("policy_forward", "loss", "backward", "clip_grad", "optimizer", "after_optimizer"),
    "simpo": ("policy_forward", "loss", "backward", "clip_grad", "optimizer", "after_optimizer"),
    "kto": ("kl_policy", "policy_forward", "reference_kl", "reference", "loss", "backward", "clip_grad", "optimizer",
            "after_optimizer"),
    "distill": ("generation", "scoring", "policy_forward", "teacher", "loss", "backward", "clip_grad", "optimizer",
                "after_optimizer"),
}
GRPO_PHASES = ("generation", "scoring", "old_logps", "reference", "reward", "policy_forward", "loss", "backward",
               "clip_grad", "optimizer", "after_optimizer")
PHASES["grpo"] = GRPO_PHASES
PHASES["rloo"] = GRPO_PHASES


def build_trainer(case, path, s):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(path)
    dtype = torch.bfloat16 if case["precision"] == "bf16-base-mixed" else torch.float32
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="sdpa")
    peft_config = None
    if case["finetune"] == "lora":
        from peft import LoraConfig
        peft_config = LoraConfig(r=LORA["r"], lora_alpha=LORA["lora_alpha"], lora_dropout=LORA["lora_dropout"],
                                 target_modules=list(TARGETS), bias="none", task_type="CAUSAL_LM")
    common = dict(output_dir=os.path.join(tempfile.gettempdir(), "vramcalc-trl-out"), max_steps=case["steps"],
                  gradient_accumulation_steps=1, learning_rate=1e-5, logging_strategy="no", save_strategy="no",
                  report_to="none", use_cpu=True, bf16=case["precision"] in ("bf16-mixed", "bf16-base-mixed"),
                  gradient_checkpointing=case["gc"] != "none", dataloader_num_workers=0,
                  dataloader_pin_memory=False, seed=0, disable_tqdm=True)
    if case["gc"] != "none":
        common["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    ds = make_dataset(case)
    if case["method"] == "dpo":
        from trl import DPOConfig, DPOTrainer
        args = DPOConfig(per_device_train_batch_size=case["pairs"], max_length=None, loss_type=[case["loss"]],
                         precompute_ref_log_probs=case["reference"] == "precomputed", **common)
        trainer = DPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=peft_config)
    elif case["method"] in ("orpo", "simpo"):
        if case["method"] == "orpo":
            from trl.experimental.orpo import ORPOConfig as Cfg, ORPOTrainer as Tr
            extra = {}
        else:
            from trl.experimental.cpo import CPOConfig as Cfg, CPOTrainer as Tr
            extra = dict(loss_type="simpo", cpo_alpha=case["cpo_alpha"])
        args = Cfg(per_device_train_batch_size=case["pairs"], max_length=case["prompt_len"] + case["completion_len"],
                   **extra, **common)
        trainer = Tr(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=peft_config)
    elif case["method"] == "kto":
        from trl import KTOConfig, KTOTrainer
        args = KTOConfig(per_device_train_batch_size=case["examples"], max_length=None,
                         precompute_ref_log_probs=case["reference"] == "precomputed", **common)
        trainer = KTOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=peft_config)
    elif case["method"] == "distill":
        from trl import DistillationConfig, DistillationTrainer
        tok.padding_side = "left"
        args = DistillationConfig(per_device_train_batch_size=case["sequences"],
                                  max_completion_length=case["completion_len"], beta=case["beta"],
                                  generation_kwargs={"min_new_tokens": case["completion_len"]}, use_vllm=False,
                                  log_completions=False, **common)
        trainer = DistillationTrainer(model=model, teacher_model=s.teacher_dir, args=args, train_dataset=ds,
                                      processing_class=tok, peft_config=peft_config)
    elif case["method"] == "rloo":
        from trl import RLOOConfig, RLOOTrainer
        args = RLOOConfig(per_device_train_batch_size=micro_batch(case), num_generations=case["num_generations"],
                          max_completion_length=case["completion_len"], beta=case["beta"],
                          steps_per_generation=case["steps_per_generation"], num_iterations=case["num_iterations"],
                          generation_kwargs={"min_new_tokens": case["completion_len"]}, use_vllm=False,
                          log_completions=False, **common)
        trainer = RLOOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=ds,
                              processing_class=tok, peft_config=peft_config)
    else:
        from trl import GRPOConfig, GRPOTrainer
        args = GRPOConfig(per_device_train_batch_size=micro_batch(case), num_generations=case["num_generations"],
                          max_completion_length=case["completion_len"], beta=case["beta"],
                          steps_per_generation=case["steps_per_generation"], num_iterations=case["num_iterations"],
                          generation_kwargs={"min_new_tokens": case["completion_len"]}, use_vllm=False,
                          log_completions=False, **common)
        trainer = GRPOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=ds,
                              processing_class=tok, peft_config=peft_config)
    del model
    s.trainer = trainer
    trainer.add_callback(step_marker_callback(s))
    install(s)
    return trainer


def param_bytes(model):
    kinds = OrderedDict([("trainable", 0), ("frozen", 0)])
    seen = set()
    for p in model.parameters():
        ptr, nb = _storage(p)
        if ptr in seen:
            continue
        seen.add(ptr)
        kinds["trainable" if p.requires_grad else "frozen"] += nb
    return kinds


def run_case(case, path, trace=True, out=None):
    from torch.profiler import profile, ProfilerActivity
    gc.collect()
    torch.manual_seed(0)
    s = RunState(case)
    s.teacher_dir = path + "_teacher"
    s.trace = trace and case["gc"] == "none"
    t0 = time.time()
    # the whole run is profiled: a block allocated before the profiler starts has no free event in it
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        trainer = build_trainer(case, path, s)
        if s.trace:
            s.tracer = BlockSavedTracer(decoder_layers(trainer.model))
        trainer.train()
    wall = time.time() - t0
    phases = PHASES[case["method"]]
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in _walk(tree) if r.name == "measured_step"][-1]
    in_step, live0, cum_at_start, cum = step_window(allocs, step_node.start_time_ns, step_node.end_time_ns)
    if cum_at_start is None:
        cum_at_start = cum
    cur, peak, peak_i, phase_peak, phase_op, phase_end, phase_i = step_peaks(in_step, phases, init=None)
    pk = in_step[peak_i]
    start_ts, step_start = s.at_start
    end_ts, end_bytes = s.at_end
    persistent_ptrs = start_ts | end_ts
    model = trainer.model
    tot, tr = count_params(model)
    seen_phases = [p for p in phases if phase_peak.get(p) is not None]
    m = OrderedDict()
    m["peak_allocated_bytes"] = step_start + peak
    m["step_start_bytes"] = step_start
    m["peak_phase"] = _describe(pk)[0]
    m["peak_op"] = _opname(pk)
    m["phase_peak_bytes"] = OrderedDict((p, step_start + phase_peak[p]) for p in seen_phases)
    m["phase_peak_op"] = OrderedDict((p, _opname(phase_op.get(p))) for p in seen_phases)
    m["phase_end_bytes"] = OrderedDict((p, step_start + phase_end[p]) for p in seen_phases if p in phase_end)
    m["params_total"] = tot
    m["params_trainable"] = tr
    m["param_bytes"] = param_bytes(model)
    if getattr(trainer, "ref_model", None) is not None:
        m["ref_model_param_bytes"] = sum(_storage(p)[1] for p in trainer.ref_model.parameters())
    if getattr(trainer, "teacher_model", None) is not None:
        m["teacher_param_bytes"] = sum(_storage(p)[1] for p in trainer.teacher_model.parameters())
        m["teacher_dtype"] = str(next(trainer.teacher_model.parameters()).dtype)
    opt = s.opt or trainer.optimizer
    m["optimizer_state_bytes"] = live_tensor_bytes([v for st in opt.state.values() for v in st.values()
                                                    if isinstance(v, torch.Tensor)])
    m["optimizer"] = type(opt.optimizer if hasattr(opt, "optimizer") else opt).__name__ + \
        (" fused" if (opt.optimizer if hasattr(opt, "optimizer") else opt).defaults.get("fused") else "")
    m["loss"] = round(s.loss_value, 6) if s.loss_value is not None else None
    if s.trace:
        rec = {p: r for p, r in s.tracer.records.items() if p not in persistent_ptrs}
        per = defaultdict(int)
        for r in rec.values():
            per["layer%d" % r["region"] if isinstance(r["region"], int) else r["region"]] += r["nbytes"]
        m["saved_bytes"] = OrderedDict(sorted(per.items()))
    check = OrderedDict([("profiler_step_start_bytes", cum_at_start), ("step_net_bytes", cur),
                         ("tensor_end_minus_start", end_bytes - step_start)])
    extra = [(n.extra_fields.alloc_size, " < ".join(a.name for a in _ancestors(n))[:160])
             for p, n in live0.items() if p not in persistent_ptrs]
    if extra:
        check["unaccounted_at_start_bytes"] = sum(e[0] for e in extra)
        agg = defaultdict(lambda: [0, 0])
        for sz, where in extra:
            agg[where][0] += sz
            agg[where][1] += 1
        check["unaccounted_at_start"] = sorted(([v[0], v[1], k] for k, v in agg.items()), reverse=True)[:8]
    if out is not None:
        print_trace(case, in_step, peak_i, step_start, s, persistent_ptrs, m, phase_i, seen_phases, out)
    if s.tracer is not None:
        s.tracer.remove()
    return m, check, wall


def _walk(tree):
    stack = list(tree)
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


TRACE_LEGEND = """\
stacks/trl/measure.py   (torch %s, transformers %s, peft %s, trl %s, accelerate %s, CPU)
Per case: the header (peak = step_start + rise, [phase: op (autograd node)] at the peak), each phase's peak and
the live bytes when it ended, the live blocks at the step's peak grouped by (phase, autograd node, op) --
dtype(shape) when the block is a tensor saved for backward by the policy forward --, the same (largest 10
groups) at each other phase's peak, then the saved-for-backward storages per region (decoder layer / outside):
the full list for the last layer and for "outside", and for the other layers only the lines that differ.
"""


def print_trace(case, in_step, peak_i, step_start, s, persistent_ptrs, m, phase_i, seen_phases, out):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    rec = s.tracer.records if s.tracer is not None else {}
    P("=" * 110)
    desc = "%s %s %s ref=%s gc=%s" % (case["method"], case["finetune"], case["precision"], case["reference"],
                                       case["gc"])
    if case["method"] in ("dpo", "orpo", "simpo"):
        desc += " pairs=%d prompt=%d completion=%d" % (case["pairs"], case["prompt_len"], case["completion_len"])
        if case["method"] == "dpo":
            desc += " loss=%s" % case["loss"]
    elif case["method"] == "kto":
        desc += " examples=%d prompt=%d completion=%d" % (case["examples"], case["prompt_len"], case["completion_len"])
    elif case["method"] == "distill":
        desc += " sequences=%d prompt=%d completion=%d beta=%g" % (case["sequences"], case["prompt_len"],
                                                                  case["completion_len"], case["beta"])
    else:
        desc += " G=%d prompts=%d prompt=%d completion=%d beta=%g spg=%s" % (
            case["num_generations"], case["prompts"], case["prompt_len"], case["completion_len"], case["beta"],
            case["steps_per_generation"] or 1)
    if case.get("vocab"):
        desc += " vocab=%d" % case["vocab"]
    if case.get("family"):
        desc += " family=%s final_logit_softcapping=%s" % (case["family"], case["softcap"])
    P("=== %s  (%s)  peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], desc, m["peak_allocated_bytes"], step_start, m["peak_allocated_bytes"] - step_start,
        m["peak_phase"], m["peak_op"]))
    P("  param_bytes: %s  optimizer_state_bytes: %d%s" % (
        json.dumps(m["param_bytes"]), m["optimizer_state_bytes"],
        "  ref_model_param_bytes: %d" % m["ref_model_param_bytes"] if "ref_model_param_bytes" in m else ""))
    P("  phases (peak, op at the peak; live bytes when the phase last allocated/freed):")
    for p in seen_phases:
        P("    %-15s peak=%10d  end=%10s  %s" % (p, m["phase_peak_bytes"][p], m["phase_end_bytes"].get(p),
                                               m["phase_peak_op"][p]))
    saved_phases = ("policy_forward", "loss")
    P("  -- live at the step's peak (allocated during the step), by phase / autograd node / op:")
    print_groups(P, live_groups(in_step, peak_i, rec, saved_phases), (15, 34, 30))
    for p in seen_phases:
        i = phase_i.get(p)
        if i is None or i == peak_i:
            continue
        g = live_groups(in_step, i, rec, saved_phases)
        top = dict(sorted(g.items(), key=lambda kv: -kv[1][0])[:10])
        P("  -- live at the %s peak (%d = start + %d), largest 10 of %d groups:" % (
            p, m["phase_peak_bytes"][p], m["phase_peak_bytes"][p] - step_start, len(g)))
        print_groups(P, top, (15, 34, 30))
    if s.tracer is not None:
        print_saved_by_block(P, rec, persistent_ptrs, s.tracer, "layer", "decoder layer", "during the forward")
    else:
        P("  (no saved-tensor trace: %s)" % ("gradient checkpointing" if case["gc"] != "none" else "--no-trace"))


# --------------------------------------------------------------------------

def versions():
    return OrderedDict((k, _ver(k)) for k in ("torch", "transformers", "peft", "trl", "accelerate", "datasets",
                                              "safetensors", "tokenizers", "numpy"))


def run_one(case, base_dir, args, tout):
    path = model_dir(base_dir, case)
    save_tiny(path, model_hf(case))
    if case["method"] == "distill":
        save_tiny(base_dir + "_teacher", TEACHER_HF)
    m, check, wall = run_case(case, path, trace=not args.no_trace, out=tout)
    if check["profiler_step_start_bytes"] != m["step_start_bytes"] or \
            check["step_net_bytes"] != check["tensor_end_minus_start"]:
        print("NOTE %s: accounting %r vs step_start %d" % (
            case["name"], {k: v for k, v in check.items() if k != "unaccounted_at_start"}, m["step_start_bytes"]),
            file=sys.stderr)
    hf = OrderedDict([("model", "from_pretrained(dtype=%s, attn_implementation='sdpa')" % (
        "bf16" if case["precision"] == "bf16-base-mixed" else "fp32")),
        ("trainer", {"dpo": "DPOTrainer", "grpo": "GRPOTrainer", "orpo": "experimental.orpo.ORPOTrainer",
                     "simpo": "experimental.cpo.CPOTrainer", "kto": "KTOTrainer",
                     "distill": "DistillationTrainer", "rloo": "RLOOTrainer"}[case["method"]]),
        ("autocast", case["precision"] in ("bf16-mixed", "bf16-base-mixed")),
        ("gradient_checkpointing", case["gc"])])
    if case["finetune"] == "lora":
        hf["lora"] = dict(LORA, adapter_dtype="fp32 (PEFT autocast_adapter_dtype=True)")
    toks = "prompt %d + completion %d (EOS included)" % (case["prompt_len"], case["completion_len"])
    if case["method"] == "dpo":
        hf["dpo"] = {"beta": 0.1, "loss_type": [case["loss"]], "precompute_ref_log_probs": case["reference"] ==
                     "precomputed", "sequences_per_forward": micro_batch(case), "tokens": toks}
    elif case["method"] == "orpo":
        hf["orpo"] = {"beta": 0.1, "max_length": case["prompt_len"] + case["completion_len"],
                      "sequences_per_forward": micro_batch(case), "tokens": toks}
    elif case["method"] == "simpo":
        hf["cpo"] = {"loss_type": "simpo", "cpo_alpha": case["cpo_alpha"], "simpo_gamma": 0.5, "beta": 0.1,
                     "max_length": case["prompt_len"] + case["completion_len"],
                     "sequences_per_forward": micro_batch(case), "tokens": toks}
    elif case["method"] == "kto":
        hf["kto"] = {"beta": 0.1, "loss_type": "kto", "max_length": None, "precompute_ref_log_probs":
                     case["reference"] == "precomputed", "per_device_train_batch_size": case["examples"],
                     "labels": "alternating desirable / undesirable", "tokens": toks,
                     "KL batch": "the same prompts with the completions rotated by one (same lengths here)"}
    elif case["method"] == "distill":
        hf["distill"] = {"beta": case["beta"], "temperature": 1.0, "per_device_train_batch_size": case["sequences"],
                         "max_completion_length": case["completion_len"],
                         "generation_kwargs": {"min_new_tokens": case["completion_len"]}, "use_vllm": False,
                         "teacher": "by path (teacher_model_init_kwargs unset)",
                         "tokens": "prompt %d + generated %d" % (case["prompt_len"], case["completion_len"])}
    elif case["method"] == "rloo":
        hf["rloo"] = {"beta": case["beta"], "num_generations": case["num_generations"],
                      "per_device_train_batch_size": micro_batch(case),
                      "steps_per_generation": case["steps_per_generation"] or 1,
                      "num_iterations": case["num_iterations"], "use_vllm": False,
                      "generation_kwargs": {"min_new_tokens": case["completion_len"]},
                      "reward": "len(completion) in characters",
                      "kl": "beta * sum of (old - ref) log-probs subtracted from the reward (no KL term in the loss)",
                      "advantages": "leave-one-out baseline, normalize_advantages False",
                      "loss": "per-sequence clipped ratio, epsilon 0.2, mean over sequences"}
    else:
        hf["grpo"] = {"beta": case["beta"], "loss_type": "dapo", "num_generations": case["num_generations"],
                      "per_device_train_batch_size": micro_batch(case),
                      "steps_per_generation": case["steps_per_generation"] or 1,
                      "num_iterations": case["num_iterations"], "use_vllm": False,
                      "generation_kwargs": {"min_new_tokens": case["completion_len"]},
                      "reward": "len(completion) in characters"}
    hf["trainer_args"] = {"optim": "adamw_torch_fused (default)", "max_grad_norm": 1.0, "max_steps": case["steps"],
                          "measured": "step %d (the last)" % case["steps"]}
    rec = OrderedDict([("name", case["name"]), ("config", case_config(case)), ("measured", m), ("hf", hf),
                       ("check", check), ("device", "cpu"), ("torch", torch.__version__.split("+")[0]),
                       ("versions", versions()),
                       ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])
    print("%-34s peak=%10d start=%9d %-15s %s (%.0fs)" % (
        case["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m["peak_phase"], m["peak_op"], wall),
        file=sys.stderr, flush=True)
    return rec


def merge_jsonl(path, records):
    """--merge: the existing lines stay byte for byte; a record replaces the line of the same name, else is appended."""
    lines = []
    if os.path.exists(path):
        with open(path) as f:
            lines = [ln if ln.endswith("\n") else ln + "\n" for ln in f if ln.strip()]
    where = {json.loads(ln)["name"]: i for i, ln in enumerate(lines)}
    for r in records:
        ln = json.dumps(r) + "\n"
        if r["name"] in where:
            lines[where[r["name"]]] = ln
        else:
            where[r["name"]] = len(lines)
            lines.append(ln)
    with open(path, "w") as f:
        f.writelines(lines)


TRACE_SEP = "=" * 110


def merge_trace_file(path, sections, legend):
    """--merge: the trace file's header and other cases' sections stay as they are; a case's section (from its
    separator line to the next) is replaced in place or appended."""
    head, order, text = [], [], {}
    if os.path.exists(path):
        with open(path) as f:
            lines = f.read().splitlines(True)
        cur = None
        for i, ln in enumerate(lines):
            if ln.rstrip("\n") == TRACE_SEP and i + 1 < len(lines) and lines[i + 1].startswith("=== "):
                cur = lines[i + 1][4:].split()[0]
                order.append(cur)
                text[cur] = []
            (head if cur is None else text[cur]).append(ln)
        text = {k: "".join(v) for k, v in text.items()}
    else:
        head = [legend + "\n"]
    for name, t in sections.items():
        if name not in text:
            order.append(name)
        text[name] = t
    with open(path, "w") as f:
        f.write("".join(head))
        for name in order:
            f.write(text[name])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--trace-out", default=None, help="trace file (default stdout)")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--exact", default=None, help="run only this case (used for child processes)")
    ap.add_argument("--no-trace", action="store_true", help="no saved-tensor hooks (checks they change nothing)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other cases of --out and --trace-out byte for byte: a measured case replaces its own "
                         "line / trace section in place, a new case is appended")
    ap.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "vramcalc-trl-tiny-llama"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    if args.exact:  # child: one case, JSON record on the last stdout line, trace to --trace-out
        case = [c for c in CASES if c["name"] == args.exact][0]
        tout = open(args.trace_out, "w") if args.trace_out else sys.stderr
        rec = run_one(case, args.model_dir, args, tout)
        print(json.dumps(rec))
        return
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    import transformers
    import peft
    import trl
    import accelerate
    legend = TRACE_LEGEND % (torch.__version__, transformers.__version__, peft.__version__, trl.__version__,
                             accelerate.__version__)
    merge_traces = args.merge and args.trace_out
    if merge_traces:
        tout = None
        sections = OrderedDict()
    else:
        tout = open(args.trace_out, "w") if args.trace_out else sys.stdout
        print(legend, file=tout)
    records, failures = [], []
    for c in cases:
        # every case in a fresh process: objects of an earlier case would be freed inside a later case's profile
        cmd = [sys.executable, os.path.abspath(__file__), "--exact", c["name"], "--model-dir", args.model_dir]
        if args.no_trace:
            cmd.append("--no-trace")
        try:
            with tempfile.NamedTemporaryFile("r", suffix=".txt") as tf:
                cmd += ["--trace-out", tf.name]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
                if p.returncode != 0:
                    raise RuntimeError("child exited %d" % p.returncode)
                rec = json.loads(p.stdout.strip().splitlines()[-1], object_pairs_hook=OrderedDict)
                if merge_traces:
                    sections[c["name"]] = tf.read()
                else:
                    tout.write(tf.read())
                    tout.flush()
        except Exception as e:  # noqa: BLE001
            msg = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            failures.append((c["name"], msg))
            print("%-34s FAILED %s" % (c["name"], msg), file=sys.stderr, flush=True)
            continue
        records.append(rec)
    if args.out and args.merge:
        merge_jsonl(args.out, records)
    elif args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    if merge_traces:
        merge_trace_file(args.trace_out, sections, legend)
    elif args.trace_out:
        tout.close()
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
