#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of a training step with torchao float8 training (CPU).

Each case builds a small stack of residual MLP blocks (Linear(h, f) -> SiLU -> Linear(f, h), plus the
residual add) or a single nn.Linear, optionally converts it with
``torchao.float8.convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name(R))``,
runs 3 training steps (forward, loss, backward, AdamW step, zero_grad) and measures the 3rd.

    build/venv-torchao/bin/python tests/validation/stacks/fp8/measure.py \
        --out tests/validation/stacks/fp8/measured.jsonl

Counting is the method of tests/validation/measure_hf.py (helpers in tests/validation/profiler_memory.py):
the run is profiled with torch.profiler.profile(profile_memory=True); the running sum of c10's CPU
allocation/free events is the exact live-bytes curve.  peak_allocated_bytes = step_start_bytes + the
highest rise of the curve during the 3rd step.  Every tensor saved for backward during the measured
forward is recorded with a saved_tensors_hooks pack hook (dtype, shape, storage bytes, and whether its
storage is a parameter's), per Linear module.  Each Linear's forward and backward are wrapped in
record_function ranges, so the rise of the curve inside one Linear (its transient float8 copies) is
measured too.

torch._scaled_mm runs on the CPU in torch 2.13 (tensorwise and rowwise scales), so the float8 cases use
the same code path as on CUDA, except Float8Linear's autocast handling (see README.md).
"""
import argparse
import contextlib
import gc
import json
import os
import platform
import sys
from collections import OrderedDict, defaultdict

import torch
import torch.nn as nn

sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # profiler_memory
from profiler_memory import (  # noqa: E402
    storage as _storage, live_tensor_bytes, alloc_nodes, step_window, step_peaks, opname, describe,
    ancestor_names, package_version,
)

torch.set_num_threads(2)

H, F, L_BLOCKS, BATCH, SEQ = 256, 512, 4, 4, 128  # tokens N = BATCH*SEQ = 512


class Block(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.up = nn.Linear(h, f, bias=False)
        self.act = nn.SiLU()
        self.down = nn.Linear(f, h, bias=False)

    def forward(self, x):
        return x + self.down(self.act(self.up(x)))


class MLPStack(nn.Module):
    def __init__(self, h, f, n):
        super().__init__()
        self.blocks = nn.ModuleList([Block(h, f) for _ in range(n)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class OneLinear(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.lin = nn.Linear(h, f, bias=False)

    def forward(self, x):
        return self.lin(x)


def _case(name, model, weights, recipe=None, autocast=False, note=""):
    return dict(name=name, model=model, weights=weights, recipe=recipe, autocast=autocast, note=note)


CASES = [
    _case("one-linear-bf16", "one", "bf16"),
    _case("one-linear-fp8-tensorwise", "one", "bf16", "tensorwise"),
    _case("one-linear-fp8-rowwise", "one", "bf16", "rowwise"),
    _case("mlp4-bf16", "mlp", "bf16"),
    _case("mlp4-fp8-tensorwise", "mlp", "bf16", "tensorwise"),
    _case("mlp4-fp8-rowwise", "mlp", "bf16", "rowwise"),
    _case("mlp4-fp8-rowwise_with_gw_hp", "mlp", "bf16", "rowwise_with_gw_hp"),
    _case("mlp4-fp32-autocast-bf16", "mlp", "fp32", autocast=True),
    _case("mlp4-fp32-autocast-fp8-tensorwise", "mlp", "fp32", "tensorwise", autocast=True,
          note="CPU artifact: Float8Linear.forward casts its input to torch.get_autocast_gpu_dtype() only when "
               "torch.is_autocast_enabled() (the CUDA autocast) is on; under CPU autocast its input stays fp32, "
               "so the saved input is fp32 here, bf16 on CUDA."),
]


def build(case):
    torch.manual_seed(0)
    if case["model"] == "one":
        model = OneLinear(H, F)
    else:
        model = MLPStack(H, F, L_BLOCKS)
    if case["weights"] == "bf16":
        model = model.to(torch.bfloat16)
    if case["recipe"] is not None:
        from torchao.float8 import convert_to_float8_training, Float8LinearConfig
        cfg = Float8LinearConfig.from_recipe_name(case["recipe"])
        convert_to_float8_training(model, config=cfg)
    return model


class LinearTracer:
    """Records every tensor saved for backward, by the Linear that was running, and wraps each Linear's
    forward in a record_function range named lin:<name>."""

    def __init__(self, model):
        self.region = "outside"
        self.saved = defaultdict(list)
        self.handles = []
        self.params = {_storage(p)[0]: n for n, p in model.named_parameters()}
        for name, m in model.named_modules():
            if isinstance(m, nn.Linear):
                self.handles.append(m.register_forward_pre_hook(self._enter(name)))
                self.handles.append(m.register_forward_hook(self._leave(name)))
        self.rf = {}

    def _enter(self, name):
        def f(mod, args):
            self.region = name
            r = torch.profiler.record_function("lin:" + name)
            r.__enter__()
            self.rf[name] = r
        return f

    def _leave(self, name):
        def f(mod, args, out):
            self.rf.pop(name).__exit__(None, None, None)
            self.region = "outside"
        return f

    def pack(self, t):
        ptr, nb = _storage(t)
        self.saved[self.region].append(OrderedDict([
            ("dtype", str(t.dtype).replace("torch.", "")), ("shape", list(t.shape)), ("storage_bytes", nb),
            ("tensor_bytes", t.numel() * t.element_size()),
            ("is_param", self.params.get(ptr)), ("type", type(t).__name__)]))
        return t

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, lambda x: x)

    def remove(self):
        for h in self.handles:
            h.remove()


def persistent_tensors(model, opt, batch):
    ts = list(model.parameters()) + list(model.buffers()) + [p.grad for p in model.parameters()]
    for st in opt.state.values():
        ts += [v for v in st.values() if isinstance(v, torch.Tensor)]
    return ts + list(batch)


def range_rises(in_step, prefix):
    """{range name: highest rise of the live-bytes curve above its value when the range's first
    allocation event ran (minus that event), over the events inside the range}."""
    cur, out, base = 0, {}, {}
    for n in in_step:
        before = cur
        cur += n.extra_fields.alloc_size
        names = [a for a in ancestor_names(n) if a.startswith(prefix)]
        for nm in names[:1]:
            if nm not in base:
                base[nm] = before
            out[nm] = max(out.get(nm, 0), cur - base[nm])
    return out


def first_range_allocs(in_step, prefix):
    """[op, +bytes or -bytes] of every allocator event inside the first range named prefix*."""
    out, name = [], None
    for n in in_step:
        nm = next((a for a in ancestor_names(n) if a.startswith(prefix)), None)
        if nm is None:
            if name is not None and out:
                break
            continue
        if name is None:
            name = nm
        if nm != name:
            break
        out.append([describe(n)[1], n.extra_fields.alloc_size])
    return out


def first_node_allocs(in_step):
    """[op, +/-bytes] of the allocator events of the first backward autograd node that belongs to a Linear
    (MmBackward0 / matmul_with_hp_or_float8_argsBackward), the last Linear of the forward."""
    out, key = [], None
    for n in in_step:
        ph, inner, node = describe(n)
        if ph != "backward" or node is None:
            continue
        if key is None and ("MmBackward" in node or "float8" in node.lower()):
            key = node
        if key is not None:
            if node != key:
                if out:
                    break
                continue
            out.append([inner, n.extra_fields.alloc_size])
    return out


def run_case(case, steps=3):
    from torch.profiler import profile, ProfilerActivity, record_function
    tracer = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("setup"):
            model = build(case)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
            g = torch.Generator().manual_seed(1)
            dt = torch.bfloat16 if case["weights"] == "bf16" else torch.float32
            x = torch.randn(BATCH, SEQ, H, generator=g).to(dt).requires_grad_(True)
            batch = (x,)
        for i in range(steps):
            gc.collect()
            last = i == steps - 1
            if last:
                pers = persistent_tensors(model, opt, batch)
                step_start = live_tensor_bytes(pers)
                tracer = LinearTracer(model)
            hooks = tracer.hooks() if last else contextlib.nullcontext()
            ac = torch.autocast("cpu", dtype=torch.bfloat16) if case["autocast"] else contextlib.nullcontext()
            with record_function("step%d" % i):
                with hooks:
                    with record_function("phase:forward"):
                        with ac:
                            y = model(x)
                    with record_function("phase:loss"):
                        loss = y.float().pow(2).mean()
                with record_function("phase:backward"):
                    loss.backward()
                with record_function("phase:optimizer"):
                    opt.step()
                    opt.zero_grad()
                    x.grad = None
            del y, loss
    tree = prof.profiler.kineto_results.experimental_event_tree()
    allocs = alloc_nodes(tree)
    step_node = [r for r in tree if r.name == "step%d" % (steps - 1)][-1]
    in_step, _, cum_at_start, cum = step_window(allocs, step_node.start_time_ns, step_node.end_time_ns)
    cur, peak, peak_i, phase_peak, phase_op, phase_end, _ = step_peaks(
        in_step, ("forward", "loss", "backward", "optimizer"), init=None)
    pk = in_step[peak_i]
    lin_fwd = range_rises([n for n in in_step if describe(n)[0] == "forward"], "lin:")
    fwd_allocs = first_range_allocs(in_step, "lin:")
    bwd_allocs = first_node_allocs(in_step)
    params_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    opt_bytes = sum(v.numel() * v.element_size() for st in opt.state.values() for v in st.values()
                    if isinstance(v, torch.Tensor) and v.dim() > 0)
    saved = OrderedDict()
    saved_act = None
    if tracer is not None:
        for region, lst in tracer.saved.items():
            saved[region] = lst
        saved_act = sum(r["storage_bytes"] for lst in tracer.saved.values() for r in lst if r["is_param"] is None)
        tracer.remove()
    measured = OrderedDict([
        ("peak_allocated_bytes", step_start + peak),
        ("step_start_bytes", step_start),
        ("params_bytes", params_bytes),
        ("optimizer_state_bytes", opt_bytes),
        ("forward_peak_bytes", step_start + (phase_peak["forward"] or 0)),
        ("after_forward_bytes", step_start + phase_end.get("forward", 0)),
        ("backward_peak_bytes", step_start + (phase_peak["backward"] or 0)),
        ("optimizer_peak_bytes", step_start + (phase_peak["optimizer"] or 0)),
        ("peak_phase", describe(pk)[0]),
        ("peak_op", opname(pk)),
        ("saved_for_backward_bytes_non_param_sum", saved_act),
        ("linear_forward_transient_rise_bytes", lin_fwd),
        ("first_linear_forward_allocs", fwd_allocs),
        ("first_linear_backward_node_allocs", bwd_allocs),
    ])
    check = OrderedDict([("profiler_step_start_bytes", cum_at_start), ("step_net_bytes", cur)])
    return measured, check, saved


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    versions = OrderedDict([("python", platform.python_version()), ("torch", torch.__version__),
                            ("torchao", package_version("torchao"))])
    lines = []
    for case in CASES:
        if args.only and not any(s in case["name"] for s in args.only):
            continue
        measured, check, saved = run_case(case)
        rec = OrderedDict([("name", case["name"]),
                           ("config", OrderedDict([("model", case["model"]), ("hidden", H), ("ffn", F),
                                                   ("blocks", L_BLOCKS if case["model"] == "mlp" else 0),
                                                   ("batch", BATCH), ("seq", SEQ), ("weights", case["weights"]),
                                                   ("float8_recipe", case["recipe"]),
                                                   ("autocast_bf16", case["autocast"]),
                                                   ("optimizer", "torch.optim.AdamW(foreach=False)")])),
                           ("measured", measured), ("check", check), ("saved_for_backward", saved),
                           ("versions", versions)])
        if case["note"]:
            rec["note"] = case["note"]
        line = json.dumps(rec)
        lines.append(line)
        print(case["name"], json.dumps(measured), flush=True)
        if check["profiler_step_start_bytes"] != measured["step_start_bytes"]:
            print("  WARNING: profiler step start %s != tensor count %s" % (
                check["profiler_step_start_bytes"], measured["step_start_bytes"]))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
