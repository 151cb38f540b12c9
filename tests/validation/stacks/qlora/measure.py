#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one QLoRA training step: transformers + PEFT + bitsandbytes (CPU).

Ground truth for vramcalc's ``finetune: {"method": "qlora", "backend": "bitsandbytes", ...}``.  Each case
loads a tiny Llama (4 layers, hidden 256, vocab 2000; random weights saved once to a temporary folder,
nothing downloaded) the way a PEFT QLoRA script does:

  qlora:  AutoModelForCausalLM.from_pretrained(dir, quantization_config=BitsAndBytesConfig(load_in_4bit=True,
              bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=dq, bnb_4bit_compute_dtype=cdt),
              dtype=torch.bfloat16, attn_implementation="sdpa", device_map="cpu")
          prepare_model_for_kbit_training(model, use_gradient_checkpointing=<gc == "reentrant">)
              (freezes everything, casts every non-4-bit bf16/fp16 parameter to fp32)
  lora:   AutoModelForCausalLM.from_pretrained(dir, dtype=bf16 or fp32, attn_implementation="sdpa")
  both:   [gc == "nonreentrant": model.gradient_checkpointing_enable(), which is what HF Trainer calls for
           gradient_checkpointing=True: use_reentrant=False + enable_input_require_grads]
          get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=q/k/v/o/gate/up/down))
          (PEFT casts the adapters to fp32: autocast_adapter_dtype=True)

The step is HF Trainer's: ``outputs = model(input_ids=ids, labels=ids.clone())`` under
``torch.autocast("cpu", bfloat16)`` when precision is bf16-mixed or bf16-base-mixed (Trainer bf16=True), ``loss = outputs.loss``,
``del outputs``, ``loss.backward()``, ``AdamW(lr 1e-3, wd 0.01, foreach=False).step()``.  3 steps, the 3rd
is measured.

    build/venv-bnb/bin/python tests/validation/stacks/qlora/measure.py \
        --out tests/validation/stacks/qlora/measured.jsonl \
        --trace-out tests/validation/stacks/qlora/traces.txt

Counting is the method of tests/validation/measure_hf.py (profiler_memory.py): the whole run is profiled
with ``torch.profiler.profile(profile_memory=True)``; the running sum of c10's CPU allocation events is the
exact live-bytes curve.  ``step_start_bytes`` is computed from the tensors (parameters -- a Params4bit is its
packed uint8 storage --, the bitsandbytes QuantState tensors of every 4-bit weight (absmax, code, offset,
state2.absmax, state2.code: attributes of the parameter, neither parameters nor buffers), buffers, AdamW
states, the batch) and checked against the profiler's running total at that instant.

Saved for backward: a saved_tensors_hooks tracer (pack returns a detached alias of the same storage; it does
not allocate, checked with --no-trace) plus a wrapper around bitsandbytes' ``MatMul4Bit.forward`` that notes
what it keeps in ``ctx.tensors`` -- a plain attribute, NOT save_for_backward, so saved_tensors_hooks never see
it (and torch.utils.checkpoint cannot drop it).  Regions are the decoder layers (set around the layer's
``__call__``, so also around the checkpoint call) and "outside".

Cases with "bnb_site" run in a child process with that folder (``pip install --no-deps --target``) first on
sys.path, to measure another bitsandbytes release.  Cases with "save_A" revert bitsandbytes PR #1270 at run
time (``ctx.tensors = (A, B)`` instead of ``(None, B)``): what MatMul4Bit kept up to 0.43.1, whose wheels
cannot quantize on the CPU.
"""
import argparse
import contextlib
import copy
import datetime
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
import weakref
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))


def _early_bnb_site():
    # --bnb-site must be on sys.path before anything imports bitsandbytes (transformers does lazily)
    for i, a in enumerate(sys.argv):
        if a == "--bnb-site" and i + 1 < len(sys.argv):
            sys.path.insert(0, os.path.abspath(sys.argv[i + 1]))


_early_bnb_site()
warnings.filterwarnings("ignore")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# transformers 5 loads checkpoints in a thread pool unless quantizing on the fly; the profiler does not see
# allocations made on those threads, which breaks the step_start check of the plain LoRA cases (not the step)
os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")

import logging  # noqa: E402
logging.disable(logging.WARNING)

import torch  # noqa: E402
sys.path.append(os.path.dirname(os.path.dirname(HERE)))  # tests/validation, for profiler_memory
from profiler_memory import (  # noqa: E402
    storage as _storage, live_tensor_bytes, count_params, alloc_nodes as _alloc_nodes, ancestors as _ancestors,
    describe as _describe, opname as _opname, step_window, step_peaks, live_groups, print_groups,
    print_saved_by_block)

import transformers  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402
transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()
import bitsandbytes  # noqa: E402
from bitsandbytes.autograd import _functions as bnb_functions  # noqa: E402
import peft  # noqa: E402


from profiler_memory import package_version as _ver  # noqa: E402


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

HF = OrderedDict(model_type="llama", num_hidden_layers=4, hidden_size=256, intermediate_size=768,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=64, vocab_size=2000,
                 max_position_embeddings=512, hidden_act="silu", tie_word_embeddings=False,
                 attention_dropout=0.0, attention_bias=False, mlp_bias=False)
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
BASE = {"framework": "hf", "seq_len": 128, "micro_batch": 2, "grad_accum": 1, "optimizer": "adamw",
        "optimizer_impl": "single-tensor", "attention": "flash", "strategy": "single", "gpus": 1,
        "device": "cpu", "gpu": {"name": "cpu", "memory_gib": 1000}}
GC = {"none": "none", "nonreentrant": "full", "reentrant": "full"}

CASES = []


def _case(name, method, precision, gc="none", dq=True, compute="bf16", load="bf16", save_A=False, bnb_site=None):
    CASES.append({"name": name, "method": method, "precision": precision, "gc": gc, "double_quant": dq,
                  "compute_dtype": compute, "load_dtype": load, "save_A": save_A, "bnb_site": bnb_site})


for _gc, _sfx in (("none", ""), ("nonreentrant", "_gc")):
    # plain LoRA on the same model: bf16 weights (no autocast), and fp32 weights under bf16 autocast
    _case("lora_bf16true" + _sfx, "lora", "bf16-true", _gc, load="bf16")
    _case("lora_bf16mixed" + _sfx, "lora", "bf16-mixed", _gc, load="fp32")
    # the PEFT recipe: from_pretrained(dtype=bf16), fp32 adapters, Trainer bf16=True (autocast)
    _case("lora_bf16base_mixed" + _sfx, "lora", "bf16-base-mixed", _gc, load="bf16")
    # QLoRA, prepare_model_for_kbit_training (fp32 non-4-bit weights), Trainer bf16=True (autocast)
    _case("qlora_dq_cbf16_mixed" + _sfx, "qlora", "bf16-mixed", _gc, dq=True, compute="bf16")
    _case("qlora_nodq_cbf16_mixed" + _sfx, "qlora", "bf16-mixed", _gc, dq=False, compute="bf16")
    _case("qlora_dq_cfp32_mixed" + _sfx, "qlora", "bf16-mixed", _gc, dq=True, compute="fp32")
    # QLoRA without autocast (Trainer bf16=False): fp32 activations, bf16 or fp32 4-bit matmuls
    _case("qlora_dq_cbf16_fp32" + _sfx, "qlora", "32-true", _gc, dq=True, compute="bf16")
    _case("qlora_dq_cfp32_fp32" + _sfx, "qlora", "32-true", _gc, dq=True, compute="fp32")
    # what bitsandbytes <= 0.43.1 kept (A saved in ctx.tensors): PR #1270 reverted at run time
    _case("qlora_dq_cbf16_mixed_saveA" + _sfx, "qlora", "bf16-mixed", _gc, save_A=True)
    _case("qlora_dq_cbf16_fp32_saveA" + _sfx, "qlora", "32-true", _gc, save_A=True)
    _case("qlora_dq_cfp32_fp32_saveA" + _sfx, "qlora", "32-true", _gc, compute="fp32", save_A=True)
    # 0.41.0-0.43.1 as a whole: A saved, and Linear4bit.set_compute_type replaced the compute dtype by the
    # (fp32) input's dtype on the first forward -- the same as compute fp32 here
    _case("qlora_dq_cfp32_mixed_saveA" + _sfx, "qlora", "bf16-mixed", _gc, compute="fp32", save_A=True)
# prepare_model_for_kbit_training's own checkpointing (default kwargs {} -> torch's use_reentrant=True)
_case("qlora_dq_cbf16_mixed_gcre", "qlora", "bf16-mixed", "reentrant")
_case("qlora_dq_cbf16_mixed_saveA_gcre", "qlora", "bf16-mixed", "reentrant", save_A=True)
_case("lora_bf16true_gcre", "lora", "bf16-true", "reentrant", load="bf16")
# another bitsandbytes release (the old MatMul4Bit.forward: F.linear(A, dequantize_4bit(B).to(A.dtype).t()))
for _gc, _sfx in (("none", ""), ("nonreentrant", "_gc")):
    _case("qlora_dq_cbf16_mixed_bnb0.49.2" + _sfx, "qlora", "bf16-mixed", _gc, bnb_site="build/bnb-0.49.2")
    _case("qlora_dq_cbf16_fp32_bnb0.49.2" + _sfx, "qlora", "32-true", _gc, bnb_site="build/bnb-0.49.2")

DT = {"bf16": torch.bfloat16, "fp32": torch.float32}


def case_config(case, bnb_version):
    cfg = copy.deepcopy(BASE)
    cfg["precision"] = case["precision"]
    cfg["checkpointing"] = GC[case["gc"]]
    ft = OrderedDict([("method", case["method"]), ("rank", 8), ("targets", list(TARGETS)), ("dropout", 0)])
    if case["method"] == "qlora":
        ft["double_quant"] = case["double_quant"]
        ft["backend"] = "bitsandbytes"
        # save_A emulates an old release: 0.40.2 is the last that kept A and honoured bnb_4bit_compute_dtype for
        # fp32/bf16 inputs; 0.41.0-0.43.1 kept A but computed in the input's dtype (fp32 here)
        ft["backend_version"] = bnb_version if not case["save_A"] else (
            "0.40.2" if case["compute_dtype"] == "bf16" else "0.43.1")
    cfg["finetune"] = ft
    cfg["model"] = {"hf_config": dict(HF)}
    return cfg


# --------------------------------------------------------------------------
# Model construction
# --------------------------------------------------------------------------

def save_tiny(path):
    """The random fp32 checkpoint every case loads (seed 0)."""
    if os.path.exists(os.path.join(path, "config.json")):
        return
    config = AutoConfig.for_model(**dict(HF))
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    m.save_pretrained(path)
    del m


_ORIG_FORWARD = bnb_functions.MatMul4Bit.forward


def set_save_A(on):
    """Revert bitsandbytes PR #1270 (0.43.2): keep the 4-bit matmul's input A in ctx.tensors, as <= 0.43.1 did."""
    if not on:
        bnb_functions.MatMul4Bit.forward = _ORIG_FORWARD
        return

    def forward(ctx, A, B, out=None, bias=None, quant_state=None):
        output = _ORIG_FORWARD(ctx, A, B, out, bias, quant_state)
        if not ctx.is_empty and any(ctx.needs_input_grad[:2]):
            ctx.tensors = (A, ctx.tensors[1])
        return output
    bnb_functions.MatMul4Bit.forward = staticmethod(forward)


def build(case, path):
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    if case["method"] == "qlora":
        from transformers import BitsAndBytesConfig
        q = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=case["double_quant"],
                               bnb_4bit_compute_dtype=DT[case["compute_dtype"]])
        model = AutoModelForCausalLM.from_pretrained(path, quantization_config=q, dtype=torch.bfloat16,
                                                     attn_implementation="sdpa", device_map="cpu")
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=case["gc"] == "reentrant")
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=DT[case["load_dtype"]], attn_implementation="sdpa")
        if case["gc"] == "reentrant":  # what prepare_model_for_kbit_training does for a quantized model
            model.enable_input_require_grads()
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={})
    model.config.use_cache = False
    if case["gc"] == "nonreentrant":
        model.gradient_checkpointing_enable()  # HF Trainer, gradient_checkpointing=True
    lc = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=list(TARGETS), bias="none",
                    task_type="CAUSAL_LM")
    model = get_peft_model(model, lc)
    model.train()
    return model


def make_batch(case):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, HF["vocab_size"], (BASE["micro_batch"], BASE["seq_len"]), generator=g)
    return ids, ids.clone()


def autocast_ctx(case):
    if case["precision"] in ("bf16-mixed", "bf16-base-mixed"):
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def decoder_layers(model):
    return model.get_base_model().model.layers


# --------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------

def quant_states(model):
    """Every bitsandbytes QuantState reachable from the model (weights and modules)."""
    out = []
    for m in model.modules():
        for qs in (getattr(getattr(m, "weight", None), "quant_state", None), getattr(m, "quant_state", None)):
            if qs is not None and all(qs is not o for o in out):
                out.append(qs)
    return out


def quant_state_tensors(qs):
    ts = [qs.absmax, qs.code, getattr(qs, "offset", None)]
    if getattr(qs, "nested", False) and qs.state2 is not None:
        ts += [qs.state2.absmax, qs.state2.code]
    return [t for t in ts if isinstance(t, torch.Tensor)]


def persistent_tensors(model, opt, batch):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    for qs in quant_states(model):
        ts += quant_state_tensors(qs)
    for st in opt.state.values():
        ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    return ts + list(batch)


def param_bytes(model):
    """bytes by kind: trainable, frozen plain, frozen 4-bit (packed storage) and their QuantState tensors."""
    kinds = OrderedDict([("trainable", 0), ("frozen", 0), ("frozen_4bit_packed", 0), ("quant_state", 0)])
    seen = set()
    for p in model.parameters():
        ptr, nb = _storage(p)
        if ptr in seen:
            continue
        seen.add(ptr)
        kind = "trainable" if p.requires_grad else ("frozen_4bit_packed" if type(p).__name__ == "Params4bit"
                                                     else "frozen")
        kinds[kind] += nb
    for qs in quant_states(model):
        for t in quant_state_tensors(qs):
            ptr, nb = _storage(t)
            if ptr not in seen:
                seen.add(ptr)
                kinds["quant_state"] += nb
    return kinds


def quant_info(model):
    qss = quant_states(model)
    if not qss:
        return None
    q = qss[0]
    info = OrderedDict([("n_4bit_weights", len(qss)),
                        ("logical_params_4bit", sum(int(torch.Size(s.shape).numel()) for s in qss)),
                        ("quant_type", q.quant_type), ("blocksize", q.blocksize),
                        ("quant_state_dtype", str(q.dtype).replace("torch.", "")),
                        ("absmax_dtype", str(q.absmax.dtype).replace("torch.", "")),
                        ("nested", bool(q.nested))])
    if q.nested:
        info["state2_blocksize"] = q.state2.blocksize
    return info


def graph_leaves(loss, model):
    """Non-parameter leaves that required grad (and their .grad), still held by loss.grad_fn's AccumulateGrad
    nodes after the backward: under checkpointing, enable_input_require_grads makes the embedding output such a
    leaf, so it and its gradient live until the loss is dropped."""
    params = {id(p) for p in model.parameters()}
    out, seen, stack = [], set(), [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        v = getattr(fn, "variable", None)
        if isinstance(v, torch.Tensor) and id(v) not in params:
            out += [v, v.grad]
        stack += [n for n, _ in fn.next_functions if n is not None]
    return out


def step_counter_bytes(opt):
    n = 0
    for st in opt.state.values():
        v = st.get("step")
        if isinstance(v, torch.Tensor):
            n += v.numel() * v.element_size()
    return n


# --------------------------------------------------------------------------
# Saved-tensor tracer
# --------------------------------------------------------------------------

class SavedTracer:
    """Storages saved for backward during the measured forward, by region (decoder layer index / "outside").

    saved_tensors_hooks see what autograd saves; MatMul4Bit's ctx.tensors (a plain attribute) is noted by a
    wrapper around its forward.  Regions are set around each decoder layer's __call__ (outside the checkpoint
    call, so that a reentrant checkpoint's saved inputs belong to their layer).  Under non-reentrant
    checkpointing torch.utils.checkpoint's hooks sit above ours inside the layers: nothing autograd saves there
    is listed (the checkpoint frame keeps the layer's inputs), and walk() stops at each layer's output, since
    reading a saved tensor there would recompute the layer."""

    def __init__(self, model, stop_at_layers=False):
        self.stop_at_layers = stop_at_layers  # non-reentrant checkpointing: do not read saved tensors in layers
        self.region = "outside"
        self.records = OrderedDict()
        self.dead = []
        self.active = False
        self.stop_nodes = set()
        self.layers = list(decoder_layers(model))
        self.n_layers = len(self.layers)
        self._classes = []
        for i, layer in enumerate(self.layers):
            cls = type(layer)
            tracer = self

            def make_call(i, cls):
                def __call__(self_, *a, **k):
                    prev = tracer.region
                    tracer.region = i
                    try:
                        out = cls.__call__(self_, *a, **k)
                    finally:
                        tracer.region = prev
                    o = out[0] if isinstance(out, tuple) else out
                    if tracer.active and tracer.stop_at_layers and isinstance(o, torch.Tensor) and \
                            o.grad_fn is not None:
                        tracer.stop_nodes.add(o.grad_fn)
                    return out
                return __call__
            layer.__class__ = type("Traced" + cls.__name__, (cls,), {"__call__": make_call(i, cls)})
            self._classes.append((layer, cls))
        self._fwd = bnb_functions.MatMul4Bit.forward

        def fwd(ctx, A, B, out=None, bias=None, quant_state=None):
            output = self._fwd(ctx, A, B, out, bias, quant_state)
            if self.active:
                for j, t in enumerate(getattr(ctx, "tensors", ()) or ()):
                    if isinstance(t, torch.Tensor):
                        self._note(t, t, "ctx.tensors")
            return output
        bnb_functions.MatMul4Bit.forward = staticmethod(fwd)

    def _note(self, t, alias, how):
        ptr, nb = _storage(t)
        r = self.records.get(ptr)
        if r is None or not any(w() is not None for w in r["refs"]):
            if r is not None:
                self.dead.append(r)
            r = self.records[ptr] = {"shape": tuple(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                                     "nbytes": nb, "producer": t.grad_fn.name() if t.grad_fn is not None else
                                     ("param/leaf" if t.requires_grad else "no-grad"),
                                     "region": self.region, "keepers": [], "refs": [], "how": set()}
            self.records.move_to_end(ptr)
        r["refs"].append(weakref.ref(alias))
        r["how"].add(how)

    def pack(self, t):
        d = t.detach()
        self._note(t, d, "saved")
        return d

    @contextlib.contextmanager
    def hooks(self):
        self.active = True
        try:
            with torch.autograd.graph.saved_tensors_hooks(self.pack, lambda x: x):
                yield
        finally:
            self.active = False

    def walk(self, loss):
        for ptr in list(self.records):
            r = self.records[ptr]
            if not any(w() is not None for w in r["refs"]):
                self.dead.append(self.records.pop(ptr))
        seen, stack = set(), [loss.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            vals = []
            if fn.name() == "MatMul4BitBackward":
                for j, t in enumerate(getattr(fn, "tensors", ()) or ()):
                    vals.append(("ctx.tensors[%d]" % j, t))
            if fn not in self.stop_nodes:
                for attr in dir(fn):
                    if attr.startswith("_saved_"):
                        try:
                            vals.append((attr[7:], getattr(fn, attr)))
                        except Exception:  # noqa: BLE001
                            pass
                if hasattr(fn, "saved_tensors") and not any(a.startswith("_saved_") for a in dir(fn)):
                    try:
                        for j, t in enumerate(fn.saved_tensors):
                            vals.append(("saved[%d]" % j, t))
                    except Exception:  # noqa: BLE001
                        pass
            for attr, v in vals:
                for t in (v if isinstance(v, (list, tuple)) else [v]):
                    if isinstance(t, torch.Tensor):
                        ptr, _ = _storage(t)
                        if ptr in self.records:
                            self.records[ptr]["keepers"].append("%s.%s" % (fn.name(), attr))
            if fn in self.stop_nodes:
                continue
            for nxt, _ in fn.next_functions:
                if nxt is not None:
                    stack.append(nxt)

    def remove(self):
        for layer, cls in self._classes:
            layer.__class__ = cls
        bnb_functions.MatMul4Bit.forward = self._fwd


# --------------------------------------------------------------------------
# One case
# --------------------------------------------------------------------------

def run_case(case, path, steps=3, trace=True, out=None):
    from torch.profiler import profile, ProfilerActivity, record_function
    set_save_A(case["save_A"])
    gc.collect()
    torch.manual_seed(0)
    tracer = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("setup"):
            model = build(case, path)
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
                    tracer = SavedTracer(model, stop_at_layers=case["gc"] == "nonreentrant")
            hooks = tracer.hooks() if (trace and last) else contextlib.nullcontext()
            with record_function("step%d" % i):
                with record_function("phase:forward"):
                    with autocast_ctx(case), hooks:
                        outputs = model(input_ids=batch[0], labels=batch[1])
                    loss = outputs.loss
                    del outputs
                if trace and last:
                    tracer.walk(loss)
                with record_function("phase:backward"):
                    loss.backward()
                with record_function("phase:optimizer"):
                    opt.step()
            if last:
                end_bytes = live_tensor_bytes(persistent_tensors(model, opt, batch) + [loss] +
                                              graph_leaves(loss, model))
                loss_value = float(loss)
            del loss
    set_save_A(False)
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    in_step, live0, cum_at_start, cum = step_window(allocs, step_node.start_time_ns, step_node.end_time_ns)
    if cum_at_start is None:
        cum_at_start = cum
    cur, peak, peak_i, phase_peak, phase_op, phase_end, _ = step_peaks(in_step, ("forward", "backward", "optimizer"))
    pk = in_step[peak_i]
    tot, tr = count_params(model)
    measured = OrderedDict([
        ("peak_allocated_bytes", step_start + peak),
        ("step_start_bytes", step_start),
        ("forward_peak_bytes", step_start + phase_peak["forward"]),
        ("backward_peak_bytes", step_start + phase_peak["backward"]),
        ("optimizer_peak_bytes", step_start + phase_peak["optimizer"]),
        ("after_forward_bytes", step_start + phase_end.get("forward", 0)),
        ("forward_peak_op", _opname(phase_op.get("forward"))),
        ("backward_peak_op", _opname(phase_op.get("backward"))),
        ("optimizer_peak_op", _opname(phase_op.get("optimizer"))),
        ("peak_phase", _describe(pk)[0]),
        ("peak_op", _opname(pk)),
        ("params_total", tot),
        ("params_trainable", tr),
        ("param_bytes", param_bytes(model)),
        ("optimizer_step_counter_bytes", step_counter_bytes(opt)),
        ("loss", round(loss_value, 6)),
    ])
    qi = quant_info(model)
    if qi:
        measured["quant"] = qi
    if trace:
        rec = {p: r for p, r in tracer.records.items() if p not in persistent_ptrs}
        per = defaultdict(int)
        ctx_only = defaultdict(int)
        for r in rec.values():
            key = "layer%d" % r["region"] if isinstance(r["region"], int) else r["region"]
            per[key] += r["nbytes"]
            if r["how"] == {"ctx.tensors"}:
                ctx_only[key] += r["nbytes"]
        measured["saved_bytes"] = OrderedDict(sorted(per.items()))
        if ctx_only:
            measured["saved_only_in_matmul4bit_ctx_bytes"] = OrderedDict(sorted(ctx_only.items()))
    check = OrderedDict([("profiler_step_start_bytes", cum_at_start), ("step_net_bytes", cur),
                         ("tensor_end_minus_start", end_bytes - step_start)])
    extra = [(n.extra_fields.alloc_size, " < ".join(a.name for a in _ancestors(n))[:200])
             for p, n in live0.items() if p not in persistent_ptrs]
    if extra:
        check["unaccounted_at_start"] = extra
    if trace:
        print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out)
        tracer.remove()
    return measured, check


TRACE_LEGEND = """\
stacks/qlora/measure.py   (torch %s, transformers %s, peft %s, bitsandbytes %s, CPU)
Per case: the header (peak = step_start + rise, [phase: op (autograd node)] at the peak), the live blocks at the
peak grouped by (phase, autograd node, op) -- dtype(shape) when the block is a tensor saved for backward --,
then the saved-for-backward storages per region (decoder layer / outside), the full list for the last layer
and for "outside", and for the other layers only the lines that differ.  Keepers named
MatMul4BitBackward.ctx.tensors[0] are held by bitsandbytes' ctx.tensors (not save_for_backward).
Under non-reentrant checkpointing the layers list nothing (torch.utils.checkpoint's hooks take over there).
"""


def print_trace(case, in_step, peak_i, step_start, tracer, persistent_ptrs, measured, out):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    groups = live_groups(in_step, peak_i, tracer.records)
    P("=" * 100)
    P("=== %s  (%s %s, gc %s, compute %s, dq %s%s)  peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], case["method"], case["precision"], case["gc"], case["compute_dtype"], case["double_quant"],
        ", A saved (PR #1270 reverted)" if case["save_A"] else "",
        measured["peak_allocated_bytes"], step_start, measured["peak_allocated_bytes"] - step_start,
        measured["peak_phase"], measured["peak_op"]))
    P("  fwd_peak=%d (%s)  after_fwd=%d  bwd_peak=%d (%s)  opt_peak=%d" % (
        measured["forward_peak_bytes"], measured["forward_peak_op"], measured["after_forward_bytes"],
        measured["backward_peak_bytes"], measured["backward_peak_op"], measured["optimizer_peak_bytes"]))
    P("  param_bytes: %s" % json.dumps(measured["param_bytes"]))
    P("  -- live at the peak (allocated during the step), by phase / autograd node / op:")
    print_groups(P, groups, (8, 34, 28))
    print_saved_by_block(P, tracer.records, persistent_ptrs, tracer, "layer", "decoder layer",
                         "during the forward")


# --------------------------------------------------------------------------

def versions():
    return OrderedDict((k, _ver(k)) for k in ("torch", "transformers", "peft", "accelerate", "bitsandbytes",
                                              "safetensors", "numpy"))


def run_one(case, path, args, tout):
    t = time.time()
    measured, check = run_case(case, path, steps=args.steps, trace=not args.no_trace, out=tout)
    if check["profiler_step_start_bytes"] != measured["step_start_bytes"] or \
            check["step_net_bytes"] != check["tensor_end_minus_start"]:
        print("WARNING %s: accounting mismatch %r vs step_start %d" % (case["name"], dict(check),
                                                                      measured["step_start_bytes"]), file=sys.stderr)
    bv = bitsandbytes.__version__
    vers = versions()
    vers["bitsandbytes"] = bv  # the one imported (a --bnb-site copy is not what importlib.metadata sees)
    hf = OrderedDict([("recipe", "from_pretrained(quantization_config=BitsAndBytesConfig(...), dtype=bf16) + "
                                 "prepare_model_for_kbit_training" if case["method"] == "qlora" else
                                 "from_pretrained(dtype=%s)" % case["load_dtype"]),
                      ("attn_implementation", "sdpa"), ("autocast", case["precision"] in ("bf16-mixed", "bf16-base-mixed")),
                      ("gradient_checkpointing", case["gc"]),
                      ("lora", {"r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "target_modules": TARGETS,
                                "adapter_dtype": "fp32 (autocast_adapter_dtype=True)"}),
                      ("labels", "input_ids.clone()"),
                      ("adamw", {"lr": 1e-3, "weight_decay": 0.01, "foreach": False})])
    if case["method"] == "qlora":
        hf["bnb"] = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                     "bnb_4bit_use_double_quant": case["double_quant"],
                     "bnb_4bit_compute_dtype": case["compute_dtype"], "loaded_dtype": "bf16"}
        if case["save_A"]:
            hf["bnb"]["emulates"] = ("bitsandbytes <= 0.43.1: MatMul4Bit keeps ctx.tensors = (A, B); run on %s "
                                     "with PR #1270 reverted at run time" % bv)
    rec = OrderedDict([("name", case["name"]), ("config", case_config(case, bv)), ("measured", measured),
                       ("hf", hf), ("check", check), ("device", "cpu"), ("torch", torch.__version__.split("+")[0]),
                       ("versions", vers),
                       ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])
    m = measured
    print("%-38s peak=%9d start=%8d fwd=%9d bwd=%9d opt=%8d %-8s %s (%.1fs)" % (
        case["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m["forward_peak_bytes"],
        m["backward_peak_bytes"], m["optimizer_peak_bytes"], m["peak_phase"], m["peak_op"], time.time() - t),
        file=sys.stderr, flush=True)
    return rec


# Cases a vramcalc configuration cannot state (the accuracy test lists them as skipped, with the reason).
NOT_EXPRESSIBLE = {
    "saveA_gc": "non-reentrant checkpointing (the Trainer's use_reentrant=False) with bitsandbytes before 0.43.2: "
                "MatMul4Bit's ctx.tensors escapes the checkpoint; vramcalc has no reentrant/non-reentrant key and "
                "models the reentrant checkpointing PEFT's prepare_model_for_kbit_training turns on",
    "qlora_dq_cbf16_fp32_saveA": "bnb_4bit_compute_dtype bf16 under fp32 training: vramcalc has no key for a compute "
                                 "dtype other than the precision's",
    "qlora_dq_cfp32_mixed_saveA": "emulates bitsandbytes 0.41-0.43.1 with a fixed fp32 compute dtype, but those "
                                  "releases compute a bf16 input (the attention output) in bf16 (412fd0e7): the "
                                  "emulation copies it to fp32, the releases did not",
}


def not_expressible(name):
    return NOT_EXPRESSIBLE["saveA_gc"] if name.endswith("saveA_gc") else NOT_EXPRESSIBLE.get(name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--trace-out", default=None, help="trace file (default stdout)")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--exact", default=None, help="run only this case (used for child processes)")
    ap.add_argument("--bnb-site", default=None, help="folder with another bitsandbytes, first on sys.path")
    ap.add_argument("--no-trace", action="store_true", help="no saved-tensor hooks (checks they change nothing)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--in-process", action="store_true",
                    help="run the cases in this process (their accounting checks then fail from the 2nd on)")
    ap.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "vramcalc-qlora-tiny-llama"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    save_tiny(args.model_dir)
    if args.exact:  # child: one case, JSON record on the last stdout line, trace to --trace-out
        case = [c for c in CASES if c["name"] == args.exact][0]
        tout = open(args.trace_out, "w") if args.trace_out else sys.stderr
        rec = run_one(case, args.model_dir, args, tout)
        print(json.dumps(rec))
        return
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    tout = open(args.trace_out, "w") if args.trace_out else sys.stdout
    if not args.no_trace:
        print(TRACE_LEGEND % (torch.__version__, transformers.__version__, peft.__version__,
                              bitsandbytes.__version__), file=tout)
    records, failures = [], []
    for c in cases:
        try:
            if c["bnb_site"] or not args.in_process:
                # every case in a fresh process: objects of an earlier case (reference cycles in the loaded
                # model) would otherwise be freed inside a later case's profile and break its accounting
                cmd = [sys.executable, os.path.abspath(__file__), "--exact", c["name"]]
                if c["bnb_site"]:
                    site = os.path.join(REPO, c["bnb_site"])
                    if not os.path.isdir(site):
                        raise RuntimeError("%s is missing (pip install --no-deps --target %s bitsandbytes==%s)" % (
                            site, c["bnb_site"], c["bnb_site"].split("bnb-")[-1]))
                    cmd += ["--bnb-site", site]
                with tempfile.NamedTemporaryFile("r", suffix=".txt") as tf:
                    cmd += ["--steps", str(args.steps), "--model-dir", args.model_dir, "--trace-out", tf.name]
                    if args.no_trace:
                        cmd.append("--no-trace")
                    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
                    if p.returncode != 0:
                        raise RuntimeError("child exited %d" % p.returncode)
                    rec = json.loads(p.stdout.strip().splitlines()[-1], object_pairs_hook=OrderedDict)
                    tout.write(tf.read())
            else:
                rec = run_one(c, args.model_dir, args, tout)
        except Exception as e:  # noqa: BLE001
            msg = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            failures.append((c["name"], msg))
            print("%-38s FAILED %s" % (c["name"], msg), file=sys.stderr, flush=True)
            continue
        records.append(rec)
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                why = not_expressible(r["name"])
                if why:
                    r["not_expressible"] = why
                f.write(json.dumps(r) + "\n")
    if args.trace_out:
        tout.close()
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
