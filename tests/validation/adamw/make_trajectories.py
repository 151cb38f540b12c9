#!/usr/bin/python3
"""Record torch.optim.AdamW trajectories for the C++ reference in core/reference/adamw.hpp.

Runs the real optimizer (single-tensor path: foreach=False, on the CPU, float32) over a set of cases
(tiny, subnormal and huge gradients, zero gradients, weight decay 0, amsgrad, maximize, extreme betas,
non-finite values) and writes every step's param / exp_avg / exp_avg_sq (/ max_exp_avg_sq) as exact
float32 bit patterns (8 hex digits), with readable values for the inputs and the final parameter.
It also records torch's float32 -> bfloat16 / float16 conversions (.to(dtype)) of the final parameters
and of a list of awkward values (ties, subnormals, overflow edges, random bit patterns).

Under torch 1.x the cases are "torch-1.13" (exp_avg.mul_(b1).add_(g, alpha=1-b1)); under torch 2.x they
are "torch-2" (exp_avg.lerp_(g, 1-b1)). Under 1.x the script adds "torch-2" cases computed by the 2.x
formula written out here with the same ATen ops (source "formula-2.x", not the 2.x optimizer itself);
the GPU script (tests/cuda/run_gpu_validation.sh) reruns this script under the GPU machine's torch 2.x to
check the real thing.

Usage: /usr/bin/python3 tests/validation/adamw/make_trajectories.py [--out FILE] [--device cpu|cuda]
                                                                  [--impl single|foreach|fused]
       (default FILE: trajectories.json next to this script; the committed file is the default run)
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def hex32(a):
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float32)).reshape(-1)
    return ["%08x" % int(u) for u in a.view(np.uint32)]


def hex16(t):
    return ["%04x" % (int(u) & 0xFFFF) for u in t.contiguous().view(torch.int16).reshape(-1).tolist()]


def readable(a):
    return [str(np.float32(x)) for x in np.asarray(a, dtype=np.float32).reshape(-1)]


def f32(x):
    return np.asarray(x, dtype=np.float32)


# ---------------------------------------------------------------------------------------------- cases
def make_cases():
    rng = np.random.default_rng(20240601)

    def normal(n, scale=1.0):
        return f32(rng.standard_normal(n) * scale)

    def subnormals(n):
        bits = rng.integers(1, 0x800000, size=n, dtype=np.uint32)
        bits |= (rng.integers(0, 2, size=n, dtype=np.uint32) << 31).astype(np.uint32)
        out = bits.view(np.float32).copy()
        out[:4] = f32([1e-40, -1e-45, 1.4e-45, 1.1754942e-38])
        return out

    def specials(n):
        g = normal(n)
        g[0:8] = f32([np.inf, -np.inf, np.nan, -0.0, 0.0, 3e38, -3e38, 1e-45])
        return g

    N = 21  # one AVX2 double-vector block (16 floats) + a 5-element scalar tail
    cases = []

    def add(name, steps, grad_fn, n=N, param=None, **hyper):
        p0 = normal(n) if param is None else param(n)
        grads = [grad_fn(n, s) for s in range(steps)]
        cases.append(dict(name=name, hyper=hyper, param0=p0, grads=grads))

    add("default", 6, lambda n, s: normal(n, 0.1))
    add("wd0_lr1e-2_betas_0.8_0.95", 6, lambda n, s: normal(n, 0.5), lr=1e-2, betas=(0.8, 0.95), weight_decay=0.0)
    add("tiny_grads_1e-30", 5, lambda n, s: normal(n, 1e-30))
    add("subnormal_grads", 4, lambda n, s: subnormals(n))
    add("subnormal_grads_eps0", 4, lambda n, s: subnormals(n), eps=0.0)
    add("huge_grads_1e30", 4, lambda n, s: normal(n, 1e30))
    add("huge_then_small", 6, lambda n, s: normal(n, 1e30 if s % 2 == 0 else 1e-3), amsgrad=True)
    add("zero_grads", 3, lambda n, s: f32(np.where(np.arange(n) % 2 == 0, 0.0, -0.0)))
    add("zero_grads_eps0", 2, lambda n, s: np.zeros(n, np.float32), eps=0.0)
    add("amsgrad_decreasing", 8, lambda n, s: normal(n, 10.0 ** (-s)), amsgrad=True, lr=3e-3)
    add("maximize", 5, lambda n, s: normal(n), maximize=True)
    add("maximize_amsgrad_wd0.5_lr0.1", 5, lambda n, s: normal(n, 2.0), maximize=True, amsgrad=True, lr=0.1,
        weight_decay=0.5)
    add("betas_zero", 4, lambda n, s: normal(n), betas=(0.0, 0.0))
    add("beta1_0.3_lr_0.5", 5, lambda n, s: normal(n), betas=(0.3, 0.7), lr=0.5)
    add("betas_high_long", 40, lambda n, s: normal(n, 1e-2), n=8, betas=(0.999, 0.99999), lr=3e-4)
    add("lr10_wd0.1_decay_to_zero", 3, lambda n, s: normal(n), lr=10.0, weight_decay=0.1)
    add("special_grads", 3, lambda n, s: specials(n))
    add("huge_params", 4, lambda n, s: normal(n), param=lambda n: normal(n, 1e30), weight_decay=0.3)
    add("eps_large_1e-3", 4, lambda n, s: normal(n, 1e-4), eps=1e-3)
    return cases


TORCH2_FORMULA_CASES = ["default", "amsgrad_decreasing", "maximize", "betas_zero", "beta1_0.3_lr_0.5",
                        "betas_high_long", "special_grads", "subnormal_grads", "huge_grads_1e30"]

DEFAULTS = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, maximize=False)


# ---------------------------------------------------------------------------------------------- runners
DEVICE = "cpu"
IMPL = "single"


def run_torch(case):
    """The real optimizer: single-tensor path by default (--impl/--device choose another)."""
    h = dict(DEFAULTS, **case["hyper"])
    p = torch.nn.Parameter(torch.from_numpy(case["param0"].copy()).to(DEVICE))
    kw = dict(foreach=False) if IMPL == "single" else dict(foreach=True) if IMPL == "foreach" else dict(fused=True)
    opt = torch.optim.AdamW([p], lr=h["lr"], betas=h["betas"], eps=h["eps"], weight_decay=h["weight_decay"],
                            amsgrad=h["amsgrad"], maximize=h["maximize"], **kw)
    traj = []
    for g in case["grads"]:
        p.grad = torch.from_numpy(g.copy()).to(DEVICE)
        opt.step()
        st = opt.state[p]
        rec = dict(param=hex32(p.detach().cpu().numpy()), exp_avg=hex32(st["exp_avg"].cpu().numpy()),
                   exp_avg_sq=hex32(st["exp_avg_sq"].cpu().numpy()))
        if h["amsgrad"]:
            rec["max_exp_avg_sq"] = hex32(st["max_exp_avg_sq"].cpu().numpy())
        traj.append(rec)
    return h, p.detach().cpu().clone(), traj


def run_formula_2x(case):
    """torch 2.x's _single_tensor_adam(w) arithmetic, written with the same ATen ops (lerp_ for exp_avg)."""
    h = dict(DEFAULTS, **case["hyper"])
    lr, (beta1, beta2), eps, wd = h["lr"], h["betas"], h["eps"], h["weight_decay"]
    param = torch.from_numpy(case["param0"].copy())
    exp_avg = torch.zeros_like(param)
    exp_avg_sq = torch.zeros_like(param)
    max_sq = torch.zeros_like(param)
    traj = []
    step = 0.0
    for g in case["grads"]:
        grad = torch.from_numpy(g.copy())
        grad = -grad if h["maximize"] else grad
        step += 1
        if wd != 0:
            param.mul_(1 - lr * wd)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = math.sqrt(bias_correction2)
        if h["amsgrad"]:
            torch.maximum(max_sq, exp_avg_sq, out=max_sq)
            denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)
        rec = dict(param=hex32(param.numpy()), exp_avg=hex32(exp_avg.numpy()), exp_avg_sq=hex32(exp_avg_sq.numpy()))
        if h["amsgrad"]:
            rec["max_exp_avg_sq"] = hex32(max_sq.numpy())
        traj.append(rec)
    return h, param.clone(), traj


def record(case, variant, source, runner):
    h, final, traj = runner(case)
    return dict(
        name=case["name"] + ("@torch-2" if source == "formula-2.x" else ""),
        variant=variant, source=source,
        lr=h["lr"], betas=list(h["betas"]), eps=h["eps"], weight_decay=h["weight_decay"],
        amsgrad=h["amsgrad"], maximize=h["maximize"],
        n=int(case["param0"].size), steps=len(case["grads"]),
        param0=hex32(case["param0"]), grads=[hex32(g) for g in case["grads"]],
        trajectory=traj,
        param_bf16=hex16(final.to(torch.bfloat16)), param_fp16=hex16(final.to(torch.float16)),
        readable=dict(param0=readable(case["param0"]), final_param=readable(final.numpy())),
    )


def conversions():
    rng = np.random.default_rng(7)
    fixed = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F80FFFF,
             0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x7F800000, 0xFF800000, 0x00000001, 0x80000001,
             0x007FFFFF, 0x00800000, 0x00008000, 0x00018000,
             # float16 edges: 65504, 65519, 65520 (tie -> inf), 2^-14, 2^-24, 2^-25 (tie -> 0), 3*2^-26,
             # 2^-25 + ulp, subnormal ties, largest subnormal + half ulp
             0x477FE000, 0x477FEFFF, 0x477FF000, 0x38800000, 0x33800000, 0x33000000, 0x33400000, 0x33000001,
             0x33C00000, 0x34200000, 0x387FC000, 0x387FE000, 0x387FF000, 0x38801000, 0x38803000, 0x3F801000,
             0x3F803000, 0x3F800FFF, 0x3F801001, 0xC77FF000, 0x32FFFFFF]
    # float32 in the float16 subnormal/normal range, and anywhere
    r1 = rng.integers(0x33000000, 0x47800000, size=600, dtype=np.uint64).astype(np.uint32)
    r2 = rng.integers(0, 0x7F800000, size=600, dtype=np.uint64).astype(np.uint32)
    signs = (rng.integers(0, 2, size=1200, dtype=np.uint64) << 31).astype(np.uint32)
    bits = np.concatenate([np.array(fixed, dtype=np.uint32), np.concatenate([r1, r2]) | signs])
    x = torch.from_numpy(bits.view(np.float32).copy())
    nan = torch.tensor([float("nan")], dtype=torch.float32)
    return dict(
        note="torch .to(dtype) of each float32; NaN payloads differ between torch's scalar and vector paths, "
             "so the test only requires NaN -> NaN (one NaN input is included, at the end)",
        input=["%08x" % int(b) for b in bits] + ["7fc00000"],
        bf16=hex16(x.to(torch.bfloat16)) + hex16(nan.to(torch.bfloat16)),
        fp16=hex16(x.to(torch.float16)) + hex16(nan.to(torch.float16)),
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "trajectories.json"))
    ap.add_argument("--device", default="cpu", help="cpu (the reference's target) or cuda (for comparison only)")
    ap.add_argument("--impl", default="single", choices=["single", "foreach", "fused"],
                    help="AdamW implementation: foreach=False (default), foreach=True, fused=True")
    args = ap.parse_args()
    global DEVICE, IMPL
    DEVICE, IMPL = args.device, args.impl
    torch.set_num_threads(1)
    major = int(torch.__version__.split(".")[0])
    real_variant = "torch-1.13" if major < 2 else "torch-2"
    cases = make_cases()
    source = "torch.optim.AdamW" if (IMPL, DEVICE) == ("single", "cpu") else "torch.optim.AdamW %s %s" % (IMPL, DEVICE)
    out_cases = [record(c, real_variant, source, run_torch) for c in cases]
    if major < 2 and (IMPL, DEVICE) == ("single", "cpu"):
        for c in cases:
            if c["name"] in TORCH2_FORMULA_CASES:
                out_cases.append(record(c, "torch-2", "formula-2.x", run_formula_2x))
    doc = dict(
        generator="tests/validation/adamw/make_trajectories.py",
        torch_version=torch.__version__,
        impl="%s %s" % ({"single": "single-tensor", "foreach": "foreach", "fused": "fused"}[IMPL], DEVICE),
        python=sys.version.split()[0],
        format="floats are float32 bit patterns, 8 hex digits; *_bf16/*_fp16 are 16-bit patterns, 4 hex digits; "
               "trajectory[k] is the state after step k+1; state starts at zero",
        cases=out_cases,
        conversions=conversions(),
    )
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote %s: %d cases, torch %s" % (args.out, len(out_cases), torch.__version__))


if __name__ == "__main__":
    main()
