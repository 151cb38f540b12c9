#!/usr/bin/env python3
"""A few real training steps under torch.cuda.memory._record_memory_history(), written as compact JSON for the
caching-allocator replay (core/memory/caching_allocator.*) to be checked against: the snapshot's segments, the
reserved and allocated peaks, and the allocation trace as replay events.

    python3 tests/cuda/memory_snapshot.py --out DIR [--alloc-conf 'expandable_segments:True'] [--steps 3]
    python3 tests/cuda/memory_snapshot.py --dry-run --out DIR      # on the CPU: the same model and step, no trace

PYTORCH_CUDA_ALLOC_CONF is read when CUDA starts, so each --alloc-conf runs in a process of its own (the script
re-runs itself). One file per configuration: memory_snapshot_<name>.json. A plain Llama-style decoder in torch
only (no downloads): RMSNorm, SwiGLU, rotary-free attention through scaled_dot_product_attention, AdamW.
"""
import argparse
import json
import os
import subprocess
import sys
import time

CONFIGS = {  # name -> PYTORCH_CUDA_ALLOC_CONF
    "default": "",
    "expandable": "expandable_segments:True",
    "max_split_64": "max_split_size_mb:64",
    "roundup_4": "roundup_power2_divisions:4",
}


def build_model(torch, layers, hidden, heads, ffn, vocab):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.RMSNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden, bias=False)
            self.proj = nn.Linear(hidden, hidden, bias=False)
            self.norm2 = nn.RMSNorm(hidden)
            self.gate_up = nn.Linear(hidden, 2 * ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, heads, hidden // heads).unbind(2)
            a = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, hidden))
            g, u = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
            return x + self.down(torch.nn.functional.silu(g) * u)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.norm = nn.RMSNorm(hidden)
            self.head = nn.Linear(hidden, vocab, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens)
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.norm(x))

    return Decoder()


def trace_events(trace):
    """The snapshot's device trace as replay events: [op, stream, tensor, bytes] with ops alloc/free/segment_*;
    tensor ids are given per address as the trace allocates them."""
    live, next_id, out = {}, 0, []
    for e in trace:
        action, addr, size, stream = e["action"], e["addr"], e["size"], e.get("stream", 0)
        if action == "alloc":
            live[addr] = next_id
            out.append(["alloc", stream, next_id, size])
            next_id += 1
        elif action in ("free_requested",) and addr in live:
            out.append(["free", stream, live.pop(addr), size])
        elif action in ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom", "free_completed"):
            out.append([action, stream, -1, size])
    return out


def run_one(args, name, conf):
    import torch

    device = "cpu" if args.dry_run else "cuda"
    torch.manual_seed(0)
    model = build_model(torch, args.layers, args.hidden, args.heads, args.ffn, args.vocab).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=device)
    cuda = device == "cuda"
    if cuda:
        torch.cuda.memory._record_memory_history(max_entries=200000)
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    for _ in range(args.steps):
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(tokens[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del logits, loss
    result = {
        "name": name, "alloc_conf": conf, "torch": torch.__version__, "device": device,
        "model": {k: getattr(args, k) for k in ("layers", "hidden", "heads", "ffn", "vocab", "batch", "seq")},
        "steps": args.steps, "seconds": round(time.time() - t0, 3),
    }
    if cuda:
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        stats = torch.cuda.memory_stats()
        result.update({
            "gpu": torch.cuda.get_device_name(), "cuda": torch.version.cuda,
            "peak_allocated": torch.cuda.max_memory_allocated(), "peak_reserved": torch.cuda.max_memory_reserved(),
            "reserved": torch.cuda.memory_reserved(), "allocated": torch.cuda.memory_allocated(),
            "num_alloc_retries": stats.get("num_alloc_retries", 0), "num_device_alloc": stats.get("num_device_alloc", 0),
            "segments": [[s["address"], s["total_size"], s["stream"], s["segment_type"],
                          [[b["size"], b["state"]] for b in s["blocks"]]] for s in snap["segments"]],
            "trace": trace_events(snap["device_traces"][0] if snap["device_traces"] else []),
        })
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"memory_snapshot_{name}.json")
    with open(path, "w") as f:
        json.dump(result, f, separators=(",", ":"))
    print(f"{name}: {path} ({os.path.getsize(path)} bytes, {result['seconds']} s)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--dry-run", action="store_true", help="run the step on the CPU, without the trace")
    p.add_argument("--config", choices=sorted(CONFIGS), help="one configuration, in this process")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=2816)
    p.add_argument("--vocab", type=int, default=32000)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    args = p.parse_args()
    if min(args.steps, args.layers, args.hidden, args.heads, args.ffn, args.vocab, args.batch, args.seq) < 1:
        p.error("sizes and --steps must be positive")
    if args.hidden % args.heads:
        p.error("--hidden must be a multiple of --heads")
    if args.config:
        run_one(args, args.config, CONFIGS[args.config])
        return 0
    failed = 0
    for name, conf in CONFIGS.items():
        env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
        cmd = [sys.executable, os.path.abspath(__file__), "--config", name] + [
            a for a in sys.argv[1:]]
        failed |= subprocess.call(cmd, env=env) != 0
        if args.dry_run:
            break  # the CPU step does not depend on the allocator's configuration
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
