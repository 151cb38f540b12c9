#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one training step of REAL Hugging Face models (CPU).

Ground truth for vramcalc's per-family terms.  Each case builds a tiny model with
``AutoModelForCausalLM.from_config(AutoConfig.for_model(**TINY_CONFIG))`` (no weights
from the Hub), trains it for 3 steps (AdamW, ``foreach=False``) and measures the 3rd.

    build/venv/bin/python tests/validation/measure_hf.py \
        --out tests/validation/measured_hf_cpu.jsonl \
        --activations tests/validation/measured_activations.json \
        [--only SUBSTR]... [--trace] [--trace-out FILE]

Counting (same method as measure_torch.py): the whole run (model construction
included) is profiled with ``torch.profiler.profile(profile_memory=True)``.  c10's
CPU allocator then reports every allocation and free with its exact byte count;
``kineto_results.experimental_event_tree()`` (still present in torch 2.13) gives
them in order, with the op and autograd node that made them.  The running sum is
the exact live-bytes curve.

* ``step_start_bytes``: unique storages of parameters, buffers, optimizer states,
  grads (None after ``zero_grad(set_to_none=True)``), input_ids and labels,
  computed from the tensors; cross-checked against the profiler's running total
  at the start of the step (``check`` in the output; a mismatch means the model
  keeps tensors that are neither parameters nor buffers).
* ``peak_allocated_bytes`` = step_start_bytes + the highest rise of the curve
  during the step (forward, backward, optimizer.step()).
* The training step is HF Trainer's: ``outputs = model(input_ids=..., labels=...)``,
  ``loss = outputs.loss``, the outputs object (logits, router logits) is dropped
  before ``loss.backward()``; then ``optimizer.step()``.

``--trace`` prints, per case, the live set at the peak grouped by
(phase, autograd node, op) with sizes (and shapes when the block is a tensor
saved for backward), then every tensor saved for backward by ONE decoder layer
(the last one) and by the code outside the layers, with shape, dtype, the
producing grad_fn and the autograd node(s)/attribute(s) that keep it, plus the
saved bytes of every layer.  Tracing does not change the measured numbers (the
pack hook returns a detached alias of the same storage).
"""
import argparse
import contextlib
import copy
import datetime
import gc
import json
import os
import sys
import time
import warnings
from collections import OrderedDict

import torch
sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # for profiler_memory
from profiler_memory import (  # noqa: E402
    storage as _storage, live_tensor_bytes, count_params, alloc_nodes as _alloc_nodes, ancestors as _ancestors,
    describe as _describe, opname as _opname, fmt_shape as _fmt_shape,
    step_window, step_peaks, live_groups, print_groups,
    BlockSavedTracer, print_saved_by_block)

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

transformers.logging.set_verbosity_error()

# --------------------------------------------------------------------------
# Case matrix
# --------------------------------------------------------------------------

V = 512
SW = ["sliding_attention", "full_attention"]

# One tiny config per family.  Every field set explicitly is recorded; dropout
# fields are forced to 0.0 (and written into the dict) unless a case says otherwise.
FAMILIES = OrderedDict()
FAMILIES["llama"] = dict(model_type="llama", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                         max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False)
FAMILIES["mistral"] = dict(model_type="mistral", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                           max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False,
                           sliding_window=64)
FAMILIES["mixtral"] = dict(model_type="mixtral", num_hidden_layers=2, hidden_size=128, intermediate_size=128,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                           max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False,
                           num_local_experts=4, num_experts_per_tok=2)
FAMILIES["qwen2"] = dict(model_type="qwen2", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                         max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False)
FAMILIES["qwen3"] = dict(model_type="qwen3", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=48, vocab_size=V,
                         max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False)
FAMILIES["qwen3_moe"] = dict(model_type="qwen3_moe", num_hidden_layers=3, hidden_size=128, intermediate_size=256,
                             moe_intermediate_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                             vocab_size=V, max_position_embeddings=512, hidden_act="silu",
                             tie_word_embeddings=False, num_experts=8, num_experts_per_tok=2,
                             norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[0])
FAMILIES["qwen2_moe"] = dict(model_type="qwen2_moe", num_hidden_layers=2, hidden_size=128, intermediate_size=256,
                             moe_intermediate_size=64, shared_expert_intermediate_size=256,
                             num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                             max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False,
                             num_experts=8, num_experts_per_tok=2, decoder_sparse_step=1)
FAMILIES["gemma"] = dict(model_type="gemma", num_hidden_layers=2, hidden_size=128, intermediate_size=256,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=32, vocab_size=V,
                         max_position_embeddings=512, hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True)
FAMILIES["gemma2"] = dict(model_type="gemma2", num_hidden_layers=2, hidden_size=128, intermediate_size=256,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                          max_position_embeddings=512, hidden_activation="gelu_pytorch_tanh",
                          tie_word_embeddings=True, query_pre_attn_scalar=32, sliding_window=64,
                          layer_types=SW, attn_logit_softcapping=50.0, final_logit_softcapping=30.0)
FAMILIES["gemma3_text"] = dict(model_type="gemma3_text", num_hidden_layers=2, hidden_size=128,
                               intermediate_size=256, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                               vocab_size=V, max_position_embeddings=512, hidden_activation="gelu_pytorch_tanh",
                               tie_word_embeddings=True, query_pre_attn_scalar=32, sliding_window=64,
                               layer_types=SW)
FAMILIES["llama4_text"] = dict(model_type="llama4_text", num_hidden_layers=4, hidden_size=128,
                               intermediate_size=128, intermediate_size_mlp=256, num_attention_heads=4,
                               num_key_value_heads=2, head_dim=32, vocab_size=V, max_position_embeddings=512,
                               hidden_act="silu", tie_word_embeddings=False, num_local_experts=4,
                               num_experts_per_tok=1, interleave_moe_layer_step=2, attention_chunk_size=64,
                               use_qk_norm=True)
FAMILIES["deepseek_v2"] = dict(model_type="deepseek_v2", num_hidden_layers=2, hidden_size=128,
                               intermediate_size=256, moe_intermediate_size=64, num_attention_heads=4,
                               num_key_value_heads=4, vocab_size=V, max_position_embeddings=512,
                               hidden_act="silu", tie_word_embeddings=False, q_lora_rank=None, kv_lora_rank=64,
                               qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32, n_routed_experts=8,
                               n_shared_experts=1, num_experts_per_tok=2, first_k_dense_replace=1,
                               topk_method="greedy")
FAMILIES["deepseek_v3"] = dict(model_type="deepseek_v3", num_hidden_layers=3, hidden_size=128,
                               intermediate_size=256, moe_intermediate_size=64, num_attention_heads=4,
                               num_key_value_heads=4, vocab_size=V, max_position_embeddings=512,
                               hidden_act="silu", tie_word_embeddings=False, q_lora_rank=64, kv_lora_rank=64,
                               qk_rope_head_dim=16, qk_nope_head_dim=32, v_head_dim=32, n_routed_experts=8,
                               n_shared_experts=1, num_experts_per_tok=2, n_group=2, topk_group=1,
                               first_k_dense_replace=1)
FAMILIES["gpt_oss"] = dict(model_type="gpt_oss", num_hidden_layers=2, hidden_size=128, intermediate_size=128,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                           max_position_embeddings=512, tie_word_embeddings=False, num_local_experts=4,
                           num_experts_per_tok=2, sliding_window=64, layer_types=SW)
FAMILIES["olmo"] = dict(model_type="olmo", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                        num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                        hidden_act="silu", tie_word_embeddings=False)
FAMILIES["olmo2"] = dict(model_type="olmo2", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                         hidden_act="silu", tie_word_embeddings=False)
FAMILIES["olmo3"] = dict(model_type="olmo3", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                         hidden_act="silu", tie_word_embeddings=False, sliding_window=64, layer_types=SW)
FAMILIES["cohere"] = dict(model_type="cohere", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                          num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                          hidden_act="silu", tie_word_embeddings=True, use_qk_norm=False)
FAMILIES["cohere2"] = dict(model_type="cohere2", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                           max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=True,
                           sliding_window=64, layer_types=SW)
FAMILIES["starcoder2"] = dict(model_type="starcoder2", num_hidden_layers=2, hidden_size=128, intermediate_size=512,
                              num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                              max_position_embeddings=512, hidden_act="gelu_pytorch_tanh",
                              tie_word_embeddings=True, use_bias=True, bos_token_id=0, eos_token_id=0)
FAMILIES["granite"] = dict(model_type="granite", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                           num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                           hidden_act="silu", tie_word_embeddings=False, embedding_multiplier=12.0,
                           residual_multiplier=0.22, attention_multiplier=0.03125, logits_scaling=8.0)
FAMILIES["granitemoe"] = dict(model_type="granitemoe", num_hidden_layers=2, hidden_size=128, intermediate_size=128,
                              num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                              max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=True,
                              num_local_experts=4, num_experts_per_tok=2, embedding_multiplier=12.0,
                              residual_multiplier=0.22, attention_multiplier=0.03125, logits_scaling=8.0)
FAMILIES["gptj"] = dict(model_type="gptj", n_layer=2, n_embd=128, n_head=4, rotary_dim=16, n_inner=None,
                        vocab_size=V, n_positions=512, activation_function="gelu_new", tie_word_embeddings=False,
                        bos_token_id=0, eos_token_id=0)
FAMILIES["falcon"] = dict(model_type="falcon", num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                          num_kv_heads=2, new_decoder_architecture=True, multi_query=False, parallel_attn=True,
                          num_ln_in_parallel_attn=2, bias=False, alibi=False, vocab_size=V,
                          max_position_embeddings=512, ffn_hidden_size=512, activation="gelu",
                          tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
FAMILIES["falcon_mqa"] = dict(model_type="falcon", num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                              new_decoder_architecture=False, multi_query=True, parallel_attn=True, bias=False,
                              alibi=False, vocab_size=V, max_position_embeddings=512, ffn_hidden_size=512,
                              activation="gelu", tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)
FAMILIES["opt"] = dict(model_type="opt", num_hidden_layers=2, hidden_size=128, ffn_dim=512, num_attention_heads=4,
                       word_embed_proj_dim=128, vocab_size=V, max_position_embeddings=512,
                       activation_function="relu", do_layer_norm_before=True, enable_bias=True,
                       tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, pad_token_id=1)
FAMILIES["bloom"] = dict(model_type="bloom", n_layer=2, hidden_size=128, n_head=4, vocab_size=V,
                         tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, pad_token_id=1)
FAMILIES["mpt"] = dict(model_type="mpt", n_layers=2, d_model=128, n_heads=4, expansion_ratio=4, max_seq_len=512,
                       vocab_size=V, no_bias=True, tie_word_embeddings=True,
                       attn_config={"attn_pdrop": 0, "attn_impl": "torch", "alibi": True})
FAMILIES["smollm3"] = dict(model_type="smollm3", num_hidden_layers=4, hidden_size=128, intermediate_size=344,
                           num_attention_heads=4, num_key_value_heads=2, vocab_size=V,
                           max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=True,
                           no_rope_layer_interval=4, bos_token_id=0, eos_token_id=0, pad_token_id=1)
FAMILIES["phimoe"] = dict(model_type="phimoe", num_hidden_layers=2, hidden_size=128, intermediate_size=128,
                          num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                          hidden_act="silu", tie_word_embeddings=False, num_local_experts=4, num_experts_per_tok=2,
                          bos_token_id=0, eos_token_id=0)
FAMILIES["exaone4"] = dict(model_type="exaone4", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=V,
                           max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False,
                           sliding_window=64, layer_types=SW, bos_token_id=0, eos_token_id=0, pad_token_id=1)
FAMILIES["phi"] = dict(model_type="phi", num_hidden_layers=2, hidden_size=128, intermediate_size=512,
                       num_attention_heads=4, num_key_value_heads=4, vocab_size=V, max_position_embeddings=512,
                       hidden_act="gelu_new", tie_word_embeddings=False, qk_layernorm=False,
                       bos_token_id=0, eos_token_id=0)
FAMILIES["phi3"] = dict(model_type="phi3", num_hidden_layers=2, hidden_size=128, intermediate_size=344,
                        num_attention_heads=4, num_key_value_heads=2, vocab_size=V, max_position_embeddings=512,
                        original_max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False,
                        bos_token_id=0, eos_token_id=0, pad_token_id=1)
FAMILIES["gpt2"] = dict(model_type="gpt2", n_layer=2, n_embd=128, n_head=4, n_inner=None, vocab_size=V,
                        n_positions=512, activation_function="gelu_new", tie_word_embeddings=True,
                        bos_token_id=0, eos_token_id=0)
FAMILIES["gpt_neox"] = dict(model_type="gpt_neox", num_hidden_layers=2, hidden_size=128, intermediate_size=512,
                            num_attention_heads=4, vocab_size=V, max_position_embeddings=512, hidden_act="gelu",
                            use_parallel_residual=True, tie_word_embeddings=False, bos_token_id=0, eos_token_id=0)

BASE = {"seq_len": 256, "micro_batch": 2, "grad_accum": 1, "precision": "32-true", "optimizer": "adamw",
        "optimizer_impl": "single-tensor", "finetune": "full", "checkpointing": "none", "attention": "eager",
        "strategy": "single", "gpus": 1, "gpu": {"name": "cpu", "memory_gib": 1000}}

SEQ = {"mixtral": 128, "qwen3_moe": 128, "qwen2_moe": 128, "llama4_text": 128, "deepseek_v2": 128,
       "deepseek_v3": 128, "gpt_oss": 128, "granitemoe": 128, "phimoe": 128, "gemma": 128, "olmo": 128,
       "cohere": 128, "gptj": 128, "bloom": 128, "opt": 128, "phi3": 128, "exaone4": 192, "gemma3_text": 192}

CASES = []


def _case(name, hf, keep_dropout=False, **kw):
    cfg = copy.deepcopy(BASE)
    cfg.update(kw)
    CASES.append({"name": name, "hf": copy.deepcopy(hf), "keep_dropout": keep_dropout, "config": cfg})


for _fam, _hf in FAMILIES.items():
    _case("%s_fp32_eager" % _fam, _hf, seq_len=SEQ.get(_fam, 256))
# variants
_case("gpt2_gelu_pytorch_tanh_fp32_eager", dict(FAMILIES["gpt2"], activation_function="gelu_pytorch_tanh"))
_case("gpt2_dropout0.1_fp32_eager", dict(FAMILIES["gpt2"], resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1),
      keep_dropout=True)
_case("phi_gelu_fp32_eager", dict(FAMILIES["phi"], hidden_act="gelu"))
_case("llama_fp32_flash", FAMILIES["llama"], attention="flash")
_case("qwen3_lora_fp32_eager", FAMILIES["qwen3"],
      finetune={"method": "lora", "rank": 8, "targets": ["q_proj", "v_proj"]})
# gpt_oss is not in this loop: GptOssForCausalLM has _supports_sdpa = False (attention sinks), so
# from_config(attn_implementation="sdpa") raises; see gpt_oss_bf16mixed_eager below.
for _fam in ("llama", "qwen3", "gemma2", "deepseek_v3", "qwen3_moe", "mixtral"):
    _case("%s_bf16mixed_flash" % _fam, FAMILIES[_fam], precision="bf16-mixed", attention="flash",
          seq_len=SEQ.get(_fam, 256))
# bf16-mixed + SDPA for families first measured only in fp32 (same shapes as their fp32 cases)
for _fam in ("gemma3_text", "olmo2", "phi3", "mistral", "starcoder2", "gpt2", "cohere", "granite", "gpt_neox",
             "falcon"):
    _case("%s_bf16mixed_flash" % _fam, FAMILIES[_fam], precision="bf16-mixed", attention="flash",
          seq_len=SEQ.get(_fam, 256))
_case("llama_bf16mixed_eager", FAMILIES["llama"], precision="bf16-mixed")
# sequence / batch sweeps (s^2 vs s terms)
_case("llama_fp32_eager_s128", FAMILIES["llama"], seq_len=128)
_case("llama_fp32_eager_s512", FAMILIES["llama"], seq_len=512)
_case("llama_fp32_eager_b4_s128", FAMILIES["llama"], seq_len=128, micro_batch=4)
_case("llama_fp32_flash_s512", FAMILIES["llama"], seq_len=512, attention="flash")
_case("qwen3_moe_fp32_eager_s256", FAMILIES["qwen3_moe"], seq_len=256)
# gpt_oss has no SDPA path (attention sinks): its bf16 case is eager
_case("gpt_oss_bf16mixed_eager", FAMILIES["gpt_oss"], precision="bf16-mixed", seq_len=SEQ["gpt_oss"])


# --------------------------------------------------------------------------
# Model construction
# --------------------------------------------------------------------------

def _dropout_fields(config):
    """(name -> value) of every dropout probability of a config (incl. mpt's attn_config)."""
    out = {}
    for k, v in config.to_dict().items():
        if ("drop" in k) and isinstance(v, (int, float)) and not isinstance(v, bool) and k != "layerdrop":
            out[k] = float(v)
    ac = getattr(config, "attn_config", None)
    if ac is not None:
        d = ac if isinstance(ac, dict) else ac.to_dict()
        if "attn_pdrop" in d:
            out["attn_config.attn_pdrop"] = float(d["attn_pdrop"])
    return out


def finalize_hf(case):
    """The exact dict passed to AutoConfig.for_model: dropout fields written out explicitly."""
    hf = copy.deepcopy(case["hf"])
    cfg = AutoConfig.for_model(**hf)
    for k, v in _dropout_fields(cfg).items():
        if k.startswith("attn_config."):
            continue
        if k not in hf:
            hf[k] = 0.0 if not case["keep_dropout"] else v
        elif not case["keep_dropout"]:
            hf[k] = 0.0
    return hf


def build(case):
    cfg = case["config"]
    hf = case["hf_final"]
    config = AutoConfig.for_model(**copy.deepcopy(hf))
    config.use_cache = False
    impl = "sdpa" if cfg["attention"] == "flash" else "eager"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=impl, dtype=torch.float32)
    model.float()
    ft = cfg["finetune"]
    if isinstance(ft, dict) and ft.get("method") == "lora":
        from peft import LoraConfig, get_peft_model
        lc = LoraConfig(r=ft["rank"], lora_alpha=ft.get("alpha", 16), lora_dropout=0.0,
                        target_modules=list(ft["targets"]), bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(model, lc)
    model.train()
    return model, config


def runtime_info(model, config, case):
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    c = base.config
    info = {"attn_implementation": getattr(c, "_attn_implementation", None),
            "experts_implementation": getattr(c, "_experts_implementation", None),
            "dropout": _dropout_fields(c),
            "model_class": type(base).__name__,
            "use_cache": c.use_cache,
            "labels": "input_ids.clone()",
            "adamw": {"lr": 1e-3, "weight_decay": 0.01, "foreach": False}}
    if hasattr(c, "output_router_logits"):
        info["output_router_logits"] = bool(c.output_router_logits)
        info["router_aux_loss_coef"] = getattr(c, "router_aux_loss_coef", None)
    for k in ("layer_types", "moe_layers", "mlp_only_layers", "no_rope_layers", "router_jitter_noise",
              "input_jitter_noise"):
        if getattr(c, k, None) is not None:
            info[k] = getattr(c, k)
    ft = case["config"]["finetune"]
    if isinstance(ft, dict):
        info["lora"] = {"r": ft["rank"], "lora_alpha": ft.get("alpha", 16), "lora_dropout": 0.0,
                        "target_modules": ft["targets"], "peft": _ver("peft")}
    return info


def _ver(mod):
    try:
        return __import__(mod).__version__
    except Exception:
        return None


def make_batch(case):
    g = torch.Generator().manual_seed(1)
    b, s = case["config"]["micro_batch"], case["config"]["seq_len"]
    input_ids = torch.randint(0, case["hf_final"]["vocab_size"], (b, s), generator=g)
    return input_ids, input_ids.clone()


def autocast_ctx(cfg):
    if cfg["precision"] == "bf16-mixed":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def decoder_layers(model):
    """The ModuleList of decoder layers (largest ModuleList whose items have parameters)."""
    best = None
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) > 0 and name.split(".")[-1] in ("layers", "h", "blocks"):
            if best is None or len(m) > len(best[1]):
                best = (name, m)
    return best


# --------------------------------------------------------------------------
# Accounting helpers
# --------------------------------------------------------------------------

def persistent_tensors(model, opt, batch):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    for st in opt.state.values():
        ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    return ts + list(batch)


def step_counter_bytes(opt):
    n = 0
    for st in opt.state.values():
        v = st.get("step")
        if isinstance(v, torch.Tensor):
            n += v.numel() * v.element_size()
    return n


# --------------------------------------------------------------------------
# Saved-tensor tracing
# --------------------------------------------------------------------------

class SavedTracer(BlockSavedTracer):
    def __init__(self, model):
        lm = decoder_layers(model)
        super().__init__(lm[1] if lm else [])

    def walk(self, loss):
        super().walk(loss, custom_saved=True)


# --------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------

def run_case(case, steps=3, trace=False, out=sys.stdout):
    from torch.profiler import profile, ProfilerActivity, record_function
    cfg = case["config"]
    torch.manual_seed(0)
    tracer = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("setup"):
            model, config = build(case)
            params = [p for p in model.parameters() if p.requires_grad]
            opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, foreach=False)
            batch = make_batch(case)
        torch.manual_seed(2)
        for i in range(steps):
            opt.zero_grad(set_to_none=True)
            gc.collect()
            last = i == steps - 1
            if last:
                pers = persistent_tensors(model, opt, batch)
                step_start = live_tensor_bytes(pers)
                persistent_ptrs = {_storage(t)[0] for t in pers if isinstance(t, torch.Tensor)}
                if trace:
                    tracer = SavedTracer(model)
            hooks = tracer.hooks() if (trace and last) else contextlib.nullcontext()
            with record_function("step%d" % i):
                with record_function("phase:forward"):
                    with autocast_ctx(cfg), hooks:
                        outputs = model(input_ids=batch[0], labels=batch[1])
                    loss = outputs.loss
                    del outputs  # HF Trainer.compute_loss returns only the loss
                if trace and last:
                    tracer.walk(loss)
                with record_function("phase:backward"):
                    loss.backward()
                with record_function("phase:optimizer"):
                    opt.step()
            if last:
                end_bytes = live_tensor_bytes(persistent_tensors(model, opt, batch) + [loss])
                loss_value = float(loss)
            del loss
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    t0, t1 = step_node.start_time_ns, step_node.end_time_ns
    in_step, live0, cum_at_start, cum = step_window(allocs, t0, t1)
    if cum_at_start is None:
        cum_at_start = cum
    cur, peak, peak_i, phase_peak, phase_op, phase_end, _ = step_peaks(in_step, ("forward", "backward", "optimizer"))
    pk = in_step[peak_i]
    tot, tr = count_params(model)
    measured = {
        "peak_allocated_bytes": step_start + peak,
        "step_start_bytes": step_start,
        "forward_peak_bytes": step_start + phase_peak["forward"],
        "backward_peak_bytes": step_start + phase_peak["backward"],
        "optimizer_peak_bytes": step_start + phase_peak["optimizer"],
        "after_forward_bytes": step_start + phase_end.get("forward", 0),
        "forward_peak_op": _opname(phase_op.get("forward")),
        "backward_peak_op": _opname(phase_op.get("backward")),
        "optimizer_peak_op": _opname(phase_op.get("optimizer")),
        "peak_phase": _describe(pk)[0],
        "peak_op": _opname(pk),
        "params_total": tot,
        "params_trainable": tr,
        "optimizer_step_counter_bytes": step_counter_bytes(opt),
        "loss": round(loss_value, 6),
    }
    check = {"profiler_step_start_bytes": cum_at_start, "step_net_bytes": cur,
             "tensor_end_minus_start": end_bytes - step_start}
    extra = [(n.extra_fields.alloc_size, " < ".join(a.name for a in _ancestors(n))[:200])
             for p, n in live0.items() if p not in persistent_ptrs]
    if extra:  # live at the step start but not a parameter/buffer/optimizer state/batch tensor
        check["unaccounted_at_start"] = extra
    info = runtime_info(model, config, case)
    if trace:
        print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out)
        tracer.remove()
    return measured, check, info


TRACE_LEGEND = """\
measure_hf.py --trace   (torch %s, transformers %s, CPU; regenerate: see HF_MEASUREMENTS.md)
Per case:
  header      peak = step_start + rise, [phase: op (autograd node)] at the peak; phase peaks; after_fwd =
              live bytes when the forward returned (outputs dropped, loss kept).
  live at the peak   every block allocated during the measured step and still alive at the peak, grouped by
              (phase, autograd node that was running, innermost aten op that allocated it): total bytes,
              count, then dtype(shape) when the block is the storage of a tensor saved for backward
              (shape of the saved view), else its size in bytes.
  saved-for-backward every storage saved by autograd during the measured forward (saved_tensors_hooks,
              deduplicated by storage; parameters, buffers and the batch are excluded), per region
              (decoder layer index, or "outside" = embeddings, final norm, lm_head, loss), then the full list
              for the LAST decoder layer and for "outside" in forward order:
                storage bytes, dtype, shape of the saved view <- grad_fn that produced it ;
                autograd node.attribute(s) that keep it  (saved[i] = custom autograd.Function)
              and, for every other layer, only the lines that differ from the last layer (+ here, - there).
"""


def print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    rec = tracer.records
    groups = live_groups(in_step, peak_i, rec)
    c = case["config"]
    P("=" * 100)
    P("=== %s  (B=%d S=%d %s %s)  peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], c["micro_batch"], c["seq_len"], c["precision"], c["attention"],
        measured["peak_allocated_bytes"], step_start, measured["peak_allocated_bytes"] - step_start,
        measured["peak_phase"], measured["peak_op"]))
    P("  fwd_peak=%d (%s)  after_fwd=%d  bwd_peak=%d  opt_peak=%d" % (
        measured["forward_peak_bytes"], measured["forward_peak_op"], measured["after_forward_bytes"],
        measured["backward_peak_bytes"], measured["optimizer_peak_bytes"]))
    P("  -- live at the peak (allocated during the step), by phase / autograd node / op:")
    print_groups(P, groups, (8, 34, 28))
    # saved-for-backward
    print_saved_by_block(P, rec, persistent_ptrs, tracer, "layer", "decoder layer", "during the forward")


# --------------------------------------------------------------------------
# Activation table
# --------------------------------------------------------------------------

ACT_NAMES = ["silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_python_tanh", "gelu_fast",
             "quick_gelu", "gelu_python", "gelu_accurate", "gelu_10", "relu", "relu2", "relu6", "leaky_relu",
             "tanh", "sigmoid", "mish", "laplace", "hardswish", "sqrtsoftplus", "xielu", "prelu", "linear"]


def measure_activations():
    from torch.profiler import profile, ProfilerActivity, record_function
    from transformers.activations import ACT2FN, ACT2CLS
    names = [n for n in ACT_NAMES if n in ACT2CLS] + [n for n in ACT2CLS if n not in ACT_NAMES]
    N = 1 << 18
    res = OrderedDict()
    for name in names:
        entry = OrderedDict()
        try:
            mod = ACT2FN[name]
        except Exception as e:  # noqa: BLE001
            res[name] = {"error": repr(e)}
            continue
        entry["module"] = type(mod).__name__
        for dname, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            try:
                m = copy.deepcopy(mod).to(dt)
                torch.manual_seed(0)
                leaf = torch.randn(N, dtype=dt, requires_grad=True)
                x = leaf * 1.0  # produced by an op: not a leaf
                xb = x.untyped_storage().nbytes()
                saved = {}

                def pack(t):
                    ptr, nb = _storage(t)
                    saved[ptr] = nb
                    return t

                with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                    with record_function("fwd"):
                        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                            y = m(x)
                        g = torch.ones_like(y)
                    with record_function("bwd"):
                        (gx,) = torch.autograd.grad(y, x, g)
                yptr = _storage(y)[0]
                xptr = _storage(x)[0]
                params = {_storage(p)[0] for p in m.parameters()}
                saved_bytes = sum(nb for p, nb in saved.items() if p not in params)
                tree = prof.profiler.kineto_results.experimental_event_tree()
                bwd = [r for r in tree if r.name == "bwd"][0]
                cur = pk = base = 0
                for n in _alloc_nodes(tree):
                    if n.start_time_ns < bwd.start_time_ns:
                        base = cur = cur + n.extra_fields.alloc_size
                        continue
                    cur += n.extra_fields.alloc_size
                    pk = max(pk, cur - base)
                entry[dname] = OrderedDict([
                    ("saved", round(saved_bytes / xb, 3)),
                    ("saves_input", xptr in saved),
                    ("saves_output", yptr in saved),
                    ("output_dtype", str(y.dtype).replace("torch.", "")),
                    ("backward_peak_extra", round(pk / xb, 3)),
                ])
                del y, g, gx, x, leaf
            except Exception as e:  # noqa: BLE001
                entry[dname] = {"error": repr(e)[:200]}
        res[name] = entry
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "numel": N,
            "notes": "x = leaf * 1.0 (not a leaf, requires grad). saved: unique storages kept by the "
                     "activation's autograd nodes (saved_tensors_hooks, parameters excluded), in units of "
                     "x's bytes (includes x itself when saved). backward_peak_extra: highest rise of live "
                     "CPU bytes during torch.autograd.grad(y, x, grad_out) with grad_out preallocated, in "
                     "units of x's bytes; includes the returned grad_x (1.0) and excludes the saved tensors "
                     "(already alive).",
            "activations": res}


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--trace", action="store_true", help="print live set at the peak + saved tensors")
    ap.add_argument("--trace-out", default=None, help="write the trace to this file instead of stdout")
    ap.add_argument("--activations", default=None, help="also write the activation table (JSON) here")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    tout = open(args.trace_out, "w") if args.trace_out else sys.stdout
    if args.trace:
        print(TRACE_LEGEND % (torch.__version__, transformers.__version__), file=tout)
    records, failures = [], []
    t_all = time.time()
    for c in cases:
        t = time.time()
        try:
            c["hf_final"] = finalize_hf(c)
            measured, check, info = run_case(c, steps=args.steps, trace=args.trace, out=tout)
        except Exception as e:  # noqa: BLE001
            msg = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            failures.append((c["name"], msg))
            print("%-36s FAILED %s" % (c["name"], msg), flush=True)
            continue
        if check["profiler_step_start_bytes"] != measured["step_start_bytes"] or \
                check["step_net_bytes"] != check["tensor_end_minus_start"]:
            print("WARNING %s: accounting mismatch %r vs step_start %d" %
                  (c["name"], check, measured["step_start_bytes"]), file=sys.stderr)
        config = dict(c["config"])
        config["model"] = {"hf_config": c["hf_final"]}
        rec = OrderedDict([("name", c["name"]), ("config", config), ("measured", measured), ("hf", info),
                           ("check", check), ("torch", torch.__version__),
                           ("transformers", transformers.__version__), ("device", "cpu"),
                           ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])
        records.append(rec)
        m = measured
        print("%-36s peak=%10d start=%9d fwd=%10d bwd=%10d opt=%10d %-8s %s (%.1fs)" % (
            c["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m["forward_peak_bytes"],
            m["backward_peak_bytes"], m["optimizer_peak_bytes"], m["peak_phase"], m["peak_op"],
            time.time() - t), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    if args.activations:
        t = time.time()
        table = measure_activations()
        with open(args.activations, "w") as f:
            json.dump(table, f, indent=1)
            f.write("\n")
        print("activations: %d entries (%.1fs)" % (len(table["activations"]), time.time() - t))
    if args.trace_out:
        tout.close()
    print("total %.1fs, %d cases, %d failed" % (time.time() - t_all, len(records), len(failures)),
          file=sys.stderr)
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)


if __name__ == "__main__":
    main()
