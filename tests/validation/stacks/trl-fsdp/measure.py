#!/usr/bin/env python3
"""Per-rank memory of TRL 1.16's DPOTrainer / GRPOTrainer under FSDP through the Trainer (CPU, gloo, 2 ranks).

Ground truth for vramcalc's ``"method": "dpo" | "grpo"`` with ``"strategy": "fsdp"``, ``"gpus": 2``.  The model,
tokenizer, datasets, reward and phase machinery are those of ``tests/validation/stacks/trl/measure.py``
(imported, not copied); the multi-process method (two gloo workers, gloo's own buffers out of the curve) is that of
``tests/validation/stacks/fsdp/measure.py``.

    build/venv-trl/bin/python tests/validation/stacks/trl-fsdp/measure.py \\
        --out tests/validation/stacks/trl-fsdp/measured.jsonl --trace-out tests/validation/stacks/trl-fsdp/traces.txt

Each case starts two worker processes of this file with the torch.distributed environment variables (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), so that both run ``trainer.train()``; accelerate's
``PartialState`` forms the gloo process group (MULTI_CPU).  FSDP is asked for the way users ask for it:
``TrainingArguments(fsdp="full_shard auto_wrap", fsdp_config={"version": 2 | 1})`` -- transformers 5.18 builds
accelerate's ``FullyShardedDataParallelPlugin`` from it.

The main patch (see ``patch_accelerate_cpu_fsdp``): accelerate 1.15's ``AcceleratorState.__init__`` only turns
a given ``fsdp_plugin`` into ``DistributedType.FSDP`` for accelerator devices (MULTI_GPU / NPU / XPU / ...); on
the CPU (MULTI_CPU) the plugin is silently dropped and the Trainer would run plain DDP.  The patch applies, after
the original ``__init__``, exactly what that branch does (distributed_type = FSDP,
``fsdp_plugin.set_mixed_precision``, ``state.fsdp_plugin = plugin``, and, as ``__init__`` ends, PartialState's
distributed_type = FSDP).  Everything else -- the Trainer's and TRL's FSDP code paths, accelerate's
``fsdp2_prepare_model`` / FSDP1 wrapping, TRL's ``prepare_fsdp`` for the reference, ``summon_full_params`` around
generation -- runs unchanged.

Two more adjustments, both CPU-only and memory-neutral for FSDP's own tensors:
- FSDP1 (``patch_fsdp1_cpu_device_id``): accelerate passes ``device_id=torch.device("cpu", 0)`` and FSDP1's device
  check compares it with "cpu"; the index is dropped.  FSDP1 also gets ``fsdp_config["sync_module_states"] =
  "false"`` (the plugin's param_init_fn otherwise needs an accelerator device).
- ``shim_gloo_collectives``: FSDP's all-gather / reduce-scatter run on private copies made inside a "c10d::"
  range (excluded from the curve like gloo's own buffers), so that FSDP's buffers are freed on the main thread
  when FSDP drops them (without it, gloo's worker thread often drops the last reference and the profiler misses
  the free).

Phases are the stacks/trl ranges; the model forward hooks are registered with ``prepend=True`` so that FSDP's
own pre-forward all-gather of a module falls inside its phase (FSDP1: the root unit's all-gather happens in
the FSDP wrapper's pre-forward, outside the inner module: it shows under "loss").  Per rank: ``step_start_bytes``
from the tensors (local shards, FSDP's flat parameters / unsharded parameters / gradients, AdamW states, the
batch, the buffered GRPO batch), cross-checked with the profiler (``check``); peaks = step_start + the highest
rise of the curve; the JSONL line's ``measured`` is the busier rank's, ``measured.per_rank`` has both.
"""
import argparse
import contextlib
import datetime
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
VALID = os.path.dirname(os.path.dirname(HERE))
WORLD = 2

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _load_trl_measure():
    spec = importlib.util.spec_from_file_location("trl_measure", os.path.join(VALID, "stacks", "trl", "measure.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


trlm = _load_trl_measure()  # sets the offline env vars, imports torch and profiler_memory
import torch  # noqa: E402
sys.path.append(VALID)
from profiler_memory import (  # noqa: E402
    alloc_nodes, split_collective_allocations, step_window, step_peaks, describe, opname, ancestor_names)

# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------

CASES = []


def _dpo(name, finetune, reference, fsdp, pairs=2, precision="32-true", steps=3, sharding="full_shard"):
    CASES.append(OrderedDict(name=name, method="dpo", finetune=finetune, precision=precision, reference=reference,
                             pairs=pairs, prompt_len=64, completion_len=192, gc="none", vocab=None, steps=steps,
                             loss="sigmoid", fsdp=fsdp, sharding=sharding))


def _grpo(name, finetune, fsdp, num_generations=4, prompts=2, beta=0.04, precision="32-true", steps=2):
    reference = "none" if beta == 0 else ("model" if finetune == "full" else "base-without-adapters")
    CASES.append(OrderedDict(name=name, method="grpo", finetune=finetune, precision=precision, reference=reference,
                             num_generations=num_generations, prompts=prompts, prompt_len=32, completion_len=64,
                             beta=beta, gc="none", steps_per_generation=None, num_iterations=1, steps=steps,
                             fsdp=fsdp))


# per rank: DPO 2 pairs (4 sequences of 256), GRPO 2 prompts x 4 = 8 completions (prompt 32 + 64)
_dpo("fsdp2_dpo_full_ref_fp32", "full", "model", 2)
_dpo("fsdp2_dpo_lora_noadapter_fp32", "lora", "base-without-adapters", 2)
_grpo("fsdp2_grpo_full_g4_fp32", "full", 2)
_dpo("fsdp1_dpo_full_ref_fp32", "full", "model", 1)
_grpo("fsdp1_grpo_full_g4_fp32", "full", 1)
# bf16 mixed precision (accelerate's FSDP MixedPrecisionPolicy: bf16 params/reduce, fp32 shards), LoRA GRPO, FSDP1 LoRA
_dpo("fsdp2_dpo_full_ref_bf16mixed", "full", "model", 2, precision="bf16-mixed")
_grpo("fsdp2_grpo_full_g4_bf16mixed", "full", 2, precision="bf16-mixed")
_grpo("fsdp2_grpo_lora_g4_fp32", "lora", 2)
_dpo("fsdp1_dpo_lora_noadapter_fp32", "lora", "base-without-adapters", 1)
# fsdp="shard_grad_op": FSDP2 reshard_after_forward=False for every unit, the reference's one unit included
_dpo("fsdp2_dpo_full_ref_fp32_shardgradop", "full", "model", 2, sharding="shard_grad_op")


def per_rank_case(case):
    """The case as stacks/trl's helpers expect it, with the dataset sized for WORLD ranks."""
    c = OrderedDict(case)
    if c["method"] == "dpo":
        c["pairs"] = case["pairs"] * WORLD
    else:
        c["prompts"] = case["prompts"] * WORLD
    return c


# --------------------------------------------------------------------------
# the patch
# --------------------------------------------------------------------------

def patch_accelerate_cpu_fsdp():
    import accelerate.state as st
    from accelerate.utils import DistributedType
    orig = st.AcceleratorState.__init__

    def __init__(self, mixed_precision=None, cpu=False, dynamo_plugin=None, deepspeed_plugin=None,
                 fsdp_plugin=None, *a, **k):
        orig(self, mixed_precision, cpu, dynamo_plugin, deepspeed_plugin, fsdp_plugin, *a, **k)
        if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP
            if self._mixed_precision != "no":
                fsdp_plugin.set_mixed_precision(self._mixed_precision)
            self.fsdp_plugin = fsdp_plugin
            # as the original __init__ ends: later AcceleratorState() calls copy PartialState's fields back
            st.PartialState._shared_state["distributed_type"] = self.distributed_type
    st.AcceleratorState.__init__ = __init__


def patch_fsdp1_cpu_device_id():
    """FSDP1 only: accelerate gives FSDP1 ``device_id=accelerator.device``, which on MULTI_CPU is
    ``torch.device("cpu", 0)`` (PartialState.set_device: local_process_index % torch.cpu.device_count()), while
    FSDP1's ``_get_compute_device`` takes ``torch.cpu.current_device()`` = "cpu" and raises "Inconsistent compute
    device and `device_id` on rank 0: cpu vs cpu:0".  The patch drops the index of a CPU device_id (the device check
    only)."""
    import torch.distributed.fsdp._init_utils as iu
    orig = iu._get_device_from_device_id

    def _get_device_from_device_id(device_id, rank, device_handle):
        d = orig(device_id, rank, device_handle)
        return torch.device("cpu") if d is not None and d.type == "cpu" else d
    iu._get_device_from_device_id = _get_device_from_device_id


class _Done:
    """A finished Work for callers that asked for async_op=True."""

    def wait(self, *a, **k):
        return True

    def is_completed(self):
        return True


def shim_gloo_collectives():
    """FSDP1 and FSDP2 (torch 2.13) call ``dist.all_gather_single`` / ``dist.reduce_scatter_single`` on their own
    buffers (the flat all-gather output, whose copy-in input is a view of it; the flat unsharded gradient and the
    sharded gradient).  gloo's Work object keeps references to them, and when gloo's worker thread drops the last
    one the free happens on that thread, where the profiler does not see it: the curve then keeps dead blocks
    (measured without the shim: step_net_bytes up to +15.7 MB, ranks differing by 2 all-gather buffers).  The shim
    runs the collective on private copies made inside a "c10d::" range (excluded from the curve with gloo's own
    buffers, as in stacks/fsdp) and copies the result into FSDP's output on the main thread, so that FSDP's buffers
    live exactly as long as FSDP holds them -- what NCCL does.  async_op=True gets a finished Work."""
    import torch.distributed as dist
    from torch.profiler import record_function
    ag, rs = dist.all_gather_single, dist.reduce_scatter_single

    def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
        with record_function("c10d::vramcalc_gloo_shim"):
            out, inp = torch.empty_like(output_tensor), input_tensor.clone()
            ag(out, inp, group=group, async_op=False)
            output_tensor.copy_(out)
            del out, inp
        return _Done() if async_op else None

    def reduce_scatter_single(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
        with record_function("c10d::vramcalc_gloo_shim"):
            out, inp = torch.empty_like(output), input.clone()
            rs(out, inp, op=op, group=group, async_op=False)
            output.copy_(out)
            del out, inp
        return _Done() if async_op else None
    dist.all_gather_single = all_gather_single
    dist.reduce_scatter_single = reduce_scatter_single


# --------------------------------------------------------------------------
# accounting (DTensor shards, FSDP internals)
# --------------------------------------------------------------------------

def _local(t):
    from torch.distributed.tensor import DTensor
    return t._local_tensor if isinstance(t, DTensor) else t


def _storage(t):
    st = _local(t).untyped_storage()
    return st.data_ptr(), st.nbytes()


def _bytes(ts):
    seen = {}
    for t in ts:
        if isinstance(t, torch.Tensor):
            p, n = _storage(t)
            if p:
                seen[p] = n
    return sum(seen.values())


def fsdp_tensors(model, params_only=False):
    """FSDP's own tensors of a wrapped model (flat parameters, shards, unsharded copies, gradients);
    params_only: the parameter storages alone (no gradients)."""
    ts = []
    if model is None:
        return ts
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp._fully_shard._fully_shard import FSDPModule
    for m in model.modules():
        if isinstance(m, FSDP) and m._handle is not None:
            fp = m._handle.flat_param
            ts += [fp] if params_only else [fp, fp.grad]
            for a in ("_local_shard", "_full_param_padded", "_mp_shard") + (
                    () if params_only else ("_saved_grad_shard", "_cpu_grad")):
                ts.append(getattr(fp, a, None))
        elif isinstance(m, FSDPModule):
            grp = m._get_fsdp_state()._fsdp_param_group
            if grp is None:
                continue
            for p in grp.fsdp_params:
                ts += [p.sharded_param, getattr(p, "_sharded_param_data", None), getattr(p, "_unsharded_param", None)]
                if not params_only:
                    ts += [p.unsharded_accumulated_grad, p.sharded_param.grad]
                ts += list(getattr(p, "all_gather_outputs", []) or [])
    return ts


def unit_layout(model):
    """FSDP units of a model: (name, class, unsharded numel, local shard numel, dtype)."""
    out = []
    if model is None:
        return out
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp._fully_shard._fully_shard import FSDPModule
    for name, m in model.named_modules():
        if isinstance(m, FSDP) and m._handle is not None:
            fp = m._handle.flat_param
            out.append({"unit": name or "<root>", "class": type(m.module).__name__, "fsdp": 1,
                        "unsharded_numel": int(fp._unpadded_unsharded_size.numel()),
                        "shard_numel": int(fp._local_shard.numel()), "dtype": str(fp.dtype),
                        "requires_grad": bool(fp.requires_grad)})
        elif isinstance(m, FSDPModule):
            grp = m._get_fsdp_state()._fsdp_param_group
            if grp is None:
                continue
            out.append({"unit": name or "<root>", "class": type(m).__name__.replace("FSDP", ""), "fsdp": 2,
                        "unsharded_numel": sum(int(torch.Size(p._orig_size).numel()) for p in grp.fsdp_params),
                        "shard_numel": sum(p._sharded_param_data.numel() for p in grp.fsdp_params),
                        "dtype": str(grp.fsdp_params[0].sharded_param.dtype),
                        "reshard_after_forward": bool(grp.post_forward_mesh_info is not None),
                        "trainable_numel": sum(int(torch.Size(p._orig_size).numel()) for p in grp.fsdp_params
                                               if p.sharded_param.requires_grad)})
    return out


class RunState(trlm.RunState):
    def persistent(self):
        t = self.trainer
        ts = []
        for m in (t.model, getattr(t, "model_wrapped", None), getattr(t, "ref_model", None)):
            if m is None:
                continue
            ts += list(m.parameters()) + list(m.buffers()) + [p.grad for p in m.parameters()]
            ts += fsdp_tensors(m)
        opt = self.opt if self.opt is not None else t.optimizer
        if opt is not None:
            for st in opt.state.values():
                ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
        if self.batch is not None:
            for b in self.batch:
                if hasattr(b, "values"):
                    ts += [v for v in b.values() if isinstance(v, torch.Tensor)]
        if getattr(t, "_buffered_inputs", None):
            for b in t._buffered_inputs:
                ts += [v for v in b.values() if isinstance(v, torch.Tensor)]
        if isinstance(getattr(t, "_tr_loss", None), torch.Tensor):
            ts.append(t._tr_loss)
        ts = [x for x in ts if isinstance(x, torch.Tensor)]
        return {_storage(x)[0] for x in ts}, _bytes(ts)


# --------------------------------------------------------------------------
# trainer and phases
# --------------------------------------------------------------------------

def fsdp_option(case):
    return "%s auto_wrap" % case.get("sharding", "full_shard")


def fsdp_config(case):
    """FSDP1: sync_module_states off (transformers' FSDP1 default is on, and accelerate's plugin then needs an
    accelerator device for its param_init_fn: 'There are currently no available devices found'); it only broadcasts
    rank 0's weights at wrapping time (every rank loads the same checkpoint here)."""
    return {"version": 2} if case["fsdp"] == 2 else {"version": 1, "sync_module_states": "false"}


def build_trainer(case, path, s):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    peft_config = None
    if case["finetune"] == "lora":
        from peft import LoraConfig
        peft_config = LoraConfig(r=trlm.LORA["r"], lora_alpha=trlm.LORA["lora_alpha"], lora_dropout=0.0,
                                 target_modules=list(trlm.TARGETS), bias="none", task_type="CAUSAL_LM")
    common = dict(output_dir=os.path.join(tempfile.gettempdir(), "vramcalc-trl-fsdp-out"), max_steps=case["steps"],
                  gradient_accumulation_steps=1, learning_rate=1e-5, logging_strategy="no", save_strategy="no",
                  report_to="none", use_cpu=True, bf16=case["precision"] == "bf16-mixed",
                  gradient_checkpointing=False, dataloader_num_workers=0, dataloader_pin_memory=False, seed=0,
                  disable_tqdm=True, fsdp=fsdp_option(case), fsdp_config=fsdp_config(case))
    ds = trlm.make_dataset(per_rank_case(case))
    if case["method"] == "dpo":
        from trl import DPOConfig, DPOTrainer
        args = DPOConfig(per_device_train_batch_size=case["pairs"], max_length=None, loss_type=[case["loss"]],
                         precompute_ref_log_probs=False, **common)
        trainer = DPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=peft_config)
    else:
        from trl import GRPOConfig, GRPOTrainer
        args = GRPOConfig(per_device_train_batch_size=trlm.micro_batch(case), num_generations=case["num_generations"],
                          max_completion_length=case["completion_len"], beta=case["beta"],
                          steps_per_generation=case["steps_per_generation"], num_iterations=case["num_iterations"],
                          generation_kwargs={"min_new_tokens": case["completion_len"]}, use_vllm=False,
                          log_completions=False, **common)
        trainer = GRPOTrainer(model=model, reward_funcs=trlm.reward_len, args=args, train_dataset=ds,
                              processing_class=tok, peft_config=peft_config)
    del model
    s.trainer = trainer
    trainer.add_callback(trlm.step_marker_callback(s))
    install(s)
    return trainer


def install(s):
    """stacks/trl's phases, with the forward hooks prepended (FSDP's pre-forward all-gather inside the phase)."""
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
            if s.measuring and s.tracer is not None:
                with s.tracer.hooks():
                    loss = orig_cl(*a, **k)
                s.tracer.walk(loss[0] if isinstance(loss, tuple) else loss)
            else:
                loss = orig_cl(*a, **k)
        if s.measuring:
            s.loss_value = float((loss[0] if isinstance(loss, tuple) else loss).detach())
        return loss
    t.compute_loss = compute_loss
    if case["method"] == "dpo":
        import trl.trainer.dpo_trainer as mod
        t.model.register_forward_pre_hook(lambda m, a: P.push("policy_forward" if torch.is_grad_enabled() else None),
                                          prepend=True)
        t.model.register_forward_hook(lambda m, a, o: P.pop(), always_call=True)
        if getattr(t, "ref_model", None) is not None:
            t.ref_model.register_forward_pre_hook(lambda m, a: P.push("reference"), prepend=True)
            t.ref_model.register_forward_hook(lambda m, a, o: P.pop(), always_call=True)
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
    if not hasattr(mod, "use_adapter"):
        return
    orig_use_adapter = mod.use_adapter

    @contextlib.contextmanager
    def use_adapter(model, adapter_name):
        with P.phase("reference" if case["method"] == "dpo" else None):
            prev = s.in_ref_adapter if hasattr(s, "in_ref_adapter") else False
            s.in_ref_adapter = True
            try:
                with orig_use_adapter(model, adapter_name):
                    yield
            finally:
                s.in_ref_adapter = prev
    mod.use_adapter = use_adapter


PHASES = {"dpo": trlm.DPO_PHASES, "grpo": trlm.GRPO_PHASES}


def _walk(tree):
    stack = list(tree)
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _fsdp_region(n):
    for a in ancestor_names(n):
        if "FSDP" in a or "FullyShardedDataParallel" in a:
            return a.replace("FullyShardedDataParallel.", "FSDP1.")
    return None


def _op(n):
    o = opname(n)
    r = _fsdp_region(n)
    return o + (" in " + r if r and o and r not in o else "") if o else o


def worker(args):
    import torch.distributed as dist
    from torch.profiler import profile, ProfilerActivity
    torch.set_num_threads(1)
    patch_accelerate_cpu_fsdp()
    case = [c for c in CASES if c["name"] == args.case][0]
    if case["fsdp"] == 1:
        patch_fsdp1_cpu_device_id()
    rank = int(os.environ["RANK"])
    path = args.model_dir
    s = RunState(case)
    torch.manual_seed(0)
    t0 = time.time()
    if not args.no_shim:
        shim_gloo_collectives()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        trainer = build_trainer(case, path, s)
        if args.saved_trace:
            from profiler_memory import BlockSavedTracer
            s.tracer = BlockSavedTracer(trlm.decoder_layers(trainer.model))
        trainer.train()
    wall = time.time() - t0
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = alloc_nodes(tree)
    allocs, comm = split_collective_allocations(allocs)
    step_node = [r for r in _walk(tree) if r.name == "measured_step"][-1]
    in_step, live0, cum_at_start, cum = step_window(allocs, step_node.start_time_ns, step_node.end_time_ns)
    phases = PHASES[case["method"]]
    cur, peak, peak_i, phase_peak, phase_op, phase_end, phase_i = step_peaks(in_step, phases, init=None)
    start_ptrs, step_start = s.at_start
    end_ptrs, end_bytes = s.at_end
    seen = [p for p in phases if phase_peak.get(p) is not None]
    m = OrderedDict()
    m["peak_allocated_bytes"] = step_start + peak
    m["step_start_bytes"] = step_start
    m["peak_phase"] = describe(in_step[peak_i])[0]
    m["peak_op"] = _op(in_step[peak_i])
    m["phase_peak_bytes"] = OrderedDict((p, step_start + phase_peak[p]) for p in seen)
    m["phase_peak_op"] = OrderedDict((p, _op(phase_op.get(p))) for p in seen)
    m["phase_end_bytes"] = OrderedDict((p, step_start + phase_end[p]) for p in seen if p in phase_end)
    t = trainer
    pol = t.model_wrapped if t.model_wrapped is not None else t.model
    # parameter storage on this rank at the step's end (shards + any unit that stays unsharded)
    m["policy_local_param_bytes"] = _bytes([x.detach() for x in pol.parameters()] + fsdp_tensors(pol, True))
    if getattr(t, "ref_model", None) is not None:
        m["ref_local_param_bytes"] = _bytes([x.detach() for x in t.ref_model.parameters()] +
                                            fsdp_tensors(t.ref_model, True))
        m["ref_param_dtype"] = str(next(t.ref_model.parameters()).dtype)
    opt = s.opt or t.optimizer
    m["optimizer_state_bytes"] = _bytes([v for st in opt.state.values() for v in st.values()
                                         if isinstance(v, torch.Tensor)])
    m["loss"] = round(s.loss_value, 6) if s.loss_value is not None else None
    if s.tracer is not None:
        # saved for backward by the measured step's compute_loss, by decoder layer / outside; parameters excluded
        # (persistent shards, and FSDP's unsharded parameters: leaves, "param/leaf")
        per = OrderedDict()
        for ptr, r in s.tracer.records.items():
            if ptr in (start_ptrs | end_ptrs) or r["producer"] == "param/leaf":
                continue
            key = "layer%d" % r["region"] if isinstance(r["region"], int) else r["region"]
            per[key] = per.get(key, 0) + r["nbytes"]
        m["saved_bytes"] = OrderedDict(sorted(per.items()))
        s.tracer.remove()
    # gloo's buffers (excluded from the curve, as stacks/fsdp)
    c_cur, c_peak = 0, 0
    for n in comm:
        c_cur += n.extra_fields.alloc_size
        if step_node.start_time_ns <= n.start_time_ns <= step_node.end_time_ns:
            c_peak = max(c_peak, c_cur)
    m["gloo_internal_max_live_bytes_in_step"] = c_peak
    check = OrderedDict([("profiler_step_start_bytes", cum_at_start), ("step_net_bytes", cur),
                         ("tensor_end_minus_start", end_bytes - step_start)])
    left = {}
    for n in in_step:
        if n.extra_fields.alloc_size > 0:
            left[n.extra_fields.ptr] = n
        else:
            left.pop(n.extra_fields.ptr, None)
    check["live_at_step_end"] = sorted(((n.extra_fields.alloc_size, _op(n), n.extra_fields.ptr in end_ptrs)
                                        for n in left.values()), reverse=True)[:8]
    extra = [(n.extra_fields.alloc_size, " < ".join(list(ancestor_names(n)))[:160])
             for p, n in live0.items() if p not in (start_ptrs | end_ptrs)]
    if extra:
        check["unaccounted_at_start_bytes"] = sum(e[0] for e in extra)
        check["unaccounted_at_start"] = sorted(extra, reverse=True)[:6]
    from accelerate.state import AcceleratorState
    stt = AcceleratorState()
    info = OrderedDict([
        ("distributed_type", str(t.accelerator.distributed_type)),
        ("accelerator_state_distributed_type_after_train", str(stt.distributed_type)),
        ("fsdp_version", stt.fsdp_plugin.fsdp_version),
        ("trainer_is_fsdp_enabled", bool(t.is_fsdp_enabled)),
        ("policy_wrapper", type(pol).__name__), ("ref_wrapper", type(t.ref_model).__name__
                                                  if getattr(t, "ref_model", None) is not None else None),
        ("policy_units", unit_layout(pol)), ("ref_units", unit_layout(getattr(t, "ref_model", None))),
        ("backend", dist.get_backend()), ("world_size", dist.get_world_size())])
    res = {"rank": rank, "measured": m, "check": check, "info": info, "wall_s": round(wall, 1)}
    if args.trace and rank == 0:
        import io
        buf = io.StringIO()
        trace(case, in_step, peak_i, step_start, m, phase_i, seen, buf)
        res["trace"] = buf.getvalue()
    with open(args.result, "w") as f:
        json.dump(res, f)


def _groups(in_step, upto):
    from profiler_memory import live_blocks
    g = OrderedDict()
    for ptr, n in live_blocks(in_step, upto).items():
        ph, inner, node = describe(n)
        key = (ph or "-", _fsdp_region(n) or "-", node or "-", inner or "-")
        e = g.setdefault(key, [0, 0, {}])
        sz = n.extra_fields.alloc_size
        e[0] += sz
        e[1] += 1
        e[2][sz] = e[2].get(sz, 0) + 1
    return g


def trace(case, in_step, peak_i, step_start, m, phase_i, seen, out):
    P = lambda *a: print(*a, file=out)  # noqa: E731
    P("=" * 110)
    P("=== %s rank 0: peak=%d = step_start %d + %d  [%s: %s]" % (
        case["name"], m["peak_allocated_bytes"], step_start, m["peak_allocated_bytes"] - step_start,
        m["peak_phase"], m["peak_op"]))
    P("  policy local params %d, ref local params %s, optimizer states %d" % (
        m["policy_local_param_bytes"], m.get("ref_local_param_bytes"), m["optimizer_state_bytes"]))
    for p in seen:
        P("    %-15s peak=%10d  end=%10s  %s" % (p, m["phase_peak_bytes"][p], m["phase_end_bytes"].get(p),
                                               m["phase_peak_op"][p]))
    for p in ["<step>"] + seen:
        i = peak_i if p == "<step>" else phase_i.get(p)
        if i is None or (p != "<step>" and i == peak_i):
            continue
        g = _groups(in_step, i)
        tot = sum(v[0] for v in g.values())
        P("  -- live at the %s peak (start + %d), blocks allocated in the step, by phase | FSDP region | autograd "
          "node | op {sizes}:" % (p if p != "<step>" else "step's", tot))
        for key, (nb, cnt, sizes) in sorted(g.items(), key=lambda kv: -kv[1][0])[:14]:
            sz = ", ".join("%dB x%d" % (k, v) if v > 1 else "%dB" % k
                           for k, v in sorted(sizes.items(), key=lambda kv: -kv[0] * kv[1])[:4])
            P("  %10d x%-4d %-15s | %-38s | %-30s | %s  {%s}" % (nb, cnt, key[0][:15], key[1][:38], key[2][:30],
                                                              key[3][:60], sz))


# --------------------------------------------------------------------------
# parent
# --------------------------------------------------------------------------

def free_port():
    sk = socket.socket()
    sk.bind(("127.0.0.1", 0))
    p = sk.getsockname()[1]
    sk.close()
    return p


def config(case):
    c = trlm.case_config(case)
    c["strategy"] = "fsdp"
    c["gpus"] = WORLD
    c["fsdp_version"] = case["fsdp"]
    c["zero"] = 2 if case.get("sharding") == "shard_grad_op" else 3  # shard_grad_op: reshard_after_forward False
    # FSDP 1 with PEFT: transformers' update_fsdp_plugin_peft wraps every lora_A / lora_B Linear as a unit of its own
    c["fsdp_wrap"] = "adapters-apart" if case["fsdp"] == 1 and case["finetune"] != "full" else "layers"
    return c


def run_case(case, model_dir, trace, no_shim=False, saved_trace=False):
    tmp = tempfile.mkdtemp(prefix="trl_fsdp_")
    port = free_port()
    procs, files = [], []
    for r in range(WORLD):
        f = os.path.join(tmp, "rank%d.json" % r)
        files.append(f)
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(WORLD), LOCAL_WORLD_SIZE=str(WORLD),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--case", case["name"], "--result", f,
               "--model-dir", model_dir] + (["--trace"] if trace else []) + \
            (["--no-shim"] if no_shim else []) + \
            (["--saved-trace"] if saved_trace else [])
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    outs = []
    for p in procs:
        try:
            o, _ = p.communicate(timeout=1500)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _ = p.communicate()
        outs.append(o.decode(errors="replace"))
    if any(p.returncode != 0 for p in procs) or not all(os.path.exists(f) for f in files):
        return None, "\n".join("rank%d rc=%s\n%s" % (i, p.returncode, o[-5000:]) for i, (p, o) in
                               enumerate(zip(procs, outs)))
    return [json.load(open(f)) for f in files], None


PATCHES = {
    2: "accelerate AcceleratorState: fsdp_plugin honoured on MULTI_CPU (distributed_type FSDP); gloo collectives "
       "on private copies (FSDP's buffers freed on the main thread)",
    1: "accelerate AcceleratorState: fsdp_plugin honoured on MULTI_CPU (distributed_type FSDP); FSDP1 CPU device_id "
       "index dropped; fsdp_config sync_module_states false; gloo collectives on private copies (FSDP's buffers "
       "freed on the main thread)"}


def assemble(case, res):
    per = [r["measured"] for r in res]
    busiest = max(range(WORLD), key=lambda i: per[i]["peak_allocated_bytes"])
    m = OrderedDict(per[busiest])
    m["busiest_rank"] = busiest
    m["per_rank_peak_bytes"] = [p["peak_allocated_bytes"] for p in per]
    m["per_rank"] = per
    hf = OrderedDict([("model", "from_pretrained(dtype=fp32, attn_implementation='sdpa')"),
                      ("trainer", "DPOTrainer" if case["method"] == "dpo" else "GRPOTrainer"),
                      ("training_args", {"fsdp": fsdp_option(case), "fsdp_config": fsdp_config(case),
                                         "use_cpu": True, "bf16": case["precision"] == "bf16-mixed"}),
                      ("patch", PATCHES[case["fsdp"]]),
                      ("launch", "2 processes, RANK/WORLD_SIZE/MASTER_ADDR env, gloo (accelerate PartialState)")])
    if case["method"] == "dpo":
        hf["dpo"] = {"beta": 0.1, "loss_type": ["sigmoid"], "per_device_train_batch_size": case["pairs"],
                     "sequences_per_forward": 2 * case["pairs"]}
    else:
        hf["grpo"] = {"beta": case["beta"], "loss_type": "dapo", "num_generations": case["num_generations"],
                      "per_device_train_batch_size": trlm.micro_batch(case), "use_vllm": False,
                      "generation_kwargs": {"min_new_tokens": case["completion_len"]},
                      "prompts_per_rank": case["prompts"]}
    if case["finetune"] == "lora":
        hf["lora"] = dict(trlm.LORA)
    return OrderedDict([("name", case["name"]), ("config", config(case)), ("measured", m), ("hf", hf),
                        ("fsdp", res[0]["info"]), ("check", [r["check"] for r in res]), ("device", "cpu"),
                        ("torch", torch.__version__.split("+")[0]), ("versions", trlm.versions()),
                        ("date", datetime.datetime.now(datetime.timezone.utc).date().isoformat())])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--case")
    ap.add_argument("--result")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--trace-out", default=None)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--merge", action="store_true", help="keep the other cases already in --out / --trace-out")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--saved-trace", action="store_true", help="saved-tensor hooks around compute_loss (diagnostic "
                    "only: the tracer keys storages by address, and FSDP frees and re-allocates the unsharded "
                    "parameters' storages inside the forward, so its per-layer totals are not reliable under FSDP)")
    ap.add_argument("--no-shim", action="store_true", help="call gloo on FSDP's own buffers (some of their frees "
                    "then happen on gloo's thread, unseen by the profiler)")
    ap.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "vramcalc-trl-tiny-llama"))
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    if args.list:
        for c in cases:
            print(c["name"])
        return
    trlm.save_tiny(args.model_dir, trlm.HF)
    lines, traces, failed = OrderedDict(), OrderedDict(), []
    for c in cases:
        t = time.time()
        res, err = run_case(c, args.model_dir, trace=bool(args.trace_out), no_shim=args.no_shim,
                            saved_trace=args.saved_trace)
        if res is None:
            print("FAILED %s\n%s" % (c["name"], err), file=sys.stderr, flush=True)
            failed.append(c["name"])
            continue
        lines[c["name"]] = json.dumps(assemble(c, res))
        if "trace" in res[0]:
            traces[c["name"]] = res[0]["trace"]
        print("%-32s peaks %s start %s %s (%.0fs)" % (
            c["name"], [r["measured"]["peak_allocated_bytes"] for r in res],
            [r["measured"]["step_start_bytes"] for r in res], res[0]["measured"]["peak_phase"], time.time() - t),
            file=sys.stderr, flush=True)
    if args.merge and args.out and os.path.exists(args.out):
        old = OrderedDict((json.loads(x)["name"], x.strip()) for x in open(args.out) if x.strip())
        old.update(lines)
        lines = OrderedDict((c["name"], old[c["name"]]) for c in CASES if c["name"] in old)
    if args.merge and args.trace_out and os.path.exists(args.trace_out):
        chunks = open(args.trace_out).read().split("=" * 110 + "\n")[1:]
        old = OrderedDict((ch.split()[1], ch) for ch in chunks)
        old.update({k: v.split("=" * 110 + "\n", 1)[1] for k, v in traces.items()})
        traces = OrderedDict((c["name"], "=" * 110 + "\n" + old[c["name"]]) for c in CASES if c["name"] in old)
    if args.out:
        with open(args.out, "w") as f:
            for x in lines.values():
                f.write(x + "\n")
    if args.trace_out and traces:
        with open(args.trace_out, "w") as f:
            f.write("stacks/trl-fsdp/measure.py traces (rank 0; torch %s): per case the phase peaks, then the blocks "
                    "allocated during the measured step and live at the step's peak and at each phase's peak, by "
                    "phase | FSDP region | autograd node | op; gloo's own buffers excluded.\n" % torch.__version__)
            for v in traces.values():
                f.write(v)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
