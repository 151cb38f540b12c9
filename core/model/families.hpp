// What a model family's transformers code names its modules and how its eager attention computes: the
// facts the memory terms need beyond the shapes. One row per HF model_type (families.cpp).
#pragma once
#include <string>
#include <vector>

namespace vramcalc {

enum class NormCompute { fp32_cast_back, fp32_weight, input_dtype };

struct Family {
    const char* model_type;
    // Attention projections: a fused one (GPT-2's c_attn) and/or q, k, v (LitGPT: LoRA's names for the parts
    // of its fused qkv); then the output projection.
    const char* qkv;  // nullptr when q, k and v are separate modules
    const char* q;
    const char* k;
    const char* v;
    const char* o;
    // MLP: gated families' gate and up (or one fused gate_up), then down; plain ones' up and down.
    const char* gate;     // nullptr: plain MLP, or the gate is fused into `up`
    const char* up;
    const char* down;
    bool fused_gate_up;   // Phi-3's gate_up_proj
    bool fp32_softmax;    // eager attention computes the softmax in fp32 (and casts it back)
    bool norm_first;      // modules registered norm, attention, norm, MLP (GPT-2), else attention, MLP, norms
    // Routed experts: transformers 5's grouped_mm path (each token through its top-k experts, in the
    // weights' dtype: grouped_mm is not autocast-enabled), or Llama 4's dense bmm over every expert (autocast).
    bool experts_see_every_token;
    // LayerNorm written out in Python (Cohere): the centred input is kept twice and the normalised
    // input once more, where the native kernel keeps the input and two statistics.
    bool python_layernorm;
    // Where RMSNorm computes: in fp32, cast back before the weight (transformers'); in fp32 with the weight,
    // keeping the fp32 normalised input (torchtune >= 0.5, LitGPT); or in the input's dtype (lit-gpt 2023).
    NormCompute norm_compute;
    // Grouped k and v are repeated to every query head before SDPA (torchtune, LitGPT in training).
    bool sdpa_repeats_kv;
    const char* head;     // the output projection's name as a LoRA target
    // Every GELU form runs as one torch.nn.functional.gelu kernel, saving its input, whatever form the Hugging Face
    // config names (gelu_new, gelu_fast, ...): the stacks' own MLPs (litgpt/model.py GptNeoxMLP and GemmaMLP,
    // F.gelu with the model's approximate; torchtune's Gemma, nn.GELU(approximate="tanh")).
    bool fused_gelu = false;
    // v is a slice view of the fused qkv output (phi3's qkv[..., q + k:]), handed to SDPA as it is when k and v are
    // not repeated: it keeps the whole output alive beside the rotated q and k SDPA saves.
    bool v_views_qkv = false;
    // The model's code holds the output projection as its own weight whatever the checkpoint ties (LitGPT's GPT has
    // its own lm_head; convert_hf_checkpoint copies a tied embedding into it).
    bool own_head = false;
    // The rotary embedding joins its rotated and passed parts with torch.cat (partial rotary: modeling_gpt_neox.py,
    // modeling_phi*.py): q leaves it contiguous heads-first, SDPA's output takes q's layout, and the transpose back
    // for the output projection copies it, so the projection saves its own copy of its input.
    bool rotary_cat = false;
    // The model always hands SDPA a mask (modeling_falcon.py: create_causal_mask(allow_is_causal_skip=False)), so k
    // and v reach it repeated to every head and every layer saves the mask SDPA makes of it.
    bool sdpa_mask_always = false;
};

// A row by its model_type: nullptr when there is none (families sharing Llama's code use its row).
const Family* find_family_row(const std::string& model_type);
const Family& llama_family();
const std::vector<Family>& family_rows();

}  // namespace vramcalc
