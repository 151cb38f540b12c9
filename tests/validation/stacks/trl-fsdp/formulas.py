#!/usr/bin/env python3
"""Per-phase, per-rank closed forms of TRL 1.16 DPO / GRPO under FSDP (through the Trainer), checked against
measured.jsonl.

    python3 tests/validation/stacks/trl-fsdp/formulas.py [--jsonl ...] [--markdown]

Built on the single-process closed forms of tests/validation/stacks/trl/formulas.py (imported): every phase is
    single-process phase  -  (what sharding removes from the static part)  +  FSDP's unsharded units alive then.
No torch needed.  Notation (per rank, N ranks): P parameters, dt weight bytes, U_layer = one decoder layer's
parameters x dt (LoRA: with its adapters), U_tail = (V*H + H) x dt (FSDP2 group final norm + lm_head),
U_root = (2*V*H + H) x dt (FSDP1 root unit: embedding, final norm, lm_head), grad shard of the root = U_root / N.
"""
import argparse
import copy
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("trl_formulas", os.path.join(HERE, "..", "trl", "formulas.py"))
tf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tf)

PHASES = ("step_start", "generation", "reference", "policy_forward", "backward", "optimizer", "peak")


def single(rec, bf16_params=False):
    """The single-process closed forms (stacks/trl) for the same per-rank batch; {phase: predicted bytes}.
    bf16_params: FSDP2 under bf16 mixed precision computes with bf16 unsharded parameters (param_dtype) inside
    accelerate's autocast: the stacks/trl form of "bf16-base-mixed" (bf16 weights, bf16 residual stream, bf16 KV
    cache, no autocast weight copies), with the saved activations A left out (A = 0: anchored below)."""
    r = copy.deepcopy(rec)
    if bf16_params:
        r["config"]["precision"] = "bf16-base-mixed"
        r["measured"]["saved_bytes"] = {"anchored": 0}
    if r["config"]["method"] == "grpo":
        g = r["hf"]["grpo"]
        g.setdefault("steps_per_generation", r["config"]["steps_per_generation"])
        g.setdefault("num_iterations", r["config"]["num_iterations"])
    return {k: v[0] for k, v in tf.predict(r).items()}


def predict(rec):
    c, meas = rec["config"], rec["measured"]
    m = tf.shape(rec)
    L, H, I, kv, hd, V = (m[k] for k in ("L", "H", "I", "kv", "hd", "V"))
    N = c["gpus"]
    ver = c["fsdp_version"]
    lora = isinstance(c["finetune"], dict)
    dt = 4                                                  # fp32 weights in every case here
    P = tf.n_params(m)
    nl = tf.n_lora(m) if lora else 0
    trainable = nl if lora else P
    ref_model = c["reference"] == "model"
    bf16 = c["precision"] == "bf16-mixed"
    s1 = single(rec, bf16_params=bf16)
    du = 2 if bf16 else dt                                  # dtype of FSDP's unsharded units (param_dtype)
    # ---- static: shards instead of full copies (rotary buffers and step counters stay whole) ----
    dS = (N - 1) * (P * dt + nl * 4 + (P * dt if ref_model else 0) + 2 * trainable * 4) // N
    S = s1["step_start"] - dS
    if bf16:
        # s1's static has bf16 weights; the shards are fp32 whatever the precision: rebuild S from s1's batch part
        dS = s1["step_start"] - (tf.predict(_fp32(rec))["step_start"][0] - (
            (N - 1) * (P * dt + (P * dt if ref_model else 0) + 2 * trainable * 4) // N))
        S = s1["step_start"] - dS
    per_layer = (P - 2 * V * H - H) // L
    U_layer = (per_layer + nl // L) * du
    U_tail = (V * H + H) * du
    U_root = (2 * V * H + H) * du
    out = {}
    if ver == 2:
        # FSDP2 (accelerate fsdp2_prepare_model): units embed | each layer | [final norm, lm_head]
        # (reshard_after_forward False) | root.  Reference (TRL prepare_fsdp): ONE unit = the whole model.
        out["step_start"] = S
        if lora and c["method"] == "grpo":
            # generate() calls lm_head: its unit (reshard_after_forward False) is all-gathered and stays unsharded
            # from the generation to the end of the step (no backward hook ever reshards a frozen lm_head the fused
            # head never calls); the fused head then reads the unsharded weight (no full_tensor copy)
            head_w = V * H * du
            Bg = c["micro_batch"] * c["steps_per_generation"]
            t_end = c["prompt_len"] + c["completion_len"] - 1
            kv_end = L * 2 * Bg * kv * hd * t_end * 4
            out["generation"] = S + kv_end + 3 * U_layer + head_w + H * du + 3 * Bg * V * 4
            out["reference"] = s1["reference"] - dS + head_w + U_layer + H * du
            out["policy_forward"] = s1["policy_forward"] - dS + head_w + U_layer + H * du
            out["backward"] = s1["backward"] - dS + head_w + U_layer + H * du
        elif lora:
            # PEFT model: lm_head is its own unit and is never all-gathered by a hook (the fused head reads
            # lm_head.weight without calling the module): _fused_forward does weight.full_tensor() per call;
            # the final norm stays in the root unit (unsharded from the forward to the backward: H * dt)
            head_w = V * H * dt
            out["policy_forward"] = s1["policy_forward"] - dS + head_w + U_layer + H * dt
            out["reference"] = s1["reference"] - dS + 2 * head_w + U_layer + H * dt
            out["backward"] = s1["backward"] - dS + head_w + U_layer + H * dt
        elif c["method"] == "dpo" and c.get("zero") == 2:
            # fsdp="shard_grad_op": reshard_after_forward False for every unit (TRL passes the plugin's value to
            # the reference's one unit too).  The reference stays unsharded for good after its first forward
            # (its flat buffer is freed at its post-forward); the policy's units stay unsharded from their forward
            # to their backward: the whole policy (P * c) at the reference and backward peaks, + the tail's
            # deferred flat buffer during the fused head
            S += P * du
            out["step_start"] = S
            out["policy_forward"] = s1["policy_forward"] - dS + P * du + P * du + U_tail
            out["reference"] = s1["reference"] - dS + P * du + P * du
            out["backward"] = s1["backward"] - dS + P * du + P * du
        elif c["method"] == "dpo":
            # the tail is all-gathered in the policy forward; its flat all-gather buffer is freed only at the root's
            # post-forward (FSDP2 defers the free of the last all-gather result in forward), after the fused head
            out["policy_forward"] = s1["policy_forward"] - dS + 2 * U_tail
            # reference after the policy forward: the policy's tail stays unsharded; the reference's one unit:
            # flat all-gather buffer + unsharded parameters = 2 full copies during its whole forward
            out["reference"] = s1["reference"] - dS + U_tail + 2 * P * du
            # backward start: tail unsharded + the next layer's prefetched flat all-gather buffer
            out["backward"] = s1["backward"] - dS + U_tail + U_layer
        else:
            # GRPO: generate() runs the FSDP2 model (no gathering of the whole policy); per decoding step each
            # unit is all-gathered and resharded; the tail (reshard_after_forward False) stays unsharded after
            # generation (no backward reshards it) until the training backward
            Bg = c["micro_batch"] * c["steps_per_generation"]
            t_end = c["prompt_len"] + c["completion_len"] - 1
            kv_end = L * 2 * Bg * kv * hd * t_end * du     # K/V in the compute dtype of the unsharded weights
            sampler = 3 * Bg * V * 4                        # the last step's logits / softmax / where (fp32)
            # peak: a late decoding step, during the last layer's copy-out (the previous layer's flat buffer, this
            # layer's flat buffer and its unsharded parameters: 3 x U_layer; its own K/V not yet appended)
            out["generation"] = S + kv_end + 3 * U_layer + U_tail + sampler
            out["reference"] = s1["reference"] - dS + U_tail + 2 * P * du
            # the tail is already unsharded: the last flat buffer deferred to the root's post-forward is a layer's
            out["policy_forward"] = s1["policy_forward"] - dS + U_tail + U_layer
            out["backward"] = s1["backward"] - dS + U_tail + U_layer
        out["optimizer"] = S + trainable * 4 // N
    else:
        # FSDP1 (accelerate / TRL prepare_fsdp, transformer auto-wrap, use_orig_params, NO_PREFETCH): units =
        # each layer + the root (embedding, final norm, lm_head), for the policy and for the reference alike.
        # The root unit is not resharded after forward: the reference's stays unsharded for good (no backward),
        # the policy's from its pre-forward to the end of the backward.  The previous step's sharded gradients
        # (flat_param.grad) live until the root's next pre-forward.
        # LoRA (accelerate's PEFT policy: every lora_A / lora_B Linear is its own unit, so frozen units have no
        # gradient): the previous gradients are the adapters' shards only
        prev_grads = trainable * 4 // N
        S1 = S + (U_root if ref_model else 0) + prev_grads
        out["step_start"] = S1
        base = S1 - prev_grads                              # previous gradients freed at the policy's pre-forward
        if c["method"] == "dpo":
            out["policy_forward"] = s1["policy_forward"] - s1["step_start"] + base + U_root
            out["reference"] = s1["reference"] - s1["step_start"] + base + U_root
            out["backward"] = s1["backward"] - s1["step_start"] + base + U_root
        else:
            # generation: summon_full_params(model, recurse=False) gathers the root unit for the whole generate
            # (and frees the root's old gradient shard); the layers gather one at a time (child FSDP units)
            gen1 = tf.generation_bytes(m, c["micro_batch"] * c["steps_per_generation"], c["prompt_len"],
                                       c["completion_len"], c["precision"], lora)
            out["generation"] = S1 - U_root // N + U_root + U_layer + gen1
            # reference: the policy's layer gradients of the last step are still alive (freed at the policy's
            # next root pre-forward); no policy unit is unsharded
            out["reference"] = s1["reference"] - s1["step_start"] + S1 - U_root // N
            out["policy_forward"] = s1["policy_forward"] - s1["step_start"] + base + U_root
            out["backward"] = s1["backward"] - s1["step_start"] + base + U_root
        out["optimizer"] = base + trainable * 4 // N
    anchored = None
    if bf16:
        # A (the saved activations with bf16 parameters) has no closed form here: infer it from the measured
        # policy_forward peak and carry it into the phases where the policy's graph is alive
        A = meas["phase_peak_bytes"]["policy_forward"] - out["policy_forward"]
        anchored = "policy_forward"
        for k in ("policy_forward", "backward") + (("reference",) if c["method"] == "dpo" else ()):
            out[k] += A
    out["peak"] = max(v for k, v in out.items() if k != "step_start")
    meas_ph = dict(meas["phase_peak_bytes"], step_start=meas["step_start_bytes"], peak=meas["peak_allocated_bytes"])
    res = {k: (v, meas_ph[k]) for k, v in out.items() if k in meas_ph}
    if anchored:
        res["_anchored"] = anchored
    return res


def _fp32(rec):
    r = copy.deepcopy(rec)
    r["config"]["precision"] = "32-true"
    if r["config"]["method"] == "grpo":
        r["hf"]["grpo"].setdefault("steps_per_generation", r["config"]["steps_per_generation"])
        r["hf"]["grpo"].setdefault("num_iterations", r["config"]["num_iterations"])
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default=os.path.join(HERE, "measured.jsonl"))
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    worst = {}
    if args.markdown:
        print("| case | " + " | ".join(PHASES) + " |")
        print("|---|" + "---|" * len(PHASES))
    for line in open(args.jsonl):
        rec = json.loads(line)
        res = predict(rec)
        anch = res.pop("_anchored", None)
        for k, (p, mm) in res.items():
            if k == anch:
                continue
            worst[k] = max(worst.get(k, 0), abs(p / mm - 1))
        if args.markdown:
            print("| %s | %s |" % (rec["name"], " | ".join(
                ("anchored" if k == anch else "%+.3f%%" % (100 * (res[k][0] / res[k][1] - 1))) if k in res else "-"
                for k in PHASES)))
        else:
            print(rec["name"])
            for k, (p, mm) in res.items():
                print("    %-15s predicted %11d  measured %11d  %+9d B  %+.3f%%%s" % (
                    k, p, mm, p - mm, 100 * (p / mm - 1), "  (anchored: A inferred from it)" if k == anch else ""))
    print("largest |residual| per phase:", ", ".join("%s %.3f%%" % (k, 100 * v) for k, v in worst.items()))


if __name__ == "__main__":
    main()
