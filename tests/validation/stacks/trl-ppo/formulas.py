#!/usr/bin/env python3
"""The per-phase closed forms of README.md (PPO, TRL 1.12.0), checked against measured.jsonl.

    python3 tests/validation/stacks/trl-ppo/formulas.py [--jsonl ...] [--markdown]

Prints, per case and phase, predicted bytes, measured bytes and the residual (predicted/measured - 1).  No torch.
Notation (README): b micro batch (per_device_train_batch_size), Br rollout batch (b * grad_accum), Bc rollout
chunk (min(local_rollout_forward_batch_size, Br)), n_ch = ceil(Br / Bc), Q query length, C response length,
S = Q + C, L layers, H hidden, I ffn, kv/hd kv heads / head dim, V vocab, P policy parameters,
Pv = P - V*H + H (value / reward model: no lm_head, score Linear(H, 1)), w weight bytes.
The training activations are a closed form for fp32 (Llama, SDPA, no dropout, every layer trained); for bf16 they
are taken from the traced saved bytes (vramcalc's bf16 activation model is validated elsewhere).
"""
import argparse
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def shape(rec):
    hf = rec["config"]["model"]["hf_config"]
    return dict(L=hf["num_hidden_layers"], H=hf["hidden_size"], I=hf["intermediate_size"],
                nh=hf["num_attention_heads"], kv=hf["num_key_value_heads"], hd=hf["head_dim"], V=hf["vocab_size"])


def n_params(m):
    L, H, I, nh, kv, hd, V = (m[k] for k in ("L", "H", "I", "nh", "kv", "hd", "V"))
    per_layer = H * nh * hd + 2 * H * kv * hd + nh * hd * H + 3 * H * I + 2 * H
    return 2 * V * H + L * per_layer + H


def n_lora(m, r=8):
    L, H, I, nh, kv, hd = (m[k] for k in ("L", "H", "I", "nh", "kv", "hd"))
    dims = [(H, nh * hd), (H, kv * hd), (H, kv * hd), (nh * hd, H), (H, I), (H, I), (I, H)]
    return L * sum(r * (i + o) for i, o in dims)


def layer_saved_fp32(m, b, S, lora):
    """Saved for backward by one decoder layer, fp32 (the trl stack's closed form; K/V are the KV cache's copies)."""
    H, I, nh, kv, hd = m["H"], m["I"], m["nh"], m["kv"], m["hd"]
    T = b * S
    # written out: 2TH norm inputs + 2TH x*rsqrt + TH qkv input + TH q + 2*T*kv*hd k,v + TH attn-out + TH mlp input
    el = 2 * T * H + (0 if lora else 2 * T * H) + T * H + T * nh * hd + 2 * T * kv * hd + T * nh * hd + T * H \
        + 4 * T * I + 2 * T + b * nh * S
    if lora:
        el += 7 * T * 8
    return el * 4


def repaired_trace(saved, L):
    """bf16 cases: the traced saved bytes, with every non-first layer taken as the largest non-first layer of its
    model (BlockSavedTracer now and then misses one (T, ffn) storage in one layer; see README)."""
    tot = saved.get("outside", 0)
    for mdl in ("policy", "value"):
        tot += saved["%s_layer0" % mdl] + (L - 1) * max(saved["%s_layer%d" % (mdl, i)] for i in range(1, L))
    return tot


def predict(rec):
    c, meas = rec["config"], rec["measured"]
    m = shape(rec)
    L, H, I, nh, kv, hd, V = (m[k] for k in ("L", "H", "I", "nh", "kv", "hd", "V"))
    lora = isinstance(c["finetune"], dict)
    prec = c["precision"]
    w = 2 if prec == "bf16-true" else 4       # load dtype of all four models
    a = w                                     # rollout forwards: no autocast (they bypass the prepared wrapper)
    at = w                                    # training residual stream / hidden states (fp32 under bf16-mixed)
    kvb = w                                   # KV cache (fp32 under bf16-mixed: rope promotes K, V follows)
    lv = 2 if prec == "bf16-true" else 4      # training logits as kept in `output` (bf16-mixed: accelerate's
    #                                           convert_outputs_to_fp32 copy)
    b = c["micro_batch"]
    Br = b * c["grad_accum"] * c["num_mini_batches"]
    Bc = min(c["rollout_forward_batch"], Br)
    n_ch = math.ceil(Br / Bc)
    Q, C = c["prompt_len"], c["completion_len"]
    S = Q + C
    E, ga = rec["hf"]["ppo"]["num_ppo_epochs"], c["grad_accum"]
    P = n_params(m)
    Pv = P - V * H + H
    T = b * S
    out = {}

    # ---- static: what lives across iterations ----
    rope = 2 * (hd // 2) * 4                               # inv_freq + original_inv_freq, fp32, per model
    policy = P * w + (n_lora(m) * 4 if lora else 0) + rope
    ref = P * w + rope if not lora else 0
    value = reward = Pv * w + rope
    n_tensors = (2 * 7 * L if lora else 3 + 9 * L) + (3 + 9 * L)
    opt = (2 * 4 * n_lora(m) if lora else 2 * w * P) + 2 * w * Pv + 4 * n_tensors  # moments in the param dtype
    logitss = n_ch * Bc * C * V * 4                        # generate's scores, fp32, kept from the previous rollout
    qr = n_ch * Bc * S * 8                                 # query_responses (int64), viewed by query_response
    # small leftovers of the previous iteration and the batches (old `data` and the one being yielded):
    small = 4 * Br * Q * 8 + Bc * S * 8 + Bc * 8 + 2 * Br * C * 4 + C * Br * 4 + Br * 4 + b * C * 4 + 7 * E * ga * 4
    static = policy + ref + value + reward + opt + logitss + qr + small
    out["step_start"] = (static, meas["step_start_bytes"])
    grads = (n_lora(m) * 4 if lora else P * w) + Pv * w
    buffers = 84 * Br * C                                  # rollout buffers during the updates (approximate)

    # ---- rollout ----
    KV = lambda B, t: L * 2 * B * kv * hd * t * kvb        # noqa: E731
    # generation: the returned output keeps the KV cache while its scores are stacked; the list of the previous
    # chunks' stacked scores is alive; then pad() copies them all
    gen_stack = KV(Bc, S - 1) + (n_ch - 1) * Bc * C * V * 4 + 2 * Bc * C * V * 4 + 2 * Bc * S * 8
    gen_pad = 2 * n_ch * Bc * C * V * 4
    out["generation"] = (static + max(gen_stack, gen_pad), meas["phase_peak_bytes"]["generation"])
    out["logprob"] = (static + C * V * 4 + Bc * C * 4, meas["phase_peak_bytes"]["logprob"])

    def nograd_layer_peak(B):
        # no-grad backbone with output_hidden_states: the hidden-states tuple (embedding + L-1 layer outputs), the
        # last layer's residual and MLP-input norm, its MLP (gate freed after silu: silu, up, silu*up), cos/sin
        return (L + 2) * B * S * H * a + 3 * B * S * I * a + 2 * B * S * hd * a
    small_r = 2 * Bc * S * 8 + Bc * Q  # position ids + masked input ids (int64), the bool mask
    ref_layer = KV(Bc, S) + nograd_layer_peak(Bc)
    # the reference's full logits (Bc, S, V) in the weight dtype, then its per-row log-softmax temporary
    ref_head = KV(Bc, S) + (L + 1) * Bc * S * H * a + Bc * S * V * a + C * V * 4
    out["reference"] = (static + max(ref_layer, ref_head) + small_r + Bc * C * 4, meas["phase_peak_bytes"]["reference"])
    out["value"] = (static + nograd_layer_peak(Bc) + small_r + 2 * Bc * C * 4, meas["phase_peak_bytes"]["value"])
    out["reward"] = (static + nograd_layer_peak(Bc) + small_r + 3 * Bc * C * 4, meas["phase_peak_bytes"]["reward"])

    # ---- training: value backbone + policy (with grad, KV caches built, full logits) ----
    A_loss = b * C * 8 + b * C * 4 + 12 * b * C * 4 + 4 * b * C + 16   # gather index, logsumexps, PPO loss terms
    if prec == "32-true":
        pol_layers = L * layer_saved_fp32(m, b, S, lora) + 2 * b * S * hd * 4
        if lora:
            pol_layers -= T * H * 4 + T * 4                # layer 0's first norm: the frozen embedding needs no grad
        val_layers = L * layer_saved_fp32(m, b, S, False) + 2 * b * S * hd * 4
        # final norms: input, rsqrt, x*rsqrt, normed (head input); a frozen norm + lm_head (LoRA) keep input, rsqrt
        head_in = lambda trained: 3 * T * H * 4 + T * 4 if trained else T * H * 4 + T * 4  # noqa: E731
        A = val_layers + head_in(True) + pol_layers + head_in(not lora) + b * S * 8 + b * S * V * 4 + A_loss
        if lora:
            A += 2 * T * H * 4                             # not saved (frozen embedding / lm_head) but kept by the
            #                                              policy's output.hidden_states: the embedding output and
            #                                              the final normed hidden state
    else:
        A = repaired_trace(meas["saved_bytes"], L)
        if prec == "bf16-true":
            A += b * S * V * 2 - b * C * V * 2            # `output.logits` (bf16) is not saved but stays bound;
            #                                              the per-row log_softmax outputs are (in the trace)
    # after backward, `output` keeps the policy's full logits, its KV cache and hidden states (L+1) until the
    # minibatch's del
    left = b * S * V * lv + KV(b, S) + (L + 1) * T * H * at
    # gradient accumulation: at the next micro batch, the previous `output` (until the forward rebinds it) and its
    # entropy softmax (b, C, V) are alive, and so are the accumulated gradients
    acc = (grads + b * C * V * lv) if ga > 1 else 0
    prev = left if ga > 1 else 0
    base = static + buffers + acc
    kv32 = L * 2 * b * kv * hd * S * 4
    if prec == "bf16-mixed":
        # autocast casts K/V to bf16 for SDPA and lm_head/score save bf16 casts of their input: the policy's fp32
        # KV cache and fp32 final normed hidden state stay bound in `output` besides what is saved
        A += kv32 + T * H * 4
    fwd = base + prev + A - A_loss
    if prec == "bf16-mixed":
        # the peak is the lm_head's bf16 logits (the fp32 copy the log-softmax saves comes after), while the
        # critic's output (its fp32 KV cache, final normed state) is still bound inside the wrapper's forward
        fwd += b * S * V * 2 - b * S * V * 4 + kv32 + T * H * 4
    out["policy_forward"] = (fwd, meas["phase_peak_bytes"]["policy_forward"])
    # loss: per-row logsumexp (fp32) / log_softmax (bf16) temporaries over (C, V)
    # (gradient accumulation: the previous micro batch's `logits` view keeps its (b, S, V) logits until rebound)
    out["loss"] = (base + A + C * V * 4 + (b * S * V * lv if ga > 1 else 0), meas["phase_peak_bytes"]["loss"])
    # backward of the in-place `logits /= temperature` on the response slice (CopySlices): two (b, S, V) and two
    # (b, C, V) buffers in the logits dtype on top of everything saved
    out["backward"] = (base + A + 2 * b * S * V * lv + 2 * b * C * V * lv, meas["phase_peak_bytes"]["backward"])
    # optimizer: all gradients (policy trainable + whole value model) + this micro batch's `output` leftovers
    out["optimizer"] = (static + buffers + grads + left + (b * C * V * lv if ga > 1 else 0),
                        meas["phase_peak_bytes"]["optimizer"])
    # entropy statistics: leftovers + softmax (b, C, V) + one (b, C, V) temporary
    # (with gradient accumulation the first micro batch's statistics run with its gradients not yet zeroed)
    out["entropy_stats"] = (static + buffers + left + 2 * b * C * V * lv + (grads if ga > 1 else 0),
                            meas["phase_peak_bytes"]["entropy_stats"])
    out["peak"] = (max(v[0] for k, v in out.items() if k != "step_start"), meas["peak_allocated_bytes"])
    return out


COLS = ("step_start", "generation", "logprob", "reference", "value", "reward", "policy_forward", "loss", "backward",
        "optimizer", "entropy_stats", "peak")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default=os.path.join(HERE, "measured.jsonl"))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    worst = {}
    if args.markdown:
        print("| case | " + " | ".join(COLS) + " |")
        print("|---" * (len(COLS) + 1) + "|")
    for line in open(args.jsonl):
        rec = json.loads(line)
        res = predict(rec)
        if args.markdown:
            print("| %s | %s |" % (rec["name"], " | ".join(
                "%+.2f%%" % (100 * (res[k][0] / res[k][1] - 1)) if k in res else "-" for k in COLS)))
        else:
            print(rec["name"])
            for k, (p, mm) in res.items():
                print("    %-15s %11d / %11d  %+.3f%%  (%+d B)" % (k, p, mm, 100 * (p / mm - 1), p - mm))
        for k, (p, mm) in res.items():
            worst[k] = max(worst.get(k, 0), abs(p / mm - 1))
    print("largest |residual| per phase:", ", ".join("%s %.2f%%" % (k, 100 * v) for k, v in worst.items()))


if __name__ == "__main__":
    main()
