#!/usr/bin/env python3
"""Small config variants of every supported model_type, counted by transformers itself.

For each family: transformers' own default config shrunk to a few layers and small widths, plus variants
that flip the keys which change the module layout (biases, MoE layer patterns, shared experts, MLA with
and without q_lora_rank, q/k norms, parallel blocks, multi-query, ALiBi ...). Each is built on the meta
device and its parameters counted (tied weights once). Output: variants.jsonl, one
{"name", "hf_config", "transformers_params", "transformers"} per line. The unit tests check that vramcalc
reads each config to exactly that count.

    build/venv/bin/python tests/data/hf_configs/make_variants.py
"""
import json
import warnings
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

HERE = Path(__file__).resolve().parent
SMALL = dict(num_hidden_layers=3, hidden_size=64, intermediate_size=96, num_attention_heads=4,
             num_key_value_heads=2, vocab_size=300, max_position_embeddings=256)
MOE = dict(moe_intermediate_size=32, num_experts_per_tok=2)

VARIANTS = {
    "llama": [{}, {"attention_bias": True, "mlp_bias": True}, {"tie_word_embeddings": True, "head_dim": 32}],
    "mistral": [{}],
    "mixtral": [dict(num_local_experts=4, num_experts_per_tok=2)],
    "qwen2": [{}, {"tie_word_embeddings": True}],
    "qwen3": [{}, {"attention_bias": True}],
    "qwen2_moe": [dict(MOE, num_experts=4, shared_expert_intermediate_size=48),
                  dict(MOE, num_experts=4, shared_expert_intermediate_size=48, mlp_only_layers=[0]),
                  dict(MOE, num_experts=4, shared_expert_intermediate_size=48, decoder_sparse_step=2)],
    "qwen3_moe": [dict(MOE, num_experts=4), dict(MOE, num_experts=4, mlp_only_layers=[1]),
                  dict(MOE, num_experts=4, decoder_sparse_step=3)],
    "gemma": [dict(head_dim=16)],
    "gemma2": [dict(head_dim=16)],
    "gemma3_text": [dict(head_dim=16)],
    "llama4_text": [dict(head_dim=16, num_local_experts=4, intermediate_size_mlp=128, interleave_moe_layer_step=1),
                    dict(head_dim=16, num_local_experts=4, intermediate_size_mlp=128, interleave_moe_layer_step=2,
                         moe_layers=None)],
    "deepseek_v2": [dict(MOE, n_routed_experts=4, n_shared_experts=2, q_lora_rank=24, kv_lora_rank=16,
                         qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, first_k_dense_replace=1,
                         num_key_value_heads=4, head_dim=8),
                    dict(MOE, n_routed_experts=4, n_shared_experts=1, q_lora_rank=None, kv_lora_rank=16,
                         qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, first_k_dense_replace=0,
                         num_key_value_heads=4, head_dim=8)],
    "deepseek_v3": [dict(MOE, n_routed_experts=4, n_shared_experts=1, q_lora_rank=24, kv_lora_rank=16,
                         qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, first_k_dense_replace=1,
                         num_key_value_heads=4, n_group=1, topk_group=1, head_dim=8)],
    "gpt_oss": [dict(num_local_experts=4, num_experts_per_tok=2, head_dim=16, intermediate_size=32)],
    "olmo": [{}],
    "olmo2": [{}],
    "olmo3": [{}],
    "cohere": [{}, {"use_qk_norm": True}],
    "cohere2": [dict(head_dim=16)],
    "starcoder2": [{}, {"use_bias": False}],
    "granite": [{}],
    "granitemoe": [dict(num_local_experts=4, num_experts_per_tok=2)],
    "gptj": [dict(n_layer=3, n_embd=64, n_head=4, rotary_dim=8, n_positions=256, vocab_size=300),
             dict(n_layer=2, n_embd=64, n_head=4, rotary_dim=8, n_inner=100, n_positions=128, vocab_size=300)],
    "falcon": [dict(num_kv_heads=None), dict(new_decoder_architecture=True, num_kv_heads=2),
               dict(new_decoder_architecture=True, num_kv_heads=2, num_ln_in_parallel_attn=1),
               dict(multi_query=False, parallel_attn=False, bias=True, alibi=True)],
    "opt": [dict(ffn_dim=96), dict(ffn_dim=96, enable_bias=False)],
    "bloom": [dict(n_layer=3, n_head=4)],
    "mpt": [dict(d_model=64, n_heads=4, n_layers=3, max_seq_len=256, expansion_ratio=2),
            dict(d_model=64, n_heads=4, n_layers=2, max_seq_len=128, no_bias=False)],
    "smollm3": [{}],
    "phimoe": [dict(num_local_experts=4, num_experts_per_tok=2), dict(num_local_experts=4, attention_bias=True,
                                                                       lm_head_bias=True)],
    "exaone4": [dict(head_dim=16)],
    "phi": [{}, {"qk_layernorm": True}],
    "phi3": [{}],
    "gpt2": [dict(n_layer=3, n_embd=64, n_head=4, n_positions=256, vocab_size=300),
             dict(n_layer=2, n_embd=64, n_head=4, n_inner=100, n_positions=128, vocab_size=300,
                  tie_word_embeddings=False)],
    "gpt_neox": [{}, {"attention_bias": False, "use_parallel_residual": False}],
}
# Families whose config class names the shapes differently: only the keys the variant gives.
OWN_KEYS = {"gptj", "bloom", "mpt", "gpt2"}


def main():
    out = []
    for mt, variants in VARIANTS.items():
        for i, v in enumerate(variants):
            kw = dict(v) if mt in OWN_KEYS else dict(SMALL, **v)
            kw["pad_token_id"] = None
            if mt == "bloom":
                kw.update(hidden_size=64, vocab_size=300)
            if mt == "opt":
                kw.pop("intermediate_size", None)
                kw.pop("num_key_value_heads", None)
            if mt == "falcon":
                kw.pop("intermediate_size", None)
                kw.pop("num_key_value_heads", None)
                kw["ffn_hidden_size"] = 96
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = AutoConfig.for_model(mt, **kw)
                with torch.device("meta"):
                    model = AutoModelForCausalLM.from_config(cfg)
            n = sum(p.numel() for p in model.parameters())
            d = cfg.to_dict()
            for k in ("architectures", "id2label", "label2id", "transformers_version", "dtype", "torch_dtype",
                      "task_specific_params"):
                d.pop(k, None)
            d["model_type"] = mt
            out.append({"name": "%s_%d" % (mt, i), "hf_config": d, "transformers_params": n,
                        "transformers": transformers.__version__})
            print("%-16s %12d" % (out[-1]["name"], n))
    (HERE / "variants.jsonl").write_text("".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in out))


if __name__ == "__main__":
    main()
