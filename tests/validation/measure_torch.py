#!/usr/bin/env python3
"""Measure the peak memory of one LLM training step in plain PyTorch.

Ground truth for vramcalc.  Each case is a vramcalc configuration (the flat
JSON the estimator reads, always with an explicit ``model`` architecture
object).  The script builds a decoder-only transformer that has exactly the
tensors of the current Hugging Face ``transformers`` implementations
(``modeling_llama.py`` for rmsnorm/swiglu/rope models, ``modeling_gpt2.py``
for layernorm/gelu_new/learned-position models, ``loss_utils.ForCausalLMLoss``
for the loss), runs ``--steps`` (default 3) training steps and measures the
LAST one (optimizer states exist), from the start of the step (after
``zero_grad(set_to_none=True)``: no grads alive) to after ``optimizer.step()``.

Training-loop choice: the model's forward returns ONLY the loss; the logits
are a local of the forward and die when it returns (as with HF Trainer, whose
``compute_loss`` drops the ``outputs`` object before ``backward``).  Whatever
autograd saved (the fp32 log-softmax output) stays alive, the logits
themselves do not.

How the CPU measurement works (``--device cpu``)
-------------------------------------------------
The run is executed under ``torch.profiler.profile(profile_memory=True)``.
With memory profiling on, c10's default CPU allocator reports EVERY
allocation and free (pointer, exact requested byte count) to the profiler;
``kineto_results.experimental_event_tree()`` gives them in order with ns
timestamps and the op (tree parent) that made them.  Summing the signed
byte counts in order gives the exact live-tensor-byte curve.  A tensor
storage is one allocation of exactly ``numel*itemsize`` bytes, so this is
the same request sequence the CUDA caching allocator would see for the same
op sequence:

* ``step_start_bytes`` is computed from the tensors themselves (unique
  storages of parameters, buffers, optimizer states, grads (None here),
  input_ids, labels) and cross-checked against the profiler's running
  total at the same instant (model construction happens inside the profile
  session, so the profiler sees every persistent allocation).
* ``peak_allocated_bytes`` = step_start_bytes + max of the cumulative
  allocation curve during the step.  This corresponds to
  ``torch.cuda.max_memory_allocated()`` EXCEPT that the CUDA caching
  allocator rounds every block up to a multiple of 512 bytes (and small
  requests to >= 512 B), so a CUDA figure is slightly larger; and the
  reserved (segment) memory, fragmentation, cuBLAS workspaces and the CUDA
  context are not visible here at all.
* CPU kernels may allocate differently from CUDA kernels (see README):
  e.g. dropout on CPU materialises a mask of the INPUT dtype (input*noise)
  where CUDA's fused native_dropout keeps a 1-byte bool mask; optimizer
  ``step`` counters are CPU scalar tensors (they are counted here, 4 B per
  parameter tensor, but on CUDA they live in host memory unless
  capturable/fused); checkpointing stores a CPU RNG state (5056 B) per
  checkpointed call.

Options: ``--only NAME`` (repeatable, substring match), ``--trace`` prints,
for each case, the composition of the live set at the peak (every live
block grouped by the op / autograd node that allocated it) and the list of
saved-for-backward tensors of one layer.

``--device cuda`` is a separate simple path (untested on this machine): it
uses torch.cuda.reset_peak_memory_stats / max_memory_allocated /
max_memory_reserved around the last step and ``torch.cuda.mem_get_info``
for the context size; ``attention: "flash"`` uses
F.scaled_dot_product_attention, AdamW is fused when available.
"""
import argparse
import contextlib
import datetime
import gc
import json
import math
import sys
import time
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

# --------------------------------------------------------------------------
# Case matrix
# --------------------------------------------------------------------------

LLAMA_GQA = {"layers": 2, "hidden": 128, "heads": 4, "kv_heads": 2, "ffn": 352, "vocab": 2000,
             "mlp": "swiglu", "norm": "rmsnorm", "bias": False, "tied_embeddings": False,
             "position": "rope", "max_positions": 512, "dropout": 0.0}
LLAMA_MHA = dict(LLAMA_GQA, layers=3, hidden=192, heads=6, kv_heads=6, ffn=512, vocab=6000,
                 tied_embeddings=True)
GPT2_DROP = {"layers": 2, "hidden": 128, "heads": 4, "kv_heads": 4, "ffn": 512, "vocab": 3000,
             "mlp": "gelu", "norm": "layernorm", "bias": True, "tied_embeddings": True,
             "position": "learned", "max_positions": 512, "dropout": 0.1,
             "family": "gpt2", "activation": "gelu_new"}
GPT2_NODROP = dict(GPT2_DROP, layers=3, hidden=96, heads=4, kv_heads=4, ffn=384, vocab=1000,
                   dropout=0.0, tied_embeddings=False)

BASE = {"seq_len": 128, "micro_batch": 2, "grad_accum": 1, "precision": "32-true",
        "optimizer": "adamw", "optimizer_impl": "single-tensor", "finetune": "full",
        "checkpointing": "none", "attention": "eager", "strategy": "single", "gpus": 1,
        "gpu": {"name": "cpu", "memory_gib": 1000}}


def _case(name, model, **kw):
    cfg = dict(BASE)
    cfg["model"] = model
    cfg.update(kw)
    return {"name": name, "config": cfg}


LORA_LLAMA = {"method": "lora", "rank": 8, "targets": ["q_proj", "v_proj"]}
LORA_GPT2 = {"method": "lora", "rank": 8, "targets": ["c_attn"]}

CASES = [
    # llama-style, GQA (kv_heads < heads), untied
    _case("llama_gqa_fp32_adamw", LLAMA_GQA),
    _case("llama_gqa_fp32_adamw_foreach", LLAMA_GQA, optimizer_impl="foreach"),
    _case("llama_gqa_fp32_sgdm", LLAMA_GQA, optimizer="sgd-momentum"),
    _case("llama_gqa_fp32_ckpt", LLAMA_GQA, checkpointing="full"),
    _case("llama_gqa_bf16true_adamw", LLAMA_GQA, precision="bf16-true"),
    _case("llama_gqa_bf16true_adamw_foreach", LLAMA_GQA, precision="bf16-true", optimizer_impl="foreach"),
    _case("llama_gqa_bf16mixed_adamw", LLAMA_GQA, precision="bf16-mixed"),
    _case("llama_gqa_bf16mixed_ckpt", LLAMA_GQA, precision="bf16-mixed", checkpointing="full"),
    _case("llama_gqa_fp32_lora", LLAMA_GQA, finetune=LORA_LLAMA),
    _case("llama_gqa_bf16true_lora", LLAMA_GQA, precision="bf16-true", finetune=LORA_LLAMA),
    _case("llama_gqa_fp32_lora_ckpt", LLAMA_GQA, finetune=LORA_LLAMA, checkpointing="full"),
    # llama-style, MHA, tied
    _case("llama_mha_tied_fp32_adamw", LLAMA_MHA),
    _case("llama_mha_tied_bf16mixed_foreach", LLAMA_MHA, precision="bf16-mixed", optimizer_impl="foreach"),
    _case("llama_mha_tied_fp32_ckpt", LLAMA_MHA, checkpointing="full", micro_batch=4),
    # gpt2-style with dropout, tied
    _case("gpt2_drop_fp32_adamw", GPT2_DROP),
    _case("gpt2_drop_fp32_adamw_foreach", GPT2_DROP, optimizer_impl="foreach"),
    _case("gpt2_drop_fp32_sgdm", GPT2_DROP, optimizer="sgd-momentum"),
    _case("gpt2_drop_fp32_ckpt", GPT2_DROP, checkpointing="full"),
    _case("gpt2_drop_bf16true_adamw", GPT2_DROP, precision="bf16-true"),
    _case("gpt2_drop_bf16mixed_adamw", GPT2_DROP, precision="bf16-mixed"),
    _case("gpt2_drop_fp32_lora", GPT2_DROP, finetune=LORA_GPT2),
    # gpt2-style without dropout, untied
    _case("gpt2_nodrop_untied_fp32_adamw", GPT2_NODROP),
    _case("gpt2_nodrop_untied_bf16mixed_ckpt", GPT2_NODROP, precision="bf16-mixed", checkpointing="full"),
    _case("gpt2_nodrop_untied_bf16true_sgdm", GPT2_NODROP, precision="bf16-true", optimizer="sgd-momentum"),
]
# activation-dominated (small vocab, long sequence): the logits no longer dominate
LLAMA_SMALLV = dict(LLAMA_GQA, layers=4, vocab=256)
GPT2_SMALLV = dict(GPT2_DROP, layers=4, vocab=256)
CASES += [
    _case("llama_gqa_smallV_fp32_adamw_b4_s256", LLAMA_SMALLV, micro_batch=4, seq_len=256),
    _case("llama_gqa_smallV_bf16mixed_ckpt_b4_s256", LLAMA_SMALLV, micro_batch=4, seq_len=256,
          precision="bf16-mixed", checkpointing="full"),
    _case("llama_gqa_smallV_bf16true_foreach_b4_s256", LLAMA_SMALLV, micro_batch=4, seq_len=256,
          precision="bf16-true", optimizer_impl="foreach"),
    _case("gpt2_drop_smallV_fp32_adamw_b4_s256", GPT2_SMALLV, micro_batch=4, seq_len=256),
    _case("gpt2_drop_smallV_fp32_ckpt_b4_s256", GPT2_SMALLV, micro_batch=4, seq_len=256, checkpointing="full"),
    _case("gpt2_drop_smallV_bf16mixed_b4_s256", GPT2_SMALLV, micro_batch=4, seq_len=256, precision="bf16-mixed"),
]
# gradient accumulation: the first micro-batch's gradients stay through the second's forward and backward
CASES += [
    _case("llama_gqa_fp32_adamw_ga2", LLAMA_GQA, grad_accum=2),
    _case("gpt2_drop_bf16mixed_ga2", GPT2_DROP, precision="bf16-mixed", grad_accum=2),
    _case("llama_gqa_smallV_fp32_ga2_b4_s256", LLAMA_SMALLV, micro_batch=4, seq_len=256, grad_accum=2),
]
# micro-batch sweep (seq 128) and sequence sweep (batch 2) on llama_gqa fp32 adamw
for _b in (1, 2, 4, 8):
    CASES.append(_case("sweep_llama_gqa_fp32_b%d_s128" % _b, LLAMA_GQA, micro_batch=_b))
for _s in (64, 256):  # s=128 is sweep_llama_gqa_fp32_b2_s128 above
    CASES.append(_case("sweep_llama_gqa_fp32_b2_s%d" % _s, LLAMA_GQA, seq_len=_s))

# --------------------------------------------------------------------------
# Model (mirrors HF transformers tensor-for-tensor)
# --------------------------------------------------------------------------


class Conv1D(nn.Module):
    """transformers.pytorch_utils.Conv1D (weight is [in, out], addmm)."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class LoraWrap(nn.Module):
    """peft.tuners.lora.Linear forward: base(x) + B(A(x)) * scaling.

    Adapter dtype: PEFT's get_peft_model(autocast_adapter_dtype=True) (the
    default) keeps adapters in fp32 even when the base model is bf16/fp16; the
    input is then cast to the adapter dtype (``_cast_input_dtype``).  We do
    the same (adapters are created fp32 and are excluded from .to(bf16)).
    """

    def __init__(self, base, in_f, out_f, rank, alpha=16):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(in_f, rank, bias=False)
        self.lora_B = nn.Linear(rank, out_f, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / rank

    def forward(self, x):
        result = self.base_layer(x)
        torch_result_dtype = result.dtype
        if x.dtype != self.lora_A.weight.dtype:
            x = x.to(self.lora_A.weight.dtype)
        result = result + self.lora_B(self.lora_A(x)) * self.scaling
        result = result.to(torch_result_dtype)
        return result


class LlamaRMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = 1.0

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        with _autocast_off(x.device.type):
            freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos = emb.cos() * self.attention_scaling
            sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def _autocast_off(device_type):
    return torch.autocast(device_type=device_type, enabled=False)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def llama_eager_attention(module, query, key, value, attention_mask, scaling, dropout=0.0):
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = F.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


def gpt2_eager_attention(module, query, key, value, attention_mask):
    attn_weights = torch.matmul(query, key.transpose(-1, -2))
    attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype,
                                             device=attn_weights.device)
    if attention_mask is not None:
        causal_mask = attention_mask[:, :, :, : key.shape[-2]]
        attn_weights = attn_weights + causal_mask
    attn_weights = F.softmax(attn_weights, dim=-1)
    attn_weights = attn_weights.type(value.dtype)
    attn_weights = module.attn_dropout(attn_weights)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2)
    return attn_output, attn_weights


def sdpa_attention(module, query, key, value, dropout):
    key = repeat_kv(key, module.num_key_value_groups)
    value = repeat_kv(value, module.num_key_value_groups)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout, is_causal=True)
    return out.transpose(1, 2).contiguous(), None


class LlamaAttention(nn.Module):
    def __init__(self, a, cfg, impl):
        super().__init__()
        h, nh, kv = a["hidden"], a["heads"], a["kv_heads"]
        self.head_dim = h // nh
        self.num_key_value_groups = nh // kv
        self.scaling = self.head_dim ** -0.5
        self.attention_dropout = a.get("dropout", 0.0)
        bias = a.get("bias", False)
        self.q_proj = nn.Linear(h, nh * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(h, kv * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(h, kv * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(nh * self.head_dim, h, bias=bias)
        self.impl = impl

    def forward(self, hidden_states, position_embeddings, attention_mask):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
        dropout = 0.0 if not self.training else self.attention_dropout
        if self.impl == "flash":
            attn_output, _ = sdpa_attention(self, query_states, key_states, value_states, dropout)
        else:
            attn_output, _ = llama_eager_attention(self, query_states, key_states, value_states,
                                                   attention_mask, self.scaling, dropout)
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        return self.o_proj(attn_output)


class LlamaMLP(nn.Module):
    def __init__(self, a):
        super().__init__()
        h, f = a["hidden"], a["ffn"]
        bias = a.get("bias", False)
        self.gate_proj = nn.Linear(h, f, bias=bias)
        self.up_proj = nn.Linear(h, f, bias=bias)
        self.down_proj = nn.Linear(f, h, bias=bias)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, a, cfg, impl):
        super().__init__()
        self.self_attn = LlamaAttention(a, cfg, impl)
        self.mlp = LlamaMLP(a)
        self.input_layernorm = LlamaRMSNorm(a["hidden"])
        self.post_attention_layernorm = LlamaRMSNorm(a["hidden"])

    def forward(self, hidden_states, attention_mask, cos, sin):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, (cos, sin), attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        return hidden_states


def eager_causal_mask(b, s, dtype, device):
    """masking_utils.eager_mask: bool causal mask (expanded over batch) turned
    into an additive float mask of shape (b, 1, s, s) in the model dtype."""
    idx = torch.arange(s, device=device)
    causal = (idx.reshape(1, -1) <= idx.reshape(-1, 1))[None, None, :, :].expand(b, -1, -1, -1)
    min_dtype = torch.finfo(dtype).min
    return torch.where(causal, torch.tensor(0.0, device=device, dtype=dtype), min_dtype)


def for_causal_lm_loss(logits, labels, vocab_size, ignore_index=-100):
    """transformers.loss.loss_utils.ForCausalLMLoss (num_items_in_batch=None)."""
    logits = logits.float()
    labels = labels.to(logits.device)
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


class CausalLM(nn.Module):
    """LlamaForCausalLM or GPT2LMHeadModel depending on the architecture."""

    def __init__(self, a, cfg, impl="eager"):
        super().__init__()
        self.a = a
        self.impl = impl
        self.ckpt = cfg.get("checkpointing", "none") == "full"
        h, V = a["hidden"], a["vocab"]
        self.gpt2 = a.get("norm") == "layernorm"
        if self.gpt2:
            self.wte = nn.Embedding(V, h)
            self.wpe = nn.Embedding(a["max_positions"], h)
            self.drop = nn.Dropout(a.get("dropout", 0.0))
            self.h = nn.ModuleList([GPT2Block(a, impl) for _ in range(a["layers"])])
            self.ln_f = nn.LayerNorm(h, eps=1e-5)
            self.lm_head = nn.Linear(h, V, bias=False)
            if a.get("tied_embeddings", True):
                self.lm_head.weight = self.wte.weight
        else:
            self.embed_tokens = nn.Embedding(V, h)
            self.layers = nn.ModuleList([LlamaDecoderLayer(a, cfg, impl) for _ in range(a["layers"])])
            self.norm = LlamaRMSNorm(h)
            self.rotary_emb = LlamaRotaryEmbedding(h // a["heads"])
            self.lm_head = nn.Linear(h, V, bias=False)
            if a.get("tied_embeddings", False):
                self.lm_head.weight = self.embed_tokens.weight

    def _layer(self, layer, *args):
        if self.ckpt and self.training:
            return torch.utils.checkpoint.checkpoint(layer, *args, use_reentrant=False)
        return layer(*args)

    def forward(self, input_ids, labels):
        b, s = input_ids.shape
        cache_position = torch.arange(0, s, device=input_ids.device)
        position_ids = cache_position.unsqueeze(0)
        if self.gpt2:
            inputs_embeds = self.wte(input_ids)
            position_embeds = self.wpe(position_ids)
            hidden_states = inputs_embeds + position_embeds
            del inputs_embeds, position_embeds
            hidden_states = self.drop(hidden_states)
            mask = None if self.impl == "flash" else eager_causal_mask(b, s, hidden_states.dtype, hidden_states.device)
            for blk in self.h:
                hidden_states = self._layer(blk, hidden_states, mask)
            hidden_states = self.ln_f(hidden_states)
        else:
            hidden_states = self.embed_tokens(input_ids)
            mask = None if self.impl == "flash" else eager_causal_mask(b, s, hidden_states.dtype, hidden_states.device)
            cos, sin = self.rotary_emb(hidden_states, position_ids)
            for layer in self.layers:
                hidden_states = self._layer(layer, hidden_states, mask, cos, sin)
            hidden_states = self.norm(hidden_states)
        logits = self.lm_head(hidden_states)
        del hidden_states
        return for_causal_lm_loss(logits, labels, self.a["vocab"])


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, a, impl):
        super().__init__()
        h = a["hidden"]
        self.num_heads = a["heads"]
        self.head_dim = h // self.num_heads
        self.split_size = h
        self.num_key_value_groups = 1
        self.c_attn = Conv1D(3 * h, h)
        self.c_proj = Conv1D(h, h)
        self.attn_dropout = nn.Dropout(a.get("dropout", 0.0))
        self.resid_dropout = nn.Dropout(a.get("dropout", 0.0))
        self.impl = impl

    def forward(self, hidden_states, attention_mask):
        query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)
        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)
        if self.impl == "flash":
            p = self.attn_dropout.p if self.training else 0.0
            attn_output, _ = sdpa_attention(self, query_states, key_states, value_states, p)
        else:
            attn_output, _ = gpt2_eager_attention(self, query_states, key_states, value_states, attention_mask)
        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)
        return attn_output


class GPT2MLP(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.c_fc = Conv1D(a["ffn"], a["hidden"])
        self.c_proj = Conv1D(a["hidden"], a["ffn"])
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(a.get("dropout", 0.0))

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GPT2Block(nn.Module):
    def __init__(self, a, impl):
        super().__init__()
        self.ln_1 = nn.LayerNorm(a["hidden"], eps=1e-5)
        self.attn = GPT2Attention(a, impl)
        self.ln_2 = nn.LayerNorm(a["hidden"], eps=1e-5)
        self.mlp = GPT2MLP(a)

    def forward(self, hidden_states, attention_mask):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_output = self.attn(hidden_states, attention_mask)
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states
        return hidden_states


def apply_lora(model, ft):
    targets = set(ft.get("targets", ["q_proj", "v_proj"]))
    rank = ft.get("rank", 8)
    alpha = ft.get("alpha", 16)
    for p in model.parameters():
        p.requires_grad_(False)
    for parent in list(model.modules()):
        for cname, child in list(parent.named_children()):
            if cname in targets:
                if isinstance(child, Conv1D):
                    in_f, out_f = child.weight.shape
                else:
                    out_f, in_f = child.weight.shape
                w = LoraWrap(child, in_f, out_f, rank, alpha).to(child.weight.device)
                setattr(parent, cname, w)


def build(cfg, device):
    a = cfg["model"]
    impl = cfg.get("attention", "eager")
    torch.manual_seed(0)
    model = CausalLM(a, cfg, impl)
    model.to(device)
    prec = cfg.get("precision", "32-true")
    if prec in ("bf16-true", "16-true"):
        model.to(torch.bfloat16 if prec.startswith("bf16") else torch.float16)
    ft = cfg.get("finetune", "full")
    if isinstance(ft, dict) and ft.get("method") == "lora":
        apply_lora(model, ft)  # adapters fp32 (PEFT autocast_adapter_dtype=True)
    model.train()
    return model


def make_optimizer(cfg, params, device):
    opt = cfg.get("optimizer", "adamw")
    impl = cfg.get("optimizer_impl", "single-tensor")
    if opt == "adamw":
        kw = {}
        if impl == "fused":
            kw["fused"] = True
        else:
            kw["foreach"] = impl == "foreach"
        try:
            return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, **kw)
        except (TypeError, RuntimeError):
            return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=True)
    if opt in ("sgd-momentum", "sgd"):
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9 if opt == "sgd-momentum" else 0.0,
                               foreach=impl == "foreach")
    raise SystemExit("optimizer %r not supported by this script" % opt)


def autocast_ctx(cfg, device_type):
    prec = cfg.get("precision", "32-true")
    if prec == "bf16-mixed":
        return torch.autocast(device_type=device_type, dtype=torch.bfloat16)
    if prec == "16-mixed":
        return torch.autocast(device_type=device_type, dtype=torch.float16)
    return contextlib.nullcontext()


def make_batch(cfg, device):
    g = torch.Generator().manual_seed(1)
    b, s, V = cfg["micro_batch"], cfg["seq_len"], cfg["model"]["vocab"]
    input_ids = torch.randint(0, V, (b, s), generator=g).to(device)
    labels = input_ids.clone()
    return input_ids, labels


def count_params(model):
    seen = {}
    for p in model.parameters():
        seen[id(p)] = p
    tot = sum(p.numel() for p in seen.values())
    tr = sum(p.numel() for p in seen.values() if p.requires_grad)
    return tot, tr


def live_tensor_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is None or not isinstance(t, torch.Tensor):
            continue
        st = t.storage()
        ptr = st.data_ptr()
        if ptr == 0:
            continue
        seen[ptr] = st.nbytes() if hasattr(st, "nbytes") else st.size() * st.element_size()
    return sum(seen.values())


def persistent_tensors(model, opt, batch):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    for st in opt.state.values():
        for v in st.values():
            if isinstance(v, torch.Tensor):
                ts.append(v)
    ts += list(batch)
    return ts


def step_counter_bytes(opt):
    n = 0
    for st in opt.state.values():
        v = st.get("step")
        if isinstance(v, torch.Tensor):
            n += v.numel() * v.element_size()
    return n


# --------------------------------------------------------------------------
# CPU measurement
# --------------------------------------------------------------------------

@contextlib.contextmanager
def _rf(name):
    """record_function without torch 1.13's ``self.handle = torch.zeros(1)``
    (a 4-byte tensor allocated before __enter__, which would bias the curve)."""
    h = torch.ops.profiler._record_function_enter_new(name, None)
    try:
        yield
    finally:
        if isinstance(h, torch.Tensor):
            torch.ops.profiler._record_function_exit(h)
        else:
            torch.ops.profiler._record_function_exit._RecordFunction(h)


def _alloc_nodes(tree):
    out = []
    stack = list(tree)
    while stack:
        n = stack.pop()
        if type(n.extra_fields).__name__ == "_ExtraFields_Allocation":
            out.append(n)
        stack.extend(n.children)
    out.sort(key=lambda n: (n.start_time_ns, n.id))
    return out


def _ancestors(n):
    p = n.parent
    while p is not None:
        yield p
        p = p.parent


def _describe(n):
    """(phase, innermost op, autograd node) of an allocation event."""
    phase, inner, node = None, None, None
    for p in _ancestors(n):
        nm = p.name
        if inner is None and not nm.startswith("phase:") and not nm.startswith("step"):
            inner = nm
        if node is None and nm.startswith("autograd::engine::evaluate_function: "):
            node = nm.split(": ", 1)[1]
        if nm.startswith("phase:") and phase is None:
            phase = nm.split(":", 1)[1]
    return phase, inner, node


def run_cpu(case, steps=3, trace=False):
    from torch.profiler import profile, ProfilerActivity
    record_function = _rf
    cfg = case["config"]
    torch.manual_seed(0)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("setup"):
            model = build(cfg, "cpu")
            params = [p for p in model.parameters() if p.requires_grad]
            opt = make_optimizer(cfg, params, "cpu")
            batch = make_batch(cfg, "cpu")
        saved = []
        for i in range(steps):
            opt.zero_grad(set_to_none=True)
            gc.collect()
            last = i == steps - 1
            if last:
                step_start = live_tensor_bytes(persistent_tensors(model, opt, batch))
                persistent_ptrs = {t.storage().data_ptr() for t in persistent_tensors(model, opt, batch)
                                   if isinstance(t, torch.Tensor)}
            hooks = (torch.autograd.graph.saved_tensors_hooks(_pack(saved), lambda x: x)
                     if (trace and last) else contextlib.nullcontext())
            accum = cfg.get("grad_accum", 1)
            with record_function("step%d" % i):
                for m in range(accum):  # gradient accumulation: the loss scaled as HF Trainer does
                    with record_function("phase:forward"):
                        with autocast_ctx(cfg, "cpu"), hooks:
                            loss = model(*batch)
                            if accum > 1:
                                loss = loss / accum
                    with record_function("phase:backward"):
                        loss.backward()
                    if m < accum - 1:
                        del loss
                with record_function("phase:optimizer"):
                    opt.step()
            if last:  # the loss scalar is still referenced at the end of the step
                end_bytes = live_tensor_bytes(persistent_tensors(model, opt, batch) + [loss])
            del loss
    allocs = _alloc_nodes(prof.profiler.kineto_results.experimental_event_tree())
    # locate the last step's span
    step_node = None
    for root in prof.profiler.kineto_results.experimental_event_tree():
        if root.name == "step%d" % (steps - 1):
            step_node = root
    t0, t1 = step_node.start_time_ns, step_node.end_time_ns
    cum = 0
    cum_at_start = None
    in_step = []
    for n in allocs:
        if cum_at_start is None and n.start_time_ns >= t0:
            cum_at_start = cum
        if t0 <= n.start_time_ns <= t1:
            in_step.append(n)
        cum += n.extra_fields.alloc_size
    if cum_at_start is None:
        cum_at_start = cum
    # curve within the step
    cur = 0
    peak, peak_i = 0, -1
    phase_peak = {p: 0 for p in ("forward", "backward", "optimizer")}
    phase_op = {}
    for i, n in enumerate(in_step):
        cur += n.extra_fields.alloc_size
        ph, _, _ = _describe(n)
        if ph in phase_peak and cur > phase_peak[ph]:
            phase_peak[ph] = cur
            phase_op[ph] = n
        if cur > peak:
            peak, peak_i = cur, i
    step_net = cur
    pk = in_step[peak_i]
    ph, inner, node = _describe(pk)
    peak_op = inner if node is None else "%s (%s)" % (inner, node)
    tot, tr = count_params(model)
    measured = {
        "peak_allocated_bytes": step_start + peak,
        "step_start_bytes": step_start,
        "forward_peak_bytes": step_start + phase_peak["forward"],
        "backward_peak_bytes": step_start + phase_peak["backward"],
        "optimizer_peak_bytes": step_start + phase_peak["optimizer"],
        "forward_peak_op": _opname(phase_op.get("forward")),
        "backward_peak_op": _opname(phase_op.get("backward")),
        "optimizer_peak_op": _opname(phase_op.get("optimizer")),
        "peak_phase": ph,
        "peak_op": peak_op,
        "params_total": tot,
        "params_trainable": tr,
        "optimizer_step_counter_bytes": step_counter_bytes(opt),
    }
    check = {"profiler_step_start_bytes": cum_at_start,
             "step_net_bytes": step_net,
             "tensor_end_minus_start": end_bytes - step_start}
    if trace:
        _print_trace(case, allocs, in_step, peak_i, step_start, saved, persistent_ptrs)
    return measured, check


def _opname(n):
    if n is None:
        return None
    _, inner, node = _describe(n)
    return inner if node is None else "%s (%s)" % (inner, node)


def _pack(store):
    def pack(t):
        store.append((t.shape, t.dtype, t.storage().data_ptr(), t.storage().nbytes(),
                      t.grad_fn.name() if t.grad_fn is not None else "leaf"))
        return t
    return pack


def _print_trace(case, allocs, in_step, peak_i, step_start, saved, persistent_ptrs):
    # live set at the peak: allocations (during the step) not freed before the peak
    live = {}
    for n in in_step[: peak_i + 1]:
        ef = n.extra_fields
        if ef.alloc_size > 0:
            live[ef.ptr] = n
        else:
            live.pop(ef.ptr, None)
    groups = defaultdict(lambda: [0, 0])
    for ptr, n in live.items():
        ph, inner, node = _describe(n)
        key = "%-9s %-60s %s" % (ph, (node or "-")[:60], inner)
        groups[key][0] += n.extra_fields.alloc_size
        groups[key][1] += 1
    print("=== %s: step_start=%d  peak(+)=%d  total=%d" % (case["name"], step_start,
          sum(n.extra_fields.alloc_size for n in live.values()), step_start +
          sum(n.extra_fields.alloc_size for n in live.values())))
    for key, (nb, cnt) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print("  %12d  x%-4d %s" % (nb, cnt, key))
    # saved tensors (unique storages not among persistent ones)
    seen = {}
    for shape, dt, ptr, nb, fn in saved:
        if ptr in persistent_ptrs:
            continue
        seen.setdefault(ptr, (tuple(shape), str(dt).replace("torch.", ""), nb, []))[3].append(fn)
    print("  -- saved-for-backward storages that are not persistent (forward order; producer grad_fn):"
          " total %d bytes" % sum(v[2] for v in seen.values()))
    for ptr, (shape, dt, nb, fns) in seen.items():
        print("     %10d %-8s %-22s %s" % (nb, dt, shape, ",".join(sorted(set(fns)))))


# --------------------------------------------------------------------------
# CUDA measurement (kept simple; not testable on the CPU machine)
# --------------------------------------------------------------------------

def run_cuda(case, steps=3, trace=False):
    cfg = case["config"]
    dev = "cuda"
    free0, total = torch.cuda.mem_get_info()  # initializes the context
    context_bytes = total - free0
    model = build(cfg, dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(dict(cfg, optimizer_impl=cfg.get("optimizer_impl", "fused")), params, dev)
    batch = make_batch(cfg, dev)
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        last = i == steps - 1
        if last:
            gc.collect()
            torch.cuda.synchronize()
            step_start = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        with autocast_ctx(cfg, "cuda"):
            loss = model(*batch)
        if last:
            torch.cuda.synchronize()
            fwd_peak = torch.cuda.max_memory_allocated()
        loss.backward()
        opt.step()
        del loss
    torch.cuda.synchronize()
    tot, tr = count_params(model)
    return {
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "step_start_bytes": step_start,
        "forward_peak_bytes": fwd_peak,
        "context_bytes_estimate": context_bytes,
        "params_total": tot,
        "params_trainable": tr,
    }, {}


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--out", default=None, help="JSONL output path (default: stdout only)")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--trace", action="store_true", help="print the live set at the peak")
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    if not cases:
        raise SystemExit("no case matches %r" % args.only)
    run = run_cpu if args.device == "cpu" else run_cuda
    records = []
    t_all = time.time()
    for c in cases:
        t = time.time()
        measured, check = run(c, steps=args.steps, trace=args.trace)
        if args.device == "cpu":
            if check["profiler_step_start_bytes"] != measured["step_start_bytes"] or \
                    check["step_net_bytes"] != check["tensor_end_minus_start"]:
                print("WARNING %s: accounting mismatch %r vs step_start %d" %
                      (c["name"], check, measured["step_start_bytes"]), file=sys.stderr)
        rec = {"name": c["name"], "config": c["config"], "measured": measured,
               "torch": torch.__version__, "device": args.device,
               "date": datetime.date.today().isoformat()}
        records.append(rec)
        m = measured
        print("%-40s peak=%10d start=%9d fwd=%10d bwd=%10d opt=%10d  %-9s %s  (%.1fs)" % (
            c["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m.get("forward_peak_bytes", 0),
            m.get("backward_peak_bytes", 0), m.get("optimizer_peak_bytes", 0), m.get("peak_phase"),
            m.get("peak_op"), time.time() - t), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r, sort_keys=False) + "\n")
    print("total %.1fs, %d cases" % (time.time() - t_all, len(records)), file=sys.stderr)


if __name__ == "__main__":
    main()
