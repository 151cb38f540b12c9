#!/usr/bin/env python3
"""Closed-form peak-memory formulas derived from measured_cpu.jsonl, and their check.

    /usr/bin/python3 tests/validation/formulas.py [tests/validation/measured_cpu.jsonl]

prints, per case, the predicted persistent / forward-end / log-softmax-backward /
first-layer-backward figures and the error against the measurement.  The
symbols follow the README: b micro_batch, s seq_len, h hidden, a heads,
kv kv_heads, d=h/a, f ffn, V vocab, L layers.  ``CPU_ONLY`` terms (Python
float scalars wrapped into 0-dim CPU tensors, the CPU RNG state stored by
checkpoint, optimizer 'step' counters) are kept separate because a CUDA run
does not put them on the GPU.  ``TORCH113`` marks the extra tensor that
torch 1.13's MeanBackward1 saves (the whole pow() output in RMSNorm).
"""
import json
import sys

TORCH113 = True


def params(a, lora=None):
    h, f, V, L = a["hidden"], a["ffn"], a["vocab"], a["layers"]
    nh, kv = a["heads"], a["kv_heads"]
    d = h // nh
    tensors = []  # (numel, kind)  kind: linear/other
    if a["norm"] == "layernorm":
        tensors += [(V * h, "emb"), (a["max_positions"] * h, "emb")]
        for _ in range(L):
            tensors += [(h, "o"), (h, "o"), (h * 3 * h, "lin"), (3 * h, "o"), (h * h, "lin"), (h, "o"),
                        (h, "o"), (h, "o"), (h * f, "lin"), (f, "o"), (f * h, "lin"), (h, "o")]
        tensors += [(h, "o"), (h, "o")]
    else:
        tensors += [(V * h, "emb")]
        for _ in range(L):
            tensors += [(h * nh * d, "lin"), (h * kv * d, "lin"), (h * kv * d, "lin"), (nh * d * h, "lin"),
                        (h * f, "lin"), (h * f, "lin"), (f * h, "lin"), (h, "o"), (h, "o")]
        tensors += [(h, "o")]
    tied = a.get("tied_embeddings")
    if not tied:
        tensors += [(V * h, "lin")]
    return tensors


def lora_tensors(a, ft):
    r = ft.get("rank", 8)
    h, nh, kv = a["hidden"], a["heads"], a["kv_heads"]
    d = h // nh
    out = []
    for _ in range(a["layers"]):
        for t in ft["targets"]:
            o = {"q_proj": nh * d, "k_proj": kv * d, "v_proj": kv * d, "o_proj": h, "c_attn": 3 * h}[t]
            out += [(r * h, "lora"), (o * r, "lora")]
    return out


def predict(cfg):
    a = cfg["model"]
    b, s = cfg["micro_batch"], cfg["seq_len"]
    h, f, V, L, nh = a["hidden"], a["ffn"], a["vocab"], a["layers"], a["heads"]
    d = h // nh
    bs, bsh, bsf, bass = b * s, b * s * h, b * s * f, b * nh * s * s
    prec = cfg["precision"]
    gpt2 = a["norm"] == "layernorm"
    drop = 1 if (gpt2 and a.get("dropout", 0) > 0) else 0
    ckpt = cfg["checkpointing"] == "full"
    ft = cfg["finetune"]
    lora = isinstance(ft, dict)
    pd = 2 if prec == "bf16-true" else 4          # parameter / grad / state dtype
    ca = 4 if prec == "32-true" else 2            # matmul activation dtype
    cm = 2 if prec == "bf16-true" else 4          # residual-stream ("model") dtype
    base = params(a)
    P = sum(n for n, _ in base)
    lin = sum(n for n, k in base if k == "lin") + (V * h if (a.get("tied_embeddings") and True) else 0)
    lt = lora_tensors(a, ft) if lora else []
    Pl = sum(n for n, _ in lt)
    # ---------------- persistent (start of step) ----------------
    train = lt if lora else base
    Ptr = sum(n for n, _ in train)
    ntr = len(train)
    opt = cfg["optimizer"]
    sd = 4 if lora else pd                         # adapters are fp32 (PEFT autocast_adapter_dtype)
    states = {"adamw": 2, "sgd-momentum": 1}[opt] * Ptr * sd
    steps_cpu = 4 * ntr if opt == "adamw" else 0  # CPU_ONLY: AdamW 'step' scalar tensors
    buffers = 0 if gpt2 else (d // 2) * pd
    persistent = P * pd + Pl * 4 + states + steps_cpu + buffers + 16 * bs
    grads = Ptr * sd
    # ---------------- saved activations ----------------
    cpu_scal = 0
    if gpt2:
        ln = 4 if prec != "bf16-true" else 2       # LayerNorm runs in fp32 under CPU autocast
        lay = (2 * cm * bsh + 4 * ln * bs + 2 * ca * bsh + 4 * ca * bsh + drop * 2 * ca * bsh + 5 * ca * bsf
               + (4 if prec == "bf16-mixed" else ca) * bass      # softmax output
               + (2 * bass if prec == "bf16-mixed" and not drop else 0)  # .type(bf16) copy
               + drop * 2 * ca * bass                # attn dropout mask + output
               + ca)                                 # the 0-dim divisor tensor (on GPU too)
        cpu_scal = 24 * L
        model = cm * bsh * (1 + drop) + 8 * s        # embeds (+dropout mask), position_ids
        final = 2 * ln * bs + ca * bsh               # ln_f stats + lm_head input
        last_x = cm * bsh
    else:
        if prec == "32-true":
            norm = (4 if TORCH113 else 0) * bsh + 4 * bs + 4 * bsh   # pow, rsqrt, pre (x is residual)
            outs = 4 * bsh
            norm_n = lambda n: norm + outs
        elif prec == "bf16-true":
            norm_n = lambda n: 4 * bsh + (4 if TORCH113 else 0) * bsh + 4 * bs + 2 * bsh + 2 * bsh
        else:  # bf16-mixed: fp32 norm, then every consumer Linear casts its input to bf16
            norm_n = lambda n: (4 if TORCH113 else 0) * bsh + 4 * bs + 4 * bsh + n * 2 * bsh
        resid = 0 if prec == "bf16-true" else 2 * 4 * bsh
        soft = 4 * bass + (2 * bass if ca == 2 else 0)
        lay = resid + norm_n(3) + norm_n(2) + 4 * ca * bsh + soft + 4 * ca * bsf
        cpu_scal = 8 * L
        model = (0 if prec == "bf16-true" else 4 * bsh) + 2 * s * d * cm      # embeds, cos+sin
        final = norm_n(1)
        last_x = 0 if prec == "bf16-true" else 4 * bsh
    casts = 2 * lin if prec == "bf16-mixed" else 0   # autocast bf16 weight copies (held by autograd)
    mask = b * s * s * cm
    lsm = 4 * bs * V
    loss_saved = lsm + 8 * bs + 4
    S_all = L * lay + model + final + casts + loss_saved
    r = {"persistent": persistent, "grads": grads, "layer_saved": lay, "S_all": S_all, "cpu_scalars": cpu_scal}
    logits_fwd = 4 * bs * V if prec == "32-true" else 2 * bs * V + 4 * bs * V
    # forward-end extras: padded labels (b, s+1) int64 and (llama) cache_position int64 are
    # still referenced by locals; for b == 1 labels[..., 1:] is already contiguous (no 8bs copy);
    # under bf16-mixed the autocast cache also holds bf16 copies of the Linear/Conv1D biases.
    biases = 0
    if gpt2 and prec == "bf16-mixed":
        biases = 2 * L * (3 * h + h + f + h)
    fwd_extra = 8 * b * (s + 1) + (0 if gpt2 else 8 * s) - (8 * bs if b == 1 else 0) + biases + 4
    if not ckpt:
        # A: forward end, inside nll_loss_forward (logits, fp32 copy, log-softmax, mask all alive)
        r["A_forward_end"] = persistent + S_all + logits_fwd + mask + fwd_extra + cpu_scal
        # B: LogSoftmaxBackward: nll grad + lsm grad (target/total_weight already released)
        r["B_lsm_backward"] = persistent + S_all - 8 * bs - 4 + 4 + 4 + 2 * 4 * bs * V + cpu_scal
    else:
        ck_in = L * cm * bsh
        S_ck = ck_in + last_x + model - (cm * bsh * (1 + drop) if gpt2 else (0 if prec == "bf16-true" else 4 * bsh)) \
            + (8 * s + cm * bsh * drop if gpt2 else 0) + final + loss_saved + (casts and 2 * V * h)
        r["S_ckpt"] = S_ck
        rng = 5056 * L                                   # CPU_ONLY: CPU RNG state per checkpoint
        r["A_forward_end"] = persistent + S_ck + logits_fwd + mask + fwd_extra + rng
        r["B_lsm_backward"] = persistent + S_ck - 8 * bs + 8 + 2 * 4 * bs * V + mask + rng
    # optimizer.step peak (grads alive, +4 loss scalar, +12 small scalars)
    sizes = [n * sd for n, _ in train]
    if opt == "adamw" and cfg["optimizer_impl"] == "foreach":
        extra = 2 * sum(sizes)                     # _foreach_sqrt + _foreach_add(eps) results
    elif opt == "adamw":                           # previous denom + sqrt + div of the current param
        extra = max((sizes[i - 1] if i else 0) + 2 * sizes[i] for i in range(len(sizes)))
    else:
        extra = 0                                  # SGD momentum is fully in place
    r["optimizer_step"] = persistent + grads + extra + 16
    return r


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/validation/measured_cpu.jsonl"
    for line in open(path):
        rec = json.loads(line)
        c, m = rec["config"], rec["measured"]
        p = predict(c)
        e0 = p["persistent"] - m["step_start_bytes"]
        eA = p["A_forward_end"] - m["forward_peak_bytes"]
        eB = p["B_lsm_backward"] - m["backward_peak_bytes"]
        eO = p["optimizer_step"] - m["optimizer_peak_bytes"]
        pk = max(p["A_forward_end"], p["B_lsm_backward"], p["optimizer_step"])
        print("%-44s start=%d fwdA=%d bwdB=%d opt=%d  peak_err=%d (%.3f%%)  %s" % (
            rec["name"], e0, eA, eB, eO, pk - m["peak_allocated_bytes"],
            100.0 * (pk - m["peak_allocated_bytes"]) / m["peak_allocated_bytes"], m["peak_op"]))


if __name__ == "__main__":
    main()
