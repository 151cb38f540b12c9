#!/usr/bin/env python3
"""The per-phase closed forms of README.md ("How a calculator should model this"), checked against measured.jsonl.

    python3 tests/validation/stacks/trl/formulas.py [--jsonl tests/validation/stacks/trl/measured.jsonl]

Prints, for every case and phase, the predicted bytes, the measured bytes and the residual (predicted/measured - 1).
No torch needed.  The activations saved by the policy forward are the closed form below for fp32 (Llama, SDPA,
no dropout: what vramcalc's finetune model already computes for this stack); for bf16 autocast they are taken
from the measured trace (``saved_bytes``), since vramcalc's existing bf16-mixed / bf16-base-mixed activation
model (validated by measure_hf.py and stacks/qlora) is not what is being checked here.  Everything TRL-specific
(the reference model, the fused LM head and its tiles, generation, the buffered batch) is a closed form.
Methods: DPO (any loss type) and KTO (`predict`: fused LM head), GRPO and RLOO (`predict`), ORPO and SimPO
(`predict_logits`: full fp32 logits), distillation (`predict_distill`: ChunkedDivergenceFunction).
"""
import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# TRL 1.16.0 trl/kernels/chunked_logprob.py and trl/trainer/utils.py
TOKEN_CHUNK = 4096      # TOKEN_CHUNK_SIZE: rows of the projection tile
VOCAB_CHUNK = 32768     # _CHUNKED_LOGPROB_CHUNK_SIZE: columns of mm_buf (allocated at this width even if V is smaller)


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


def n_param_tensors(m, lora):
    return m["L"] * 7 * 2 if lora else 3 + m["L"] * 9


def geometry(rec):
    c = rec["config"]
    if c["method"] in ("dpo", "ipo", "orpo", "simpo"):
        Bs = 2 * c["micro_batch"]          # pairs -> chosen + rejected rows in one forward
    else:
        Bs = c["micro_batch"]              # GRPO completions, KTO examples, distillation sequences
    S = c["prompt_len"] + c["completion_len"]
    return Bs, S


def activations_fp32(m, Bs, S, lora, N):
    """Saved for backward by the policy forward, fp32, unique storages (the trace's saved_bytes total)."""
    L, H, I, nh, hd = m["L"], m["H"], m["I"], m["nh"], m["hd"]
    T = Bs * S
    # per layer: norm inputs (2), x*rsqrt of each norm when its weight is trained (2), q/k/v input, q, k, v,
    # attention output (= o_proj input), gate/up input: 9 T*H with GQA k=v=T*H/2 here (kv*hd = H/2);
    # MLP: gate out, up out, silu out, silu*up (4 T*I); rsqrt (2 T); SDPA logsumexp (Bs*nh*S)
    qkv = T * (nh * hd + 2 * m["kv"] * hd) * 4
    layer = (2 * T * H + (0 if lora else 2 * T * H) + T * H + T * H + T * H) * 4 + qkv \
        + 4 * T * I * 4 + 2 * T * 4 + Bs * nh * S * 4
    if lora:
        layer += 7 * T * 8 * 4  # lora_B keeps lora_A's (T, r) output
    first = layer + 2 * S * hd * 4  # rotary cos/sin (1,1,S,hd), saved once
    if lora:
        first -= T * H * 4 + T * 4  # layer 0's first norm: its input (the frozen embedding) needs no grad
    outside = T * H * 4 + T * 4 + (0 if lora else T * H * 4)  # final norm
    head = N * H * 4 + N * 8 + N * 4 + N * 4 + Bs * (S - 1)  # hidden copy, targets, log_z, entropy, label mask
    loss = {"dpo": 16, "kto": 72}.get(rec_method[0], 0)   # the loss's few (pairs,) / (examples,) tensors
    return first + (L - 1) * layer + outside + head + loss


rec_method = [None]


def generation_bytes(m, Bg, Pl, C, prec, lora):
    """In-process `generate` of Bg rows: max(prefill, decode end) above step_start (GRPO and distillation)."""
    L, H, I, kv, hd, V = m["L"], m["H"], m["I"], m["kv"], m["hd"], m["V"]
    P = n_params(m)
    autocast = prec in ("bf16-mixed", "bf16-base-mixed")
    dt = 2 if prec == "bf16-base-mixed" else 4
    a = 4 if prec != "bf16-base-mixed" else 2
    kvb = 4 if prec != "bf16-base-mixed" else 2       # KV dtype: fp32 under autocast too (rope promotes K)
    kv_cache = lambda t: L * 2 * Bg * kv * hd * t * kvb  # noqa: E731
    w16 = (P - V * H) * 2 if autocast and dt == 4 else 0  # autocast's bf16 copies of all but the embedding
    prefill = kv_cache(Pl) + (3 + (1 if lora else 0)) * Bg * Pl * I * a + 4 * Bg * Pl * H * a + 2 * Pl * hd * 4
    if w16:
        prefill = kv_cache(Pl) + w16 + 2 * Bg * Pl * I * 2
    if lora and dt == 2:
        # CPU, bf16 weights, frozen lm_head: aten::matmul does not fold the (Bg, 1, H) last-token slice and
        # runs bmm on lm_head's weight expanded and copied per row (observed, see README)
        prefill = kv_cache(Pl) + Bg * V * H * 2
    decode = kv_cache(Pl + C - 1) + 2 * L * Bg * kv * hd * (Pl + C - 1) * kvb // L + w16
    return max(prefill, decode)


def predict(rec, rloo=None):
    """DPO, KTO, GRPO; RLOO records with rloo="grpo" (GRPO's forms, the old log-probs pass always on, as GRPO
    buffers it: (rows, C) old_per_token_logps) or rloo="rloo" (RLOO's own buffered batch and loss)."""
    c, meas = rec["config"], rec["measured"]
    old_always = False
    if c["method"] == "ipo":
        c = dict(c, method="dpo")                         # DPOTrainer with loss_type ["ipo"]: the DPO path
    if c["method"] == "rloo":
        assert rloo in ("grpo", "rloo"), rloo
        c = dict(c, method="grpo")
        old_always = True
        for k in ("steps_per_generation", "num_iterations", "beta"):
            c.setdefault(k, rec["hf"]["rloo"][k])
    elif c["method"] == "grpo":
        # the GRPO schedule (steps_per_generation, num_iterations, beta) is in the trainer settings, not in config
        c = dict(c)
        for k in ("steps_per_generation", "num_iterations", "beta"):
            c.setdefault(k, rec["hf"]["grpo"][k])
    rloo_own = rloo == "rloo"
    rec_method[0] = c["method"]
    m = shape(rec)
    L, H, I, nh, kv, hd, V = (m[k] for k in ("L", "H", "I", "nh", "kv", "hd", "V"))
    lora = isinstance(c["finetune"], dict)
    prec = c["precision"]
    autocast = prec in ("bf16-mixed", "bf16-base-mixed")
    dt = 2 if prec == "bf16-base-mixed" else 4          # weight dtype (from_pretrained dtype)
    cdt = 2 if autocast else dt                          # compute dtype of the LM-head tiles
    a = 4 if prec != "bf16-base-mixed" else 2            # dtype of the residual stream / last hidden state
    gc = c["checkpointing"] != "none"
    Bs, S = geometry(rec)
    T = Bs * S
    N = Bs * (S - 1)                                     # CPU: every position is scored (CUDA: completion tokens)
    n = min(N, TOKEN_CHUNK)
    Vt = min(V, VOCAB_CHUNK)
    P = n_params(m)
    out = {}

    # ---- static: what lives across steps (step_start) ----
    rope = 2 * (hd // 2) * 4                              # rotary inv_freq and original_inv_freq buffers
    W = P * dt + (n_lora(m) * 4 if lora else 0) + rope
    ref = P * dt + rope if c["reference"] == "model" else 0
    trainable = n_lora(m) if lora else P
    opt = 2 * trainable * 4 + 4 * n_param_tensors(m, lora)  # AdamW exp_avg, exp_avg_sq (fp32), step counters
    if c["method"] == "dpo":
        batch = 3 * T * 8 + (2 * c["micro_batch"] * 4 if c["reference"] == "precomputed" else 0)
    elif c["method"] == "kto":
        # input_ids, attention_mask, completion_mask and the same three for the KL batch (int64), label (bool),
        # precomputed: ref_logps and ref_KL_logps (fp32 per example)
        batch = 6 * T * 8 + Bs + (2 * Bs * 4 if c["reference"] == "precomputed" else 0)
    else:
        spg = c["steps_per_generation"]
        rows = Bs * spg                                   # the whole generation batch stays buffered
        batch = rows * S * 8 * 2 + rows * 4 + 8 + (rows * c["completion_len"] * 4 if c["beta"] else 0)
        if spg > 1 or c["num_iterations"] > 1 or old_always:
            batch += rows * c["completion_len"] * 4       # old_per_token_logps
        if rloo_own:
            # RLOO buffers prompt/completion ids and masks (int64), old_logps and advantages (rows,) fp32: the KL is
            # already in the advantages, the old log-probs are summed per sequence, no num_items_in_batch
            batch = rows * S * 8 * 2 + 2 * rows * 4
    static = W + ref + opt + batch + 4                    # + Trainer._tr_loss
    out["step_start"] = (static, meas["step_start_bytes"])

    # ---- activations kept by the policy forward ----
    if gc:
        # checkpointed layers keep their input; the head keeps what it keeps without checkpointing
        A = L * T * H * a + T * H * 4 + T * 4 + (0 if lora else T * H * 4) \
            + N * H * a + N * 16 + Bs * (S - 1) + (16 if c["method"] == "dpo" else 0)
    elif prec == "32-true":
        A = activations_fp32(m, Bs, S, lora, N)
    else:
        A = sum(meas["saved_bytes"].values())
    if c["method"] == "grpo" and prec == "32-true" and not gc:
        if rloo_own:
            # RLOO's loss is per sequence: exp(log_ratio) and the two products, (Bs,) fp32; the cat'ed input ids
            A += 3 * Bs * 4 + Bs * S * 8
        else:
            # the loss keeps a few (Bs, C) fp32 tensors (ratio, clipped terms, KL) and the cat'ed input ids
            A += (3 + (2 if c["beta"] else 0)) * Bs * c["completion_len"] * 4 + Bs * S * 8

    # ---- the fused LM head (ChunkedLogProbFunction) ----
    mm_buf = n * VOCAB_CHUNK * cdt
    vecs = 7 * N * 4                                      # running_max, sum_exp, ... target_logit (fp32, N each)
    # autocast over fp32 weights: hidden_chunk .to(bf16) (forward and backward), the weight tile's cast (backward)
    casts_fwd = n * H * 2 if autocast and dt == 4 else 0
    casts = (n * H * 2 + Vt * H * 2) if autocast and dt == 4 else 0
    # CPU only (torch ops instead of the Triton fold, `_forward_tile`/`_backward_tile`), bytes per tile element:
    k_fwd_policy = 13 if c["method"] == "dpo" else 12     # z, e, e*z (+ is_top1's bool mask for DPO's policy head;
    #                                                       KTO's head: log_probs, entropy, mean_logits -> 12)
    k_fwd_ref = 13 if (c["method"] == "dpo" and c["reference"] == "base-without-adapters") else 12
    k_bwd = 29                                            # 7 fp32 temporaries + 1 bool per element
    head_fwd_policy = mm_buf + vecs + casts_fwd + k_fwd_policy * n * Vt
    head_fwd_ref = mm_buf + vecs + casts_fwd + k_fwd_ref * n * Vt
    last_hidden = T * H * a                               # the backbone's output, alive while the head runs

    # policy forward peak: everything saved + the head's tiles
    out["policy_forward"] = (static + A + last_hidden + head_fwd_policy, meas["phase_peak_bytes"]["policy_forward"])
    # backward peak (the head's backward runs first: every saved activation is still alive)
    grad_hidden = N * H * 4                               # fp32 accumulator
    grad_weight = V * H * 4 if not lora else 0            # fp32 accumulator of lm_head's gradient
    out["backward"] = (static + A + mm_buf + grad_hidden + grad_weight + casts + k_bwd * n * Vt,
                       meas["phase_peak_bytes"]["backward"])
    # reference: a no-grad forward of Bs rows; the head is its peak (the layers' transients are smaller here)
    ref_head = last_hidden + N * H * a + head_fwd_ref
    per_layer_params = (P - 2 * V * H - H) // L
    if autocast and dt == 4:
        ref_head += L * per_layer_params * 2              # autocast's cached bf16 weight copies, until the forward ends
    if c["reference"] != "precomputed" and c["reference"] != "none":
        kept = A if c["method"] in ("dpo", "kto") else 0  # DPO/KTO: the policy's graph is alive; GRPO: scored first
        if c["method"] == "grpo" and c["checkpointing"] != "none":
            kept = 0
        if rloo_own:
            # RLOO runs the reference after the old log-probs pass: old_per_token_logps (rows, C) and old_logps (rows,)
            kept = Bs * c["steps_per_generation"] * (c["completion_len"] + 1) * 4
        out["reference"] = (static + kept + ref_head, meas["phase_peak_bytes"]["reference"])
        if c["method"] == "kto":
            # the reference's KL-batch forward (same rows, same length here), also after the policy forward
            out["reference_kl"] = (static + kept + ref_head, meas["phase_peak_bytes"]["reference_kl"])
    if c["method"] == "kto":
        # the policy's no-grad forward of the KL batch, first in _compute_loss (nothing else alive)
        out["kl_policy"] = (static + last_hidden + N * H * a + head_fwd_policy + (
            L * per_layer_params * 2 if autocast and dt == 4 else 0), meas["phase_peak_bytes"]["kl_policy"])
    if c["method"] == "grpo" and "old_logps" in meas["phase_peak_bytes"]:
        # old_per_token_logps: the same no-grad forward with the policy (its head also computes the entropy: 12 B)
        out["old_logps"] = (static + last_hidden + N * H * a + head_fwd_policy - k_fwd_policy * n * Vt
                            + 12 * n * Vt + (L * ((P - 2 * V * H - H) // L) * 2 if autocast and dt == 4 else 0),
                            meas["phase_peak_bytes"]["old_logps"])
    # optimizer step: gradients (trainable, param dtype: fp32 here) + fused AdamW's scalars
    out["optimizer"] = (static + trainable * 4, meas["phase_peak_bytes"]["optimizer"])
    # generation (GRPO): the prefill of Bg = Bs * spg rows of P tokens, or the full KV cache, whichever is larger
    if c["method"] == "grpo":
        Bg = Bs * c["steps_per_generation"]
        gen = generation_bytes(m, Bg, c["prompt_len"], c["completion_len"], prec, lora)
        out["generation"] = (static + gen, meas["phase_peak_bytes"]["generation"])
    out["peak"] = (max(v[0] for k, v in out.items() if k != "step_start"), meas["peak_allocated_bytes"])
    return out


def layers_fp32(m, Bs, S, lora):
    """fp32 activations saved by the decoder layers (the first with the rotary cos/sin), as activations_fp32."""
    L, H, I, nh, hd = m["L"], m["H"], m["I"], m["nh"], m["hd"]
    T = Bs * S
    qkv = T * (nh * hd + 2 * m["kv"] * hd) * 4
    layer = (2 * T * H + (0 if lora else 2 * T * H) + T * H + T * H + T * H) * 4 + qkv \
        + 4 * T * I * 4 + 2 * T * 4 + Bs * nh * S * 4 + (7 * T * 8 * 4 if lora else 0)
    first = layer + 2 * S * hd * 4 - ((T * H * 4 + T * 4) if lora else 0)
    return first + (L - 1) * layer


def static_common(c, m, lora, dt, extra_weights=0):
    """weights (+ LoRA adapters, rotary buffers) + AdamW states + step counters + Trainer._tr_loss"""
    P = n_params(m)
    rope = 2 * (m["hd"] // 2) * 4
    trainable = n_lora(m) if lora else P
    W = P * dt + (n_lora(m) * 4 if lora else 0) + rope
    opt = 2 * trainable * 4 + 4 * n_param_tensors(m, lora)
    return W + extra_weights + opt + 4, trainable


def predict_logits(rec):
    """ORPO (experimental ORPOTrainer) and SimPO (experimental CPOTrainer, loss_type "simpo"): one concatenated forward
    of 2 x pairs rows through the whole model, full (rows, S, V) logits (fp32: the model's output under 32-true,
    accelerate's convert_outputs_to_fp32 copy under bf16 autocast), then selective_log_softmax (CPU: a gather and a
    per-row logsumexp) and, for ORPO (and CPO with cpo_alpha > 0), a cross-entropy over the chosen rows."""
    c, meas = rec["config"], rec["measured"]
    m = shape(rec)
    L, H, I, V = m["L"], m["H"], m["I"], m["V"]
    lora = isinstance(c["finetune"], dict)
    prec = c["precision"]
    autocast = prec in ("bf16-mixed", "bf16-base-mixed")
    dt = 2 if prec == "bf16-base-mixed" else 4
    a = 4 if prec != "bf16-base-mixed" else 2
    Bs, S = geometry(rec)
    pairs = Bs // 2
    T = Bs * S
    Pl = c["prompt_len"]
    nll = c["method"] == "orpo" or rec["hf"].get("cpo", {}).get("cpo_alpha", 0) > 0
    out = {}
    # static: DPODataCollatorWithPadding keeps prompt_input_ids/attention_mask (pairs, P) and chosen_/rejected_
    # input_ids, attention_mask, labels (pairs, S), all int64
    base, trainable = static_common(c, m, lora, dt)
    static = base + 2 * pairs * Pl * 8 + 6 * pairs * S * 8
    out["step_start"] = (static, meas["step_start_bytes"])

    logits = T * V * 4                                   # (rows, S, V) fp32, kept (the slice [:, :-1] is saved)
    M = Bs * (S - 1)                                     # scored positions (every position but the last)
    inputs = 3 * T * 8                                   # concatenated input_ids, attention_mask, labels (int64)
    # what the forward keeps until the loss: layers, final norm (input, rsqrt, x*rsqrt when trained), the lm_head
    # input when lm_head is trained, the embedding's indices when it is trained, the logits
    if prec == "32-true":
        A_fwd = layers_fp32(m, Bs, S, lora) + T * H * 4 + T * 4 + (0 if lora else 2 * T * H * 4) + logits
    else:
        # bf16 autocast: the layers' saved tensors from the trace (as for DPO), less what the loss saves
        A_fwd = sum(meas["saved_bytes"].values()) - (M * (8 + 4 + 1) + (pairs * (S - 1) * (V * 4 + 8) + 4
                                                                          if nll else 0)) - (0 if lora else T * 8)
    # the loss saves: gather index (int64), per-row logsumexp (fp32), the completion mask (bool); the NLL:
    # log_softmax output (pairs*(S-1), V) fp32 and its int64 targets
    A_loss = M * (8 + 4 + 1) + (pairs * (S - 1) * (V * 4 + 8) + 4 if nll else 0)
    fwd_transient = T * H * a if lora else 0             # frozen lm_head: its input is not saved but alive here
    if autocast:
        fwd_transient = T * V * 2                        # the bf16 logits while the fp32 copy is made
    out["policy_forward"] = (static + inputs + A_fwd + fwd_transient, meas["phase_peak_bytes"]["policy_forward"])
    # loss: ORPO's NLL makes a contiguous copy of the chosen logits (pairs, S-1, V) then log_softmax (same size);
    # selective_log_softmax's per-row logsumexp needs one (S-1, V) fp32 temporary
    loss_tr = 2 * pairs * (S - 1) * V * 4 if nll else (S - 1) * V * 4 + M * 8
    out["loss"] = (static + inputs + A_fwd + loss_tr, meas["phase_peak_bytes"]["loss"])
    # backward: the per-row logsumexp gradients (rows x (S-1, V)) and their stacked copy (UnbindBackward's cat),
    # with everything saved still alive
    # (of the concatenated inputs only the input_ids survive the forward, saved by a trained embedding)
    out["backward"] = (static + A_fwd + A_loss + 2 * M * V * 4 + (0 if lora else T * 8),
                       meas["phase_peak_bytes"]["backward"])
    out["optimizer"] = (static + trainable * 4, meas["phase_peak_bytes"]["optimizer"])
    out["peak"] = (max(v[0] for k, v in out.items() if k != "step_start"), meas["peak_allocated_bytes"])
    return out


COLS = ("step_start", "generation", "old_logps", "kl_policy", "reference_kl", "reference", "teacher", "policy_forward",
        "loss", "backward", "optimizer", "peak")


def predict_distill(rec):
    """DistillationTrainer (trl/trainer/distillation_trainer.py, TRL 1.16.0): every step generates one completion
    per prompt with the student, then the student backbone (grad) and the teacher backbone (no_grad) run over
    prompt + completion, and ChunkedDivergenceFunction computes the divergence from both last hidden states and both
    lm_head weights in (4096 x 32768) fp32 tiles, one per model. The training forward runs outside accelerate's
    autocast (see README): under bf16-mixed it is the fp32 step."""
    c, meas = rec["config"], rec["measured"]
    m = shape(rec)
    t = dict(rec["config"]["teacher"]["hf_config"])
    mt = dict(L=t["num_hidden_layers"], H=t["hidden_size"], I=t["intermediate_size"], nh=t["num_attention_heads"],
              kv=t["num_key_value_heads"], hd=t["head_dim"], V=t["vocab_size"])
    L, H, I, V = m["L"], m["H"], m["I"], m["V"]
    Ht, It = mt["H"], mt["I"]
    lora = isinstance(c["finetune"], dict)
    prec = c["precision"]
    dt = 2 if prec == "bf16-base-mixed" else 4
    a = 4 if prec != "bf16-base-mixed" else 2
    at = 4                                               # teacher dtype: the checkpoint's (fp32 here)
    Bs, S = geometry(rec)
    C = c["completion_len"]
    T = Bs * S
    N = Bs * C                                           # positions projected (CPU: every completion position)
    n = min(N, TOKEN_CHUNK)
    Vt = min(V, VOCAB_CHUNK)
    out = {}
    rope_t = 2 * (mt["hd"] // 2) * 4
    base, trainable = static_common(c, m, lora, dt, extra_weights=n_params(mt) * at + rope_t)
    # the buffered generation batch: prompt_ids, prompt_mask, completion_ids, completion_mask (int64),
    # num_items_in_batch (an int64 scalar)
    static = base + 2 * T * 8 + 8
    out["step_start"] = (static, meas["step_start_bytes"])
    out["generation"] = (static + generation_bytes(m, Bs, c["prompt_len"], C, prec, lora),
                         meas["phase_peak_bytes"]["generation"])
    # the student's activations: layers + final norm (input, rsqrt, x*rsqrt when trained); the lm_head is not run
    if prec == "bf16-base-mixed":
        raise NotImplementedError
    A = layers_fp32(m, Bs, S, lora) + T * H * 4 + T * 4 + (0 if lora else T * H * 4)
    inputs = 2 * T * 8                                   # cat'ed input_ids and attention_mask (int64)
    last_s = T * H * a                                   # the student's last hidden state (a view keeps it)
    # frozen embedding and final norm (LoRA): at the final norm the embedding output (still referenced by the
    # backbone's forward) and the norm's x*rsqrt (not saved) are alive too
    out["policy_forward"] = (static + inputs + A + last_s + (2 * T * H * a if lora else 0),
                             meas["phase_peak_bytes"]["policy_forward"])
    # teacher backbone, no_grad, the student's graph alive: one decoder layer's transients (layer 0: the embedding
    # output is still referenced by the model's forward), MLP moment: inputs_embeds, residual, attention residual,
    # post-attention norm output (4 T*Ht) + gate/up outputs, silu and product (3 T*It) + cos/sin
    teacher_layer = 4 * T * Ht * at + 3 * T * It * at + 2 * S * mt["hd"] * 4
    out["teacher"] = (static + inputs + A + last_s + teacher_layer, meas["phase_peak_bytes"]["teacher"])
    # the divergence: both last hidden states alive (views), their (N, H) copies (reshape of a strided slice),
    # s_buf and t_buf (n x 32768 fp32 each, full width), 9 fp32 N-vectors, the CPU fold's temporaries
    bufs = 2 * n * VOCAB_CHUNK * 4
    copies = N * H * 4 + N * Ht * 4
    vecs = 9 * N * 4
    # generalized JSD (TRL's 0 < beta < 1): a second pass over the tiles (_jsd_tile); config says "divergence"
    jsd = c["divergence"] == "jsd" if "divergence" in c else 0.0 < rec["hf"]["distill"]["beta"] < 1.0
    k_fwd = 28 if jsd else 24                            # CPU: bytes of fp32 (n, Vt) temporaries per tile element
    last_t = T * Ht * at
    out["loss"] = (static + inputs + A + last_s + last_t + copies + bufs + vecs + k_fwd * n * Vt,
                   meas["phase_peak_bytes"]["loss"])
    # backward (the divergence's first): saved = both copies + s_log_z, t_log_z, aux; new: s_buf, t_buf,
    # grad_hidden (N, H) fp32, grad_weight (V, H) fp32 when lm_head is trained, the CPU fold's temporaries
    k_bwd = 40 if jsd else 36                            # CPU: _backward_tile's fp32 temporaries per tile element
    out["backward"] = (static + A + (0 if lora else T * 8) + copies + 3 * N * 4 + bufs + N * H * 4
                       + (0 if lora else V * H * 4) + k_bwd * n * Vt, meas["phase_peak_bytes"]["backward"])
    out["optimizer"] = (static + trainable * 4, meas["phase_peak_bytes"]["optimizer"])
    out["peak"] = (max(v[0] for k, v in out.items() if k != "step_start"), meas["peak_allocated_bytes"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default=os.path.join(HERE, "measured.jsonl"))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    worst, worst_grpo_forms = {}, {}
    for line in open(args.jsonl):
        rec = json.loads(line)
        meth = rec["config"]["method"]
        if meth == "rloo":
            # RLOO: GRPO's forms as they are (old log-probs pass always on), then RLOO's own batch and loss
            variants = [(rec["name"] + " (GRPO forms)", predict(rec, rloo="grpo"), worst_grpo_forms),
                        (rec["name"], predict(rec, rloo="rloo"), worst)]
        else:
            variants = [(rec["name"], predict_logits(rec) if meth in ("orpo", "simpo") else predict_distill(rec)
                         if meth == "distill" else predict(rec), worst)]
        for name, res, w in variants:
            cells = []
            for k, (p, mm) in res.items():
                r = p / mm - 1
                cells.append("%s %d/%d %+.2f%%" % (k, p, mm, 100 * r))
                w[k] = max(w.get(k, 0), abs(r))
            if args.markdown:
                cols = COLS
                print("| %s | %s |" % (name, " | ".join(
                    "%+.2f%%" % (100 * (res[k][0] / res[k][1] - 1)) if k in res else "-" for k in cols)))
            else:
                print(name)
                for cell in cells:
                    print("   ", cell)
    print("largest |residual| per phase:", ", ".join("%s %.2f%%" % (k, 100 * v) for k, v in worst.items()))
    if worst_grpo_forms:
        print("RLOO with GRPO's forms, largest |residual| per phase:",
              ", ".join("%s %.2f%%" % (k, 100 * v) for k, v in worst_grpo_forms.items()))


if __name__ == "__main__":
    main()
