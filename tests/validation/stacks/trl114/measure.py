#!/usr/bin/env python3
"""Measure the peak live-tensor bytes of one DPO / GRPO training step run by TRL 1.14.2's own trainers (CPU):
the whole-logits path (no fused LM head).

Ground truth for vramcalc's ``"method": "dpo"`` and ``"method": "grpo"`` under TRL <= 1.14.x.  TRL 1.15.0 added
the fused LM head (``trl/kernels/chunked_logprob.py``) that ../trl/measure.py measures with TRL 1.16.0; TRL 1.14.2
(the last release before it) calls the model for the whole logits and scores them with ``selective_log_softmax``
(``trl/trainer/utils.py``).  Everything else -- the tiny Llama, its tokenizer, the datasets, the reward, the
trainer settings, the step marker, the counting, the trace -- is ../trl/measure.py's, imported (not copied), and
every case here is the 1.16 case of the same name (same ``case`` dict, same ``config``), so the two sets compare
line by line.

    build/venv-trl114/bin/python tests/validation/stacks/trl114/measure.py \\
        --out tests/validation/stacks/trl114/measured.jsonl --trace-out tests/validation/stacks/trl114/traces.txt

Phases (profiler ranges; the innermost one owns an allocation).  TRL 1.16's fused head runs inside the model call,
so there ``policy_forward`` / ``reference`` include the log-prob scoring; in 1.14.2 the scoring is a separate call
after the model, measured as its own phase:

  DPO:   policy_forward   the policy model call in ``DPOTrainer._compute_loss`` (backbone + lm_head: whole logits)
         policy_logps     ``selective_log_softmax_and_entropy(shift_logits, ...)`` (gather, per-row logsumexp, the
                          no-grad entropy in 128-row chunks)
         reference        the reference model call (``self.ref_model(...)`` or ``self.model`` inside
                          ``use_adapter(model, None)``), under no_grad
         reference_logps  ``selective_log_softmax(ref_shift_logits, ...)`` (outside no_grad, on no-grad logits)
         loss             the rest of ``compute_loss`` (sums, log-sigmoid, metrics: the logits' means, argmax)
  GRPO:  generation, scoring, reward  as ../trl (``_generate_single_turn``, ``_generate_and_score_completions``,
                          ``_calculate_rewards``: the same names in 1.14.2)
         reference / policy_forward / old_logps  ``_get_per_token_logps_and_entropies`` (1.14.2:
                          ``_full_logits_logps``) as ../trl, now only the model call (logits_to_keep = C + 1)
         reference_logps, policy_logps  its ``selective_log_softmax`` / ``selective_log_softmax_and_entropy``
         loss             the rest of ``compute_loss``
  all:   backward, clip_grad, optimizer, after_optimizer as ../trl

``measured.phase_peak_bytes_1_16_scope`` also gives the phases with 1.16's scope (policy_forward = max of
policy_forward and policy_logps, reference = max of reference and reference_logps).
"""
import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
TRL_DIR = os.path.join(os.path.dirname(HERE), "trl")

# ../trl/measure.py: the model, tokenizer, datasets, reward, trainer construction, phases, counting and trace
_spec = importlib.util.spec_from_file_location("trl_stack_measure", os.path.join(TRL_DIR, "measure.py"))
_trl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_trl)
torch = _trl.torch

# the 1.16 cases of the same names (same settings, same config)
NAMES = ["dpo_full_ref_fp32", "dpo_full_ref_bf16mixed", "dpo_lora_noadapter_fp32", "dpo_full_precomputed_fp32",
         "dpo_lora_noadapter_fp32_v40000", "grpo_full_g4_fp32", "grpo_full_g4_bf16mixed", "grpo_lora_g4_fp32",
         # held out: measured after formulas.py was written from the eight above (N = 4156 > 4096 positions,
         # 16 completions)
         "dpo_lora_noadapter_fp32_s1040", "grpo_full_g8_fp32"]
_by_name = {c["name"]: c for c in _trl.CASES}
CASES = [_by_name[n] for n in NAMES]

_trl.PHASES["dpo"] = ("policy_forward", "policy_logps", "reference", "reference_logps", "loss", "backward",
                      "clip_grad", "optimizer", "after_optimizer")
_trl.PHASES["grpo"] = ("generation", "scoring", "old_logps", "reference", "reference_logps", "reward",
                       "policy_forward", "policy_logps", "loss", "backward", "clip_grad", "optimizer",
                       "after_optimizer")
SCOPE_1_16 = {"policy_forward": ("policy_forward", "policy_logps"), "reference": ("reference", "reference_logps")}

_install_1_16 = _trl.install


def install(s):
    """../trl's wrappers (the same method names exist in 1.14.2), plus the scoring calls of 1.14.2."""
    _install_1_16(s)
    t, P, case = s.trainer, s.phases, s.case
    if case["method"] == "dpo":
        import trl.trainer.dpo_trainer as mod
        # in DPOTrainer 1.14.2 selective_log_softmax_and_entropy scores only the policy, selective_log_softmax only
        # the reference (in _compute_loss, and in _compute_ref_log_probs for the precomputed log-probs)
        P.wrap(mod, "selective_log_softmax_and_entropy", "policy_logps")
        P.wrap(mod, "selective_log_softmax", "reference_logps")
        return
    import trl.trainer.grpo_trainer as mod
    # _full_logits_logps calls both: selective_log_softmax_and_entropy when compute_entropy (the policy's training
    # forward), selective_log_softmax otherwise (old log-probs, reference); the enclosing call says which model
    s.logps_of = None
    inner = t._get_per_token_logps_and_entropies  # ../trl's wrapper (the phase range)

    def get_logps(model, *a, **k):
        if torch.is_grad_enabled():
            who = "policy_logps"
        elif model is t.ref_model or s.in_ref_adapter:
            who = "reference_logps"
        else:
            who = None  # old log-probs: its scoring stays in old_logps
        prev, s.logps_of = s.logps_of, who
        try:
            return inner(model, *a, **k)
        finally:
            s.logps_of = prev
    t._get_per_token_logps_and_entropies = get_logps
    P.wrap(mod, "selective_log_softmax_and_entropy", lambda *a, **k: s.logps_of)
    P.wrap(mod, "selective_log_softmax", lambda *a, **k: s.logps_of)


_trl.install = install

TRACE_LEGEND = _trl.TRACE_LEGEND.replace("stacks/trl/measure.py", "stacks/trl114/measure.py")


_versions_1_16 = _trl.versions


def versions():
    v = _versions_1_16()
    v["trl_lm_head"] = "whole logits + selective_log_softmax (TRL <= 1.14; the fused head came in 1.15.0)"
    return v


_trl.versions = versions


def run_one(case, base_dir, args, tout):
    rec = _trl.run_one(case, base_dir, args, tout)
    m = rec["measured"]
    pk = m["phase_peak_bytes"]
    m["phase_peak_bytes_1_16_scope"] = OrderedDict(
        (k, max(pk[p] for p in ps if p in pk)) for k, ps in SCOPE_1_16.items() if any(p in pk for p in ps))
    rec["hf"]["lm_head"] = ("model(...) returns the whole logits (DPO: (2*pairs, S, V); GRPO: logits_to_keep = C + 1),"
                            " selective_log_softmax[_and_entropy] in trl/trainer/utils.py; use_liger_kernel False")
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="JSONL output path")
    ap.add_argument("--trace-out", default=None, help="trace file (default stdout)")
    ap.add_argument("--only", action="append", default=[], help="run cases whose name contains this")
    ap.add_argument("--exact", default=None, help="run only this case (used for child processes)")
    ap.add_argument("--no-trace", action="store_true", help="no saved-tensor hooks (checks they change nothing)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--merge", action="store_true", help="replace only the cases run in --out / --trace-out")
    ap.add_argument("--model-dir", default=os.path.join(tempfile.gettempdir(), "vramcalc-trl-tiny-llama"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    if args.list:
        for c in CASES:
            print(c["name"])
        return
    if args.exact:
        case = [c for c in CASES if c["name"] == args.exact][0]
        tout = open(args.trace_out, "w") if args.trace_out else sys.stderr
        print(json.dumps(run_one(case, args.model_dir, args, tout)))
        return
    import trl
    if trl.__version__ != "1.14.2":
        sys.exit("this stack measures trl 1.14.2 (found %s): use build/venv-trl114" % trl.__version__)
    import transformers
    import peft
    import accelerate
    legend = TRACE_LEGEND % (torch.__version__, transformers.__version__, peft.__version__, trl.__version__,
                             accelerate.__version__)
    cases = [c for c in CASES if not args.only or any(o in c["name"] for o in args.only)]
    sections, records, failures = OrderedDict(), [], []
    for c in cases:
        # each case in a fresh process, as ../trl does
        cmd = [sys.executable, os.path.abspath(__file__), "--exact", c["name"], "--model-dir", args.model_dir]
        if args.no_trace:
            cmd.append("--no-trace")
        try:
            with tempfile.NamedTemporaryFile("r", suffix=".txt") as tf:
                cmd += ["--trace-out", tf.name]
                p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
                if p.returncode != 0:
                    raise RuntimeError("child exited %d" % p.returncode)
                records.append(json.loads(p.stdout.strip().splitlines()[-1], object_pairs_hook=OrderedDict))
                sections[c["name"]] = tf.read()
        except Exception as e:  # noqa: BLE001
            failures.append((c["name"], "%s: %s" % (type(e).__name__, str(e)[:300])))
            print("%-34s FAILED %s" % failures[-1], file=sys.stderr, flush=True)
    if args.out:
        if args.merge:
            _trl.merge_jsonl(args.out, records)
        else:
            with open(args.out, "w") as f:
                for r in records:
                    f.write(json.dumps(r) + "\n")
    if args.trace_out:
        if not args.merge and os.path.exists(args.trace_out):
            os.remove(args.trace_out)
        _trl.merge_trace_file(args.trace_out, sections, legend)
    else:
        sys.stdout.write(legend + "\n" + "".join(sections.values()))
    for n, msg in failures:
        print("FAILED %s: %s" % (n, msg), file=sys.stderr)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
