#!/usr/bin/env python3
"""Regenerate `transformers_params` in expected.json from the real Hugging Face configs in this folder.

Each <model_type>__<name>.json is built with transformers on the meta device (no weights are
allocated) and its parameters are counted once each (tied weights once, as .parameters() does).
Configs with a text_config (gemma3, llama4) are counted as their text-only causal LM.
Families transformers does not ship (remote-code ones, e.g. internlm2, exaone 3.x) keep
transformers_params = null and their hand-derived manual_params.

Run with the project's venv:  build/venv/bin/python tests/data/hf_configs/count_params.py
Other fields of expected.json (published figures, notes) are preserved.
"""
import json
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.json"

# config wrappers whose language model is built from text_config
TEXT_CONFIG_CLASSES = {
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM"),
    "llama4": ("Llama4TextConfig", "Llama4ForCausalLM"),
}


def count(path: Path):
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = json.loads(path.read_text())
    mt = raw.get("model_type")
    if mt not in transformers.models.auto.configuration_auto.CONFIG_MAPPING:
        return None, f"model_type {mt!r} not in transformers {transformers.__version__}"
    raw = dict(raw)
    raw.pop("quantization_config", None)  # count the unquantized architecture
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if mt in TEXT_CONFIG_CLASSES:
            cfg_cls, model_cls = (getattr(transformers, n) for n in TEXT_CONFIG_CLASSES[mt])
            cfg = cfg_cls(**raw["text_config"])
            with torch.device("meta"):
                model = model_cls(cfg)
        else:
            cfg = AutoConfig.for_model(**raw)
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(cfg)
    n = sum(p.numel() for p in model.parameters())
    return n, type(model).__name__


def main():
    expected = json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}
    files = sorted(p for p in HERE.glob("*__*.json"))
    rows = []
    for p in files:
        entry = expected.setdefault(p.name, {})
        entry.setdefault("model_type", json.loads(p.read_text()).get("model_type"))
        try:
            n, how = count(p)
        except Exception as e:  # report, keep going
            n, how = None, f"error: {type(e).__name__}: {e}"
        entry["transformers_params"] = n
        pub = (entry.get("published") or {})
        ref = n if n is not None else entry.get("manual_params")
        agree = ""
        if ref is not None and pub.get("value") is not None:
            agree = "yes" if abs(ref - pub["value"]) <= pub.get("tolerance", 0) else "NO"
        rows.append((p.name, n, entry.get("manual_params"), pub.get("text", ""), agree, how))
    EXPECTED.write_text(json.dumps(dict(sorted(expected.items())), indent=2) + "\n")
    w = max(len(r[0]) for r in rows)
    print(f"{'file':<{w}}  {'transformers':>16}  {'manual':>16}  {'published':>12}  agree  built as")
    for f, n, m, t, a, how in rows:
        print(f"{f:<{w}}  {n if n is not None else '-':>16}  {m if m is not None else '-':>16}  {t:>12}  {a:>5}  {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
