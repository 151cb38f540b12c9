#!/usr/bin/env python3
"""The per-phase closed forms of README.md for TRL 1.14.2's DPOTrainer and GRPOTrainer (whole logits), checked
against measured.jsonl.

    python3 tests/validation/stacks/trl114/formulas.py [--jsonl ...] [--markdown] [--terms]

Prints, per case and phase, the predicted bytes, the measured bytes and the residual (predicted/measured - 1).
Standard library only.  The model's shape, parameter counts, the fp32 per-layer activations and the generation
form are ../trl/formulas.py's (imported: nothing of them changes between TRL 1.14.2 and 1.16.0, and the measured
step_start, generation, scoring, reward and optimizer bytes are identical to the 1.16 cases of the same names);
what is new here is the whole-logits head: the logits, selective_log_softmax's saved tensors and per-row
temporaries, the entropy's copy, the reference's logits, the metrics' copies and the backward's two (M, V)
gradients.  bf16-mixed layer activations are taken from the trace (saved_bytes), as ../trl/formulas.py does.
"""
import argparse
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("trl116_formulas", os.path.join(os.path.dirname(HERE), "trl",
                                                                               "formulas.py"))
F = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(F)

ENTROPY_CHUNK = 128        # trl/trainer/utils.py entropy_from_logits(chunk_size=128)
LORA_MODULES_PER_LAYER = 7  # q, k, v, o, gate, up, down


def predict(rec, terms=None):
    """{phase: (predicted, measured)} for one record; terms (a dict) receives the named byte terms."""
    c, meas = rec["config"], rec["measured"]
    pk = meas["phase_peak_bytes"]
    m = F.shape(rec)
    L, H, I, hd, V = m["L"], m["H"], m["I"], m["hd"], m["V"]
    lora = isinstance(c["finetune"], dict)
    prec = c["precision"]
    if prec == "bf16-base-mixed":
        raise NotImplementedError("bf16 weights: not measured for TRL 1.14.2")
    autocast = prec == "bf16-mixed"
    cb = 2 if autocast else 4            # compute dtype bytes (activations of the matmuls)
    dt = 4                               # weights (fp32 here)
    grpo = c["method"] == "grpo"
    Bs, S = F.geometry(rec)              # rows per forward (DPO: 2 x pairs), sequence length
    T = Bs * S
    if grpo:
        Cc = c["completion_len"]
        K = Cc + 1                       # logits_to_keep + 1 positions get logits
        row = Cc                         # scored positions per row
        beta = rec["hf"]["grpo"]["beta"]
    else:
        pairs = Bs // 2
        Cc = c["completion_len"]         # completion tokens per sequence (EOS included)
        K = S                            # the whole sequence gets logits
        row = S - 1                      # every position but the last is scored (the prompt too)
    M = Bs * row                         # scored positions
    P = F.n_params(m)
    t = {}

    # ---- static (step_start): as TRL 1.16 (the same tensors) ----
    rope = 2 * (hd // 2) * 4
    ref_w = P * dt + rope if c["reference"] == "model" else 0
    base, trainable = F.static_common(c, m, lora, dt, extra_weights=ref_w)
    if grpo:
        rows = Bs                        # steps_per_generation 1 here
        batch = rows * S * 8 * 2 + rows * 4 + 8 + (rows * Cc * 4 if beta else 0)
    else:
        batch = 3 * T * 8 + (2 * pairs * 4 if c["reference"] == "precomputed" else 0)
    static = base + batch
    out = {"step_start": (static, meas["step_start_bytes"])}

    # ---- what the policy forward keeps (X) ----
    if prec == "32-true":
        layers = F.layers_fp32(m, Bs, S, lora)
    else:
        layers = sum(v for k, v in meas["saved_bytes"].items() if k.startswith("layer"))
    norm = T * H * 4 + T * 4 + (0 if lora else T * H * 4)   # final RMSNorm: x, rsqrt, x*rsqrt (trained weight)
    # lm_head input, kept when lm_head is trained: DPO the norm output itself (fp32) or its bf16 cast; GRPO the
    # (Bs, K, H) slice, copied (aten::matmul folds a non-contiguous 3-D input when the weight needs grad) or cast
    head_in = 0 if lora else (Bs * K * H * cb if (grpo or autocast) else T * H * 4)
    head_w16 = V * H * 2 if (autocast and not lora) else 0  # the bf16 weight copy MmBackward keeps (autocast)
    logits = Bs * K * V * 4               # fp32 (under autocast: convert_outputs_to_fp32's copy)
    ids = T * 8 if grpo else 0            # GRPO: the cat'ed input_ids (embedding indices, gather index)
    lora_scal = 8 * LORA_MODULES_PER_LAYER * L if lora else 0  # LoRA's scaling: a saved 0-dim float64 per module
    X = layers + norm + head_in + head_w16 + logits + ids + lora_scal
    t.update(layers=layers, norm=norm, head_in=head_in, head_w16=head_w16, logits=logits, ids=ids, X=X)
    grpo_mask = T * 8 if grpo else 0       # GRPO: the cat'ed attention_mask (not saved, alive in _compute_loss)

    # policy forward: its peak is where the logits are allocated
    if autocast:
        fwd_tr = Bs * K * V * 2            # the bf16 logits while convert_outputs_to_fp32 makes the fp32 copy
    elif lora or grpo:
        fwd_tr = T * H * 4                 # the norm output, alive while lm_head runs (not saved / copied)
    else:
        fwd_tr = 0                         # DPO full: the norm output is the saved lm_head input
    out["policy_forward"] = (static + X + grpo_mask + fwd_tr, pk["policy_forward"])

    # selective_log_softmax_and_entropy (policy): the no-grad entropy reshapes the (Bs, row, V) slice of the logits
    # (a copy: the slice is not contiguous) and runs log_softmax, exp, mul on 128-row chunks; the log-prob part
    # keeps the per-row logsumexp (M fp32), its stacked copy / masked output (M fp32) and the mask (M bool)
    ch = min(ENTROPY_CHUNK, M)
    ent_prev = (M // ENTROPY_CHUNK - 1) * ENTROPY_CHUNK * 4 if M >= ENTROPY_CHUNK else 0
    ent_copy = M * V * 4 if Bs > 1 else 0  # one row: the slice is contiguous, reshape is a view
    logps_tr = ent_copy + 3 * ch * V * 4 + M * 4 + M * 4 + M + ent_prev
    # (the log-prob part's own moment, one row's (row, V) logsumexp temporary + gather, row results, amax, is
    # smaller here; it is the larger one only without the entropy's copy, i.e. one row per forward)
    logps_tr = max(logps_tr, row * V * 4 + 2 * M * 4 + row * 4)
    out["policy_logps"] = (static + X + grpo_mask + logps_tr, pk["policy_logps"])
    t.update(ent_copy=ent_copy, ent_chunks=3 * ch * V * 4)

    # the reference's no-grad forward: one decoder layer's MLP moment (inputs_embeds, layer input, attention
    # residual, norm output + gate/up/silu/product 3 T*I in the compute dtype + cos/sin + position ids), under
    # autocast with fp32 weights also autocast's bf16 weight cache (every linear so far: all layers but the last
    # down_proj) -- or its lm_head moment, whichever is larger
    lin_w = (H * m["nh"] * hd + 2 * H * m["kv"] * hd + m["nh"] * hd * H + 3 * H * I)  # one layer's linear weights
    cache_layer = (L * lin_w - I * H) * 2 if autocast else 0
    ref_layer = 3 * T * I * cb + 4 * T * H * 4 + 2 * S * hd * 4 + S * 8 + cache_layer
    if autocast:
        # at the fp32 copy of the logits (autocast's cache is cleared when the forward returns)
        ref_head = Bs * K * V * 2 + Bs * K * V * 4
    else:
        # at lm_head: its input (the norm output) + (GRPO full: the folded copy of the slice) + the logits
        ref_head = T * H * 4 + (Bs * K * H * 4 if (grpo and c["reference"] == "model") else 0) + logits
    # the per-row logsumexp of selective_log_softmax on the reference's logits: one (row, V) fp32 temporary,
    # the gather (M), the row results (M), amax (row)
    ref_logps = logits + row * V * 4 + 2 * M * 4 + row * 4
    t.update(ref_layer=ref_layer, ref_head=ref_head, ref_logps=ref_logps, cache_layer=cache_layer)
    if grpo:
        # scored before the policy forward (in _generate_and_score_completions): the padded prompt/completion ids
        # and masks and their cat (4 T int64), num_items_in_batch
        kept = 4 * T * 8 + 8
    else:
        # DPO: after the policy: its graph X, logsumexp rows, mask, log-probs, entropies, per-sequence sums
        kept = X + grpo_mask + M * 4 + M + 2 * M * 4 + Bs * 4
    if c["reference"] != "precomputed":
        out["reference"] = (static + kept + max(ref_layer, ref_head), pk["reference"])
        out["reference_logps"] = (static + kept + ref_logps, pk["reference_logps"])

    # loss
    if grpo:
        # the (Bs, C) fp32 terms of the dapo loss with the KL (15 alive at its peak: log-probs/entropies and their
        # cat, ratio, exp, clamp, products, KL, ...) and 4 bool masks (from the trace)
        loss = static + X + grpo_mask + 15 * M * 4 + 4 * M + 4 * Bs + 16
    else:
        # the reference's logits stay referenced (ref_outputs) until _compute_loss returns; the metrics index the
        # chosen rows' logits by the completion mask: pairs * C * V fp32 (+ nonzero's (n, 2) int64), then the same
        # for the rejected rows
        precomputed = c["reference"] == "precomputed"
        small = 108 if precomputed else 124  # (pairs,)-sized vectors and scalars at pairs 2
        loss = (static + X + M * 4 + M + 2 * M * 4 + (0 if precomputed else logits + M * 4)
                + pairs * Cc * (V * 4 + 16) + pairs * (S - 1) + small)
    out["loss"] = (loss, pk["loss"])

    # backward: the first nodes (loss, masked_fill, the stack's per-row LogsumexpBackward) run with everything
    # saved alive; the peak is UnbindBackward's cat of the Bs per-row (row, V) gradients while they are alive:
    # 2 M V fp32 on top of X (the logits are still saved by GatherBackward)
    out["backward"] = (static + X + 2 * M * V * 4 + M * 4 + 12, pk["backward"])
    # optimizer: the gradients (fp32) + 12 B of scalars (the clipped total norm, fused AdamW's)
    out["optimizer"] = (static + trainable * 4 + 12, pk["optimizer"])
    if grpo:
        out["generation"] = (static + F.generation_bytes(m, Bs, c["prompt_len"], Cc, prec, lora), pk["generation"])
    out["peak"] = (max(v[0] for k, v in out.items() if k != "step_start"), meas["peak_allocated_bytes"])
    if terms is not None:
        terms.update(t)
    return out


COLS = ("step_start", "generation", "reference", "reference_logps", "policy_forward", "policy_logps", "loss",
        "backward", "optimizer", "peak")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default=os.path.join(HERE, "measured.jsonl"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--terms", action="store_true", help="print the named byte terms per case")
    args = ap.parse_args()
    recs = [json.loads(ln) for ln in open(args.jsonl) if ln.strip()]
    worst = 0.0
    if args.markdown:
        print("| case | " + " | ".join(COLS) + " |")
        print("|---|" + "---|" * len(COLS))
    for r in recs:
        terms = {}
        out = predict(r, terms)
        res = {k: p / mm - 1 for k, (p, mm) in out.items()}
        worst = max([worst] + [abs(v) for v in res.values()])
        if args.markdown:
            print("| %s | %s |" % (r["name"], " | ".join("%+.2f%%" % (100 * res[k]) if k in res else "-"
                                                           for k in COLS)))
            continue
        print(r["name"])
        for k in COLS:
            if k in out:
                p, mm = out[k]
                print("  %-16s predicted %11d  measured %11d  %+9d B  %+.3f%%" % (k, p, mm, p - mm, 100 * res[k]))
        if args.terms:
            print("  terms: " + ", ".join("%s=%d" % kv for kv in terms.items()))
    if not args.markdown:
        print("largest |residual|: %.3f%%" % (100 * worst))


if __name__ == "__main__":
    main()
