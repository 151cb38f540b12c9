#!/usr/bin/env python3
"""Times torch.optim.AdamW on the GPU (fused=True, foreach=True, single-tensor foreach=False) on the same
sizes as adamw_bandwidth, for comparison with the vramcalc kernel. One parameter tensor of N float32 elements
(plus an 8-tensor split of it, closer to a model's many parameters, for foreach/fused).
Usage: python3 torch_adamw_bench.py [--n ELEMENTS] [--iters K] [--out FILE.json]"""
import argparse
import json
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 28)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", default="torch_adamw_bench.json")
    a = ap.parse_args()
    res = dict(torch_version=torch.__version__, cuda=torch.version.cuda, elements=a.n, iterations=a.iters,
               bytes_per_element_fp32=28, runs=[])
    if not torch.cuda.is_available():
        res["error"] = "no CUDA device"
        json.dump(res, open(a.out, "w"), indent=1)
        print("torch_adamw_bench: no CUDA device: skipped")
        return 77
    res["device"] = torch.cuda.get_device_name()
    for tensors in (1, 8):
        for impl in ("fused", "foreach", "single"):
            kw = dict(fused=True) if impl == "fused" else dict(foreach=(impl == "foreach"))
            try:
                ps = [torch.nn.Parameter(torch.full((a.n // tensors,), 0.01, device="cuda")) for _ in range(tensors)]
                for p in ps:
                    p.grad = torch.full_like(p, 0.001)
                opt = torch.optim.AdamW(ps, lr=1e-3, **kw)
                for _ in range(3):
                    opt.step()
                torch.cuda.synchronize()
                t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0.record()
                for _ in range(a.iters):
                    opt.step()
                t1.record()
                torch.cuda.synchronize()
                ms = t0.elapsed_time(t1) / a.iters
                n = (a.n // tensors) * tensors
                gbs = 28.0 * n / (ms * 1e6)
                res["runs"].append(dict(impl=impl, tensors=tensors, ms_per_step=ms, gb_per_s_at_28B=gbs))
                print("torch AdamW %-8s %d tensor(s): %.3f ms/step, %.1f GB/s (28 B/element)" % (impl, tensors, ms, gbs))
                del opt, ps
                torch.cuda.empty_cache()
            except Exception as e:  # an implementation missing from this torch: record and go on
                res["runs"].append(dict(impl=impl, tensors=tensors, error=repr(e)[:300]))
                print("torch AdamW %s: %r" % (impl, e))
    json.dump(res, open(a.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
