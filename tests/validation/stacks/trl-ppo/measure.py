#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one PPO training iteration (rollout + PPO updates) run by TRL 1.12.0's own
``trl.experimental.ppo.PPOTrainer(...).train()`` (CPU).

Ground truth for vramcalc's ``"method": "ppo"``.  PPO left TRL after 1.12.0 (1.14.2 has no PPOTrainer), so this
stack pins trl 1.12.0 (requirements.txt).  Each case trains four copies of the tiny Llama of ../trl/measure.py
(4 layers, hidden 256, 4 heads, 2 kv heads, ffn 768, vocab 2000, untied; random weights saved once, word-level
tokenizer, nothing downloaded), as TRL's example script (examples/scripts/ppo/ppo.py) builds them:

  policy:  AutoModelForCausalLM.from_pretrained(dir, dtype, attn_implementation="sdpa")
  ref:     the same, a second from_pretrained (full fine-tuning); None with a peft_config (the trainer then runs
           the policy inside PeftModel.disable_adapter())
  value:   AutoModelForSequenceClassification.from_pretrained(dir, num_labels=1, dtype) (backbone from the
           checkpoint, `score` Linear(H, 1) freshly initialised); trained together with the policy
  reward:  the same class, a separate from_pretrained; frozen, no-grad only
  LoRA:    peft_config=LoraConfig(r=8, alpha 16, dropout 0, q/k/v/o/gate/up/down) given to the trainer (the policy
           only; the value model stays fully trainable)
  PPO:     PPOConfig(per_device_train_batch_size=b, gradient_accumulation_steps=ga, num_mini_batches 1,
           num_ppo_epochs E, response_length C, stop_token None (every response is exactly C tokens),
           local_rollout_forward_batch_size 64 (default), total_episodes = 2 rollout batches -> 2 updates, the
           second measured), num_sample_generations 0, use_cpu, optim = the Trainer default (adamw_torch_fused)
  bf16-mixed: PPOTrainer builds its own ``Accelerator(gradient_accumulation_steps=...)`` and never reads
           ``args.bf16``; transformers 5 no longer exports ACCELERATE_MIXED_PRECISION from TrainingArguments, so
           the case sets ACCELERATE_MIXED_PRECISION=bf16 as ``accelerate launch --mixed_precision bf16`` would.

    build/venv-trl112/bin/python tests/validation/stacks/trl-ppo/measure.py \\
        --out tests/validation/stacks/trl-ppo/measured.jsonl --trace-out tests/validation/stacks/trl-ppo/traces.txt

Counting: as ../trl/measure.py (profiler_memory.py): the whole run is profiled with
``torch.profiler.profile(profile_memory=True)``; the running sum of c10's CPU allocation events is the exact
live-bytes curve.  PPOTrainer.train() is one loop (no Trainer.training_step, no on_step_begin): the measured
iteration opens when the (wrapped) dataloader yields the last update's batch (after gc.collect()) and closes at
``on_train_end`` (after the loop's own ``del`` of the rollout buffers).  Phases are flat, sticky profiler ranges
("phase:<name>"): a phase starts when the trainer calls the wrapped function and lasts until the next phase starts:

  generation       from the batch's arrival: unwrap_model_for_generation + ``batch_generation`` (generate with
                   output_scores, stack and pad of the scores)
  logprob          ``selective_log_softmax`` of the generation scores (no grad)
  reference        ``forward(ref_policy | policy in null_ref_context)`` + the temperature division + its
                   selective_log_softmax
  value            ``get_reward(value_model, ...)`` (no grad)
  reward           ``get_reward(reward_model, ...)`` and the rest of the rollout chunk loop
  advantages       after the rollout's ``gc.collect()``: masks, KL, rewards, GAE, whitening
  value_forward    ``forward(model, ...)`` (PolicyAndValueWrapper): the critic backbone + score head, with grad
  policy_forward   the policy's own forward inside the wrapper (a forward pre-hook on the policy)
  loss             after the wrapper returns: logits slice /= temperature, selective_log_softmax, PPO losses
  backward         ``accelerator.backward``
  optimizer        ``optimizer.step()`` and ``optimizer.zero_grad()`` (AcceleratedOptimizer)
  entropy_stats    after zero_grad: the no-grad softmax entropy of the logits and the statistics
  end              after the update's final ``gc.collect()``: metrics logging, the del of the buffers

``step_start_bytes`` is computed from the tensors: parameters/buffers/grads of the four models, AdamW states, and
every tensor reachable from the locals of PPOTrainer.train's frame at that instant (the previous rollout's
generation scores ``logitss`` and ``data``, the stats tensors) plus the batch being yielded; it is checked against
the profiler's running total.  Saved for backward: profiler_memory.BlockSavedTracer over the policy's decoder
layers (regions 0..L-1) and the value model's (L..2L-1) around the first training forward + loss of the measured
iteration.
"""
import argparse
import contextlib
import datetime
import gc
import importlib.util
import json
import os
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
os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")

import logging  # noqa: E402
logging.disable(logging.WARNING)

import torch  # noqa: E402
sys.path.append(os.path.dirname(os.path.dirname(HERE)))  # tests/validation, for profiler_memory
from profiler_memory import (  # noqa: E402
    storage as _storage, live_tensor_bytes, count_params, alloc_nodes as _alloc_nodes, ancestors as _ancestors,
    describe as _describe, opname as _opname, step_window, step_peaks, live_groups, print_groups,
    print_saved_by_block, BlockSavedTracer, package_version as _ver)

# the tiny model, tokenizer and word generator of the DPO/GRPO stack (imported, not copied)
_spec = importlib.util.spec_from_file_location("trl_stack_measure", os.path.join(os.path.dirname(HERE), "trl",
                                                                               "measure.py"))
_trl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_trl)
HF, TARGETS, LORA, save_tiny, words = _trl.HF, _trl.TARGETS, _trl.LORA, _trl.save_tiny, _trl.words


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

CASES = []


def _ppo(name, finetune="full", precision="32-true", batch=4, ga=1, prompt=32, completion=32, epochs=2,
         rollout_chunk=64, vocab=None):
    CASES.append(OrderedDict(name=name, method="ppo", finetune=finetune, precision=precision,
                             reference="model" if finetune == "full" else "base-without-adapters",
                             per_device=batch, ga=ga, prompt_len=prompt, completion_len=completion,
                             epochs=epochs, rollout_chunk=rollout_chunk, vocab=vocab))


# per_device_train_batch_size 4, query 32 tokens, response 32 tokens, 2 PPO epochs, 1 minibatch
_ppo("ppo_full_fp32")
_ppo("ppo_full_bf16mixed", precision="bf16-mixed")
_ppo("ppo_full_bf16true", precision="bf16-true")
_ppo("ppo_lora_fp32", finetune="lora")
# another response length / batch: 8 rollouts of query 16 + response 64
_ppo("ppo_full_fp32_b8_c64", batch=8, prompt=16, completion=64)
# gradient accumulation 2 (micro batch 2, rollout batch 4): the previous micro batch's outputs stay alive
_ppo("ppo_full_fp32_ga2", batch=2, ga=2)
# rollout in chunks of 2 (local_rollout_forward_batch_size 2 < rollout batch 4)
_ppo("ppo_full_fp32_chunk2", rollout_chunk=2)
# vocab 40000 (V >> H as in real models: the (b, S, V) logits and the (Br, C, V) generation scores dominate)
_ppo("ppo_full_fp32_v40000", vocab=40000)


def model_hf(case):
    hf = OrderedDict(HF)
    if case.get("vocab"):
        hf["vocab_size"] = case["vocab"]
    return hf


def load_dtype(case):
    return torch.bfloat16 if case["precision"] == "bf16-true" else torch.float32


def case_config(case):
    cfg = OrderedDict()
    cfg["framework"] = "hf"
    cfg["method"] = "ppo"
    cfg["reference"] = case["reference"]
    cfg["micro_batch"] = case["per_device"]          # sequences per training forward
    cfg["rollout_forward_batch"] = case["rollout_chunk"]  # local_rollout_forward_batch_size
    cfg["prompt_len"] = case["prompt_len"]            # query length
    cfg["completion_len"] = case["completion_len"]    # response_length
    cfg["grad_accum"] = case["ga"]
    cfg["num_mini_batches"] = 1
    cfg["precision"] = case["precision"]
    cfg["optimizer"] = "adamw"
    cfg["optimizer_impl"] = "fused"
    cfg["checkpointing"] = "none"
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
    return cfg


def make_dataset(case, tok, n):
    from datasets import Dataset
    import random
    rng = random.Random(1)
    V = model_hf(case)["vocab_size"]
    texts = [words(rng, case["prompt_len"], V) for _ in range(n)]
    ds = Dataset.from_dict({"prompt": texts})
    return ds.map(lambda x: {"input_ids": tok(x["prompt"], padding=False)["input_ids"]}, batched=True,
                  remove_columns=["prompt"])


# --------------------------------------------------------------------------
# Flat, sticky phases
# --------------------------------------------------------------------------

class Phases:
    """One open profiler range "phase:<name>" at a time; enter() closes the current one and opens the next."""

    def __init__(self):
        from torch.profiler import record_function
        self._rf = record_function
        self.cur = None
        self.name = None
        self.active = False  # phases only inside the measured iteration

    def enter(self, name):
        if not self.active:
            self.name = name
            return
        self.close()
        self.cur = self._rf("phase:" + name)
        self.cur.__enter__()
        self.name = name

    def close(self):
        if self.cur is not None:
            self.cur.__exit__(None, None, None)
            self.cur = None


class RunState:
    def __init__(self, case):
        self.case = case
        self.phases = Phases()
        self.trainer = None
        self.measuring = False
        self.at_start = self.at_end = None
        self.frame = None
        self.batch = None
        self.tracer = None
        self.trace = False
        self.traced = False
        self.tracing = None
        self.loss_value = None
        self.updates = 0
        self.n_updates = None
        self.step_rf = None
        self.models = {}

    def persistent(self):
        """Storage pointers and bytes of the tensors that live across iterations."""
        ts = []
        for m in self.models.values():
            if m is None:
                continue
            ts += list(m.parameters()) + list(m.buffers()) + [p.grad for p in m.parameters()]
        opt = self.trainer.optimizer
        for st in opt.state.values():
            ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
        if self.frame is not None:
            # frame.f_locals is a snapshot dict kept on the frame (Python <= 3.12): it would keep the old buffers
            # alive after the trainer rebinds its variables, so it is emptied right after reading
            d = self.frame.f_locals
            ts += collect_tensors(dict(d))
            d.clear()
        if self.batch is not None:
            ts += collect_tensors(self.batch)
        st = dict(_storage(x) for x in ts if isinstance(x, torch.Tensor))
        return set(st), live_tensor_bytes(ts), st


def collect_tensors(obj, depth=0, seen=None):
    seen = set() if seen is None else seen
    out = []
    if id(obj) in seen or depth > 4:
        return out
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, torch.nn.Module):
        return out
    if isinstance(obj, dict) or hasattr(obj, "items") and hasattr(obj, "keys"):
        try:
            vals = list(obj.values())
        except Exception:  # noqa: BLE001
            vals = []
        for v in vals:
            out += collect_tensors(v, depth + 1, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            out += collect_tensors(v, depth + 1, seen)
    return out


class MarkedLoader:
    """Wraps the trainer's dataloader: before yielding the last update's batch, gc.collect() and open the measured
    iteration (the batch is already collated: it is part of step_start)."""

    def __init__(self, inner, s):
        self.inner = inner
        self.s = s

    def __len__(self):
        return len(self.inner)

    def __iter__(self):
        s = self.s
        for batch in self.inner:
            s.updates += 1
            if s.updates == s.n_updates:
                gc.collect()
                f = sys._getframe(1)
                while f is not None and not (f.f_code.co_name == "train" and "ref_policy" in f.f_code.co_varnames):
                    f = f.f_back
                s.frame = f
                s.batch = batch
                s.at_start = s.persistent()
                s.measuring = True
                s.step_rf = s.phases._rf("measured_step")
                s.step_rf.__enter__()
                s.phases.active = True
                s.phases.enter("generation")
            yield batch


def end_callback(s):
    from transformers import TrainerCallback

    class End(TrainerCallback):
        def on_train_end(self, args, state, control, **kw):
            if s.measuring:
                s.phases.close()
                s.phases.active = False
                s.step_rf.__exit__(None, None, None)
                s.measuring = False
                s.at_end = s.persistent()
                s.frame = None
    return End()


def install(s):
    import trl.experimental.ppo.ppo_trainer as mod
    t = s.trainer
    P = s.phases
    policy = t.model.policy if hasattr(t.model, "policy") else t.model.module.policy

    orig_bg = mod.batch_generation

    def batch_generation(*a, **k):
        P.enter("generation")
        return orig_bg(*a, **k)
    mod.batch_generation = batch_generation

    orig_sls = mod.selective_log_softmax

    def selective_log_softmax(*a, **k):
        if not torch.is_grad_enabled() and P.name != "reference":
            P.enter("logprob")
        return orig_sls(*a, **k)
    mod.selective_log_softmax = selective_log_softmax

    orig_fwd = mod.forward

    def forward(model, *a, **k):
        if torch.is_grad_enabled():
            P.enter("value_forward")
            if s.measuring and s.trace and not s.traced:
                s.tracing = s.tracer.hooks()
                s.tracing.__enter__()
            out = orig_fwd(model, *a, **k)
            P.enter("loss")
            return out
        P.enter("reference")
        return orig_fwd(model, *a, **k)
    mod.forward = forward

    def policy_pre(module, args, kwargs=None):
        if torch.is_grad_enabled():
            P.enter("policy_forward")
    policy.register_forward_pre_hook(policy_pre)

    orig_gr = mod.get_reward

    def get_reward(model, *a, **k):
        P.enter("reward" if model is t.reward_model else "value")
        return orig_gr(model, *a, **k)
    mod.get_reward = get_reward

    class GC:
        @staticmethod
        def collect(*a):
            r = gc.collect(*a)
            P.enter("advantages" if P.name in ("generation", "logprob", "reference", "value", "reward") else "end")
            return r
    mod.gc = GC

    acc = t.accelerator
    orig_bw = acc.backward

    def backward(loss, *a, **k):
        if s.tracing is not None:
            s.tracing.__exit__(None, None, None)
            s.tracing = None
            s.tracer.walk(loss)
            s.traced = True
        if s.measuring:
            s.loss_value = float(loss.detach())
        P.enter("backward")
        return orig_bw(loss, *a, **k)
    acc.backward = backward

    opt = t.optimizer
    orig_step, orig_zero = opt.step, opt.zero_grad

    def step(*a, **k):
        P.enter("optimizer")
        return orig_step(*a, **k)

    def zero_grad(*a, **k):
        r = orig_zero(*a, **k)
        P.enter("entropy_stats")
        return r
    opt.step, opt.zero_grad = step, zero_grad

    t.dataloader = MarkedLoader(t.dataloader, s)
    t.add_callback(end_callback(s))


PHASES = ("generation", "logprob", "reference", "value", "reward", "advantages", "value_forward", "policy_forward",
          "loss", "backward", "optimizer", "entropy_stats", "end")


def build_trainer(case, path, s):
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer
    if case["precision"] == "bf16-mixed":
        os.environ["ACCELERATE_MIXED_PRECISION"] = "bf16"  # what `accelerate launch --mixed_precision bf16` sets
    from trl.experimental.ppo import PPOConfig, PPOTrainer
    tok = AutoTokenizer.from_pretrained(path)
    # a pad id outside the model's vocabulary (id V): the random policy can sample "<pad>" (id 0), and a pad
    # inside a response would make every later forward build an explicit 4-D mask (another SDPA path, repeat_kv);
    # PPO masks pads to id 0 before the embedding, so id V is never embedded
    tok.add_special_tokens({"pad_token": "<ppo_pad>"})
    assert tok.pad_token_id == model_hf(case)["vocab_size"]
    dtype = load_dtype(case)
    kw = dict(dtype=dtype, attn_implementation="sdpa")
    policy = AutoModelForCausalLM.from_pretrained(path, **kw)
    ref = AutoModelForCausalLM.from_pretrained(path, **kw) if case["finetune"] == "full" else None
    value = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, **kw)
    reward = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, **kw)
    peft_config = None
    if case["finetune"] == "lora":
        from peft import LoraConfig
        peft_config = LoraConfig(r=LORA["r"], lora_alpha=LORA["lora_alpha"], lora_dropout=LORA["lora_dropout"],
                                 target_modules=list(TARGETS), bias="none", task_type="CAUSAL_LM")
    rollout = case["per_device"] * case["ga"]
    s.n_updates = 2
    # one batch more than the updates use: the measured update's batch is not the dataloader's last, where
    # accelerate's GradientState.end_of_dataloader would force a gradient sync (an optimizer step) at every micro
    # batch of a gradient-accumulation case
    ds = make_dataset(case, tok, rollout * (s.n_updates + 1))
    args = PPOConfig(output_dir=os.path.join(tempfile.gettempdir(), "vramcalc-trl-ppo-out"),
                     per_device_train_batch_size=case["per_device"], gradient_accumulation_steps=case["ga"],
                     num_mini_batches=1, num_ppo_epochs=case["epochs"], response_length=case["completion_len"],
                     total_episodes=rollout * s.n_updates, local_rollout_forward_batch_size=case["rollout_chunk"],
                     num_sample_generations=0, stop_token=None, learning_rate=1e-5,
                     bf16=case["precision"] == "bf16-mixed", use_cpu=True, logging_strategy="no",
                     save_strategy="no", report_to="none", seed=0, disable_tqdm=True, dataloader_num_workers=0,
                     dataloader_pin_memory=False)
    trainer = PPOTrainer(args=args, processing_class=tok, model=policy, ref_model=ref, reward_model=reward,
                         value_model=value, train_dataset=ds, peft_config=peft_config)
    del policy, ref, value, reward
    s.trainer = trainer
    unwrapped = trainer.accelerator.unwrap_model(trainer.model)
    s.models = OrderedDict([("policy", unwrapped.policy), ("value", unwrapped.value_model),
                            ("ref", trainer.ref_model), ("reward", trainer.reward_model)])
    install(s)
    return trainer


def layers_of(model):
    m = model.get_base_model() if hasattr(model, "get_base_model") else model
    return m.model.layers


def model_bytes(m):
    if m is None:
        return None
    kinds = OrderedDict([("trainable", 0), ("frozen", 0), ("buffers", 0)])
    seen = set()
    for p in m.parameters():
        ptr, nb = _storage(p)
        if ptr in seen:
            continue
        seen.add(ptr)
        kinds["trainable" if p.requires_grad else "frozen"] += nb
    kinds["buffers"] = live_tensor_bytes(list(m.buffers()))
    kinds["dtypes"] = sorted({str(p.dtype).replace("torch.", "") for p in m.parameters()})
    return kinds


def run_case(case, path, trace=True, out=None):
    from torch.profiler import profile, ProfilerActivity
    gc.collect()
    torch.manual_seed(0)
    s = RunState(case)
    s.trace = trace
    t0 = time.time()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        trainer = build_trainer(case, path, s)
        if s.trace:
            s.tracer = BlockSavedTracer(list(layers_of(s.models["policy"])) + list(layers_of(s.models["value"])))
        trainer.train()
    wall = time.time() - t0
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = _alloc_nodes(tree)
    step_node = [r for r in _walk(tree) if r.name == "measured_step"][-1]
    in_step, live0, cum_at_start, cum = step_window(allocs, step_node.start_time_ns, step_node.end_time_ns)
    if cum_at_start is None:
        cum_at_start = cum
    cur, peak, peak_i, phase_peak, phase_op, phase_end, phase_i = step_peaks(in_step, PHASES, init=None)
    pk = in_step[peak_i]
    start_ts, step_start, start_st = s.at_start
    end_ts, end_bytes, _ = s.at_end
    persistent_ptrs = start_ts | end_ts
    seen_phases = [p for p in PHASES if phase_peak.get(p) is not None]
    unwrapped = s.models
    m = OrderedDict()
    m["peak_allocated_bytes"] = step_start + peak
    m["step_start_bytes"] = step_start
    m["peak_phase"] = _describe(pk)[0]
    m["peak_op"] = _opname(pk)
    m["phase_peak_bytes"] = OrderedDict((p, step_start + phase_peak[p]) for p in seen_phases)
    m["phase_peak_op"] = OrderedDict((p, _opname(phase_op.get(p))) for p in seen_phases)
    m["phase_end_bytes"] = OrderedDict((p, step_start + phase_end[p]) for p in seen_phases if p in phase_end)
    tot, tr = count_params(unwrapped["policy"])
    m["params_total"] = tot
    m["params_trainable"] = tr
    m["model_bytes"] = OrderedDict((k, model_bytes(v)) for k, v in unwrapped.items())
    opt = trainer.optimizer
    inner = opt.optimizer if hasattr(opt, "optimizer") else opt
    m["optimizer_state_bytes"] = live_tensor_bytes([v for st in inner.state.values() for v in st.values()
                                                    if isinstance(v, torch.Tensor)])
    m["optimizer"] = type(inner).__name__ + (" fused" if inner.defaults.get("fused") else "")
    m["loss"] = round(s.loss_value, 6) if s.loss_value is not None else None
    m["policy_gradient_checkpointing"] = bool(getattr(unwrapped["policy"], "is_gradient_checkpointing", False))
    m["autocast"] = trainer.accelerator.mixed_precision
    if s.tracer is not None:
        rec = {p: r for p, r in s.tracer.records.items() if p not in persistent_ptrs}
        per = defaultdict(int)
        L = len(layers_of(unwrapped["policy"]))
        for r in rec.values():
            reg = r["region"]
            key = reg if not isinstance(reg, int) else ("policy_layer%d" % reg if reg < L else
                                                         "value_layer%d" % (reg - L))
            per[key] += r["nbytes"]
        m["saved_bytes"] = OrderedDict(sorted(per.items()))
    check = OrderedDict([("profiler_step_start_bytes", cum_at_start), ("step_net_bytes", cur),
                         ("tensor_end_minus_start", end_bytes - step_start)])
    # a block that holds persistent storages at an offset: from_pretrained reads the safetensors file into one
    # buffer and the parameters are views into it (the header, and for a sequence-classification model the unused
    # lm_head, stay allocated with it)
    starts = sorted(start_st.items())
    import bisect
    keys = [k for k, _ in starts]
    extra, overhang = [], 0
    for p, n in live0.items():
        if p in persistent_ptrs:
            continue
        size = n.extra_fields.alloc_size
        i = bisect.bisect_left(keys, p)
        inner = 0
        while i < len(keys) and keys[i] < p + size:
            inner += starts[i][1]
            i += 1
        if inner:
            overhang += size - inner
            continue
        extra.append((size, " < ".join(a.name for a in _ancestors(n))[:160]))
    check["loaded_buffer_overhang_bytes"] = overhang
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
stacks/trl-ppo/measure.py   (torch %s, transformers %s, peft %s, trl %s, accelerate %s, CPU)
Per case: the header (peak = step_start + rise, [phase: op (autograd node)] at the peak), each phase's peak and
the live bytes when it ended, the live blocks at the iteration's peak grouped by (phase, autograd node, op) --
dtype(shape) when the block is a tensor saved for backward by the first training forward --, the largest 12
groups at each other phase's peak, then the saved-for-backward storages per region (policy decoder layers
0..L-1, value-model decoder layers L..2L-1, "outside"): the full list for the last value layer and for
"outside", and for the other layers only the lines that differ.
"""


def print_trace(case, in_step, peak_i, step_start, s, persistent_ptrs, m, phase_i, seen_phases, out):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    rec = s.tracer.records if s.tracer is not None else {}
    P("=" * 110)
    desc = "ppo %s %s batch=%d ga=%d query=%d response=%d epochs=%d rollout_chunk=%d vocab=%d" % (
        case["finetune"], case["precision"], case["per_device"], case["ga"], case["prompt_len"],
        case["completion_len"], case["epochs"], case["rollout_chunk"], model_hf(case)["vocab_size"])
    P("=== %s  (%s)  peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], desc, m["peak_allocated_bytes"], step_start, m["peak_allocated_bytes"] - step_start,
        m["peak_phase"], m["peak_op"]))
    P("  model_bytes: %s  optimizer_state_bytes: %d" % (json.dumps(m["model_bytes"]), m["optimizer_state_bytes"]))
    P("  phases (peak, op at the peak; live bytes when the phase last allocated/freed):")
    for p in seen_phases:
        P("    %-15s peak=%10d  end=%10s  %s" % (p, m["phase_peak_bytes"][p], m["phase_end_bytes"].get(p),
                                               m["phase_peak_op"][p]))
    saved_phases = ("value_forward", "policy_forward", "loss")
    P("  -- live at the iteration's peak (allocated during the iteration), by phase / autograd node / op:")
    print_groups(P, live_groups(in_step, peak_i, rec, saved_phases), (15, 34, 30))
    for p in seen_phases:
        i = phase_i.get(p)
        if i is None or i == peak_i:
            continue
        g = live_groups(in_step, i, rec, saved_phases)
        top = dict(sorted(g.items(), key=lambda kv: -kv[1][0])[:12])
        P("  -- live at the %s peak (%d = start + %d), largest 12 of %d groups:" % (
            p, m["phase_peak_bytes"][p], m["phase_peak_bytes"][p] - step_start, len(g)))
        print_groups(P, top, (15, 34, 30))
    g = live_groups(in_step, len(in_step) - 1, rec, ())
    P("  -- live at the iteration's end, allocated during it (%d groups):" % len(g))
    print_groups(P, g, (15, 34, 30))
    if s.tracer is not None:
        print_saved_by_block(P, rec, persistent_ptrs, s.tracer, "layer", "decoder layer", "during the forward")


def versions():
    return OrderedDict((k, _ver(k)) for k in ("torch", "transformers", "peft", "trl", "accelerate", "datasets",
                                              "safetensors", "tokenizers", "numpy"))


def run_one(case, base_dir, args, tout):
    path = base_dir + ("_v%d" % case["vocab"] if case.get("vocab") else "")
    save_tiny(path, model_hf(case))
    m, check, wall = run_case(case, path, trace=not args.no_trace, out=tout)
    if check["profiler_step_start_bytes"] != m["step_start_bytes"] or \
            check["step_net_bytes"] != check["tensor_end_minus_start"]:
        print("NOTE %s: accounting %r vs step_start %d" % (
            case["name"], {k: v for k, v in check.items() if k != "unaccounted_at_start"}, m["step_start_bytes"]),
            file=sys.stderr)
    dt = "bf16" if case["precision"] == "bf16-true" else "fp32"
    hf = OrderedDict([
        ("models", "from_pretrained(dtype=%s, attn_implementation='sdpa'): policy + ref AutoModelForCausalLM, "
                   "value + reward AutoModelForSequenceClassification(num_labels=1)" % dt),
        ("trainer", "trl.experimental.ppo.PPOTrainer"),
        ("autocast", case["precision"] == "bf16-mixed"),
        ("mixed_precision_via", "ACCELERATE_MIXED_PRECISION=bf16 (PPOConfig.bf16 is not read by PPOTrainer)"
         if case["precision"] == "bf16-mixed" else None),
        ("gradient_checkpointing", "none (PPOTrainer never enables it; PPOConfig.gradient_checkpointing "
                                   "defaults to True but is not applied)")])
    if case["finetune"] == "lora":
        hf["lora"] = dict(LORA, adapter_dtype="fp32 (PEFT autocast_adapter_dtype=True)", applies_to="policy only")
    hf["ppo"] = OrderedDict([("per_device_train_batch_size", case["per_device"]),
                             ("gradient_accumulation_steps", case["ga"]),
                             ("local_batch_size", case["per_device"] * case["ga"]),
                             ("num_mini_batches", 1), ("num_ppo_epochs", case["epochs"]),
                             ("response_length", case["completion_len"]), ("query_length", case["prompt_len"]),
                             ("local_rollout_forward_batch_size", case["rollout_chunk"]),
                             ("stop_token", None), ("temperature", 0.7), ("kl_estimator", "k1"),
                             ("whiten_rewards", False), ("num_sample_generations", 0), ("updates", 2),
                             ("measured", "update 2 (the last)")])
    hf["trainer_args"] = {"optim": "adamw_torch_fused (default)", "lr": 1e-5}
    rec = OrderedDict([("name", case["name"]), ("config", case_config(case)), ("measured", m), ("hf", hf),
                       ("check", check), ("device", "cpu"), ("torch", torch.__version__.split("+")[0]),
                       ("versions", versions()),
                       ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])
    print("%-30s peak=%10d start=%9d %-15s %s (%.0fs)" % (
        case["name"], m["peak_allocated_bytes"], m["step_start_bytes"], m["peak_phase"], m["peak_op"], wall),
        file=sys.stderr, flush=True)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--trace-out", default=None, help="trace file (default stdout)")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--exact", default=None, help="run only this case (used for child processes)")
    ap.add_argument("--no-trace", action="store_true", help="no saved-tensor hooks (checks they change nothing)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "vramcalc-trl-ppo-tiny-llama"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    if args.exact:
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
    tout = open(args.trace_out, "w") if args.trace_out else sys.stdout
    print(TRACE_LEGEND % (torch.__version__, transformers.__version__, peft.__version__, trl.__version__,
                          accelerate.__version__), file=tout)
    records, failures = [], []
    for c in cases:
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
                tout.write(tf.read())
                tout.flush()
        except Exception as e:  # noqa: BLE001
            msg = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
            failures.append((c["name"], msg))
            print("%-30s FAILED %s" % (c["name"], msg), file=sys.stderr, flush=True)
            continue
        records.append(rec)
    if args.out:
        with open(args.out, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    if args.trace_out:
        tout.close()
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
