#include "model/families.hpp"

namespace vramcalc {

namespace {

constexpr NormCompute kCastBack = NormCompute::fp32_cast_back, kFp32Weight = NormCompute::fp32_weight,
                      kInputDtype = NormCompute::input_dtype;

// Module names from each family's modeling_<type>.py in transformers 5.18 (internlm2 and exaone: the
// models' own remote code); fp32_softmax from each eager attention function.
const std::vector<Family> kFamilies = {
    // type          qkv                q         k         v         o            gate          up              down             fused  fp32   norm1st every pyln  norm  rep   head  (fused_gelu)
    {"llama",        nullptr,           "q_proj", "k_proj", "v_proj", "o_proj",    "gate_proj",  "up_proj",      "down_proj",     false, true,  false, false, false, kCastBack, false, "lm_head"},
    // Llama's modules with an RMSNorm that multiplies its weight in fp32 and casts after: Gemma 1-3 (x·rsqrt·(1 + w)
    // in fp32, modeling_gemma*.py), OLMo 2 and 3, gpt-oss ((weight * x).to(input_dtype)): its fp32 normalised input
    // is saved, also on 16-bit inputs (q/k norms, sandwich norms; measured: *_bf16mixed_flash).
    {"llama-fp32-norm", nullptr,         "q_proj", "k_proj", "v_proj", "o_proj",    "gate_proj",  "up_proj",      "down_proj",     false, true,  false, false, false, kFp32Weight, false, "lm_head"},
    {"gpt2",         "c_attn",          nullptr,  nullptr,  nullptr,  "c_proj",    nullptr,      "c_fc",         "c_proj",        false, false, true, false, false, kCastBack, false, "lm_head"},
    {"gpt_neox",     "query_key_value", nullptr,  nullptr,  nullptr,  "dense",     nullptr,      "dense_h_to_4h", "dense_4h_to_h", false, true,  false, false, false, kCastBack, false, "lm_head", false, true, false, true},
    {"phi",          nullptr,           "q_proj", "k_proj", "v_proj", "dense",     nullptr,      "fc1",          "fc2",           false, true,  false, false, false, kCastBack, false, "lm_head", false, false, false, true},
    {"phi3",         "qkv_proj",        nullptr,  nullptr,  nullptr,  "o_proj",    nullptr,      "gate_up_proj", "down_proj",     true,  true,  false, false, false, kCastBack, false, "lm_head", false, true, false, true},
    {"starcoder2",   nullptr,           "q_proj", "k_proj", "v_proj", "o_proj",    nullptr,      "c_fc",         "c_proj",        false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"gptj",         nullptr,           "q_proj", "k_proj", "v_proj", "out_proj",  nullptr,      "fc_in",        "fc_out",        false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"falcon",       "query_key_value", nullptr,  nullptr,  nullptr,  "dense",     nullptr,      "dense_h_to_4h", "dense_4h_to_h", false, true,  false, false, false, kCastBack, false, "lm_head", false, false, false, false, true},
    {"bloom",        "query_key_value", nullptr,  nullptr,  nullptr,  "dense",     nullptr,      "dense_h_to_4h", "dense_4h_to_h", false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"opt",          nullptr,           "q_proj", "k_proj", "v_proj", "out_proj",  nullptr,      "fc1",          "fc2",           false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"mpt",          "Wqkv",            nullptr,  nullptr,  nullptr,  "out_proj",  nullptr,      "up_proj",      "down_proj",     false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"internlm2",    "wqkv",            nullptr,  nullptr,  nullptr,  "wo",        "w1",         "w3",           "w2",            false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"exaone",       nullptr,           "q_proj", "k_proj", "v_proj", "out_proj",  "c_fc_0",     "c_fc_1",       "c_proj",        false, true,  false, false, false, kCastBack, false, "lm_head"},
    // MLA's projections (q_a_proj/q_b_proj, kv_a_proj_with_mqa, kv_b_proj) come from the architecture.
    {"llama4",       nullptr,           "q_proj", "k_proj", "v_proj", "o_proj",    "gate_proj",  "up_proj",      "down_proj",     false, true,  false, true, false, kCastBack, false, "lm_head"},
    {"cohere",       nullptr,           "q_proj", "k_proj", "v_proj", "o_proj",    "gate_proj",  "up_proj",      "down_proj",     false, true,  false, false, true, kCastBack, false, "lm_head"},
    // The stacks' own model code (torchtune.models, torchtitan.models.llama3, litgpt.model), which a framework
    // profile selects; "-<release>" rows are earlier revisions of it (frameworks.cpp).
    {"torchtune",    nullptr,           "q_proj", "k_proj", "v_proj", "output_proj", "w1",       "w3",           "w2",            false, true,  false, false, false, kFp32Weight, true, "output", true},
    {"torchtune-0.1", nullptr,           "q_proj", "k_proj", "v_proj", "output_proj", "w1",       "w3",           "w2",            false, true,  false, false, false, kCastBack, true, "output", true},
    {"torchtitan",   nullptr,           "wq",     "wk",     "wv",     "wo",        "w1",         "w3",           "w2",            false, true,  false, false, false, kFp32Weight, false, "output"},
    {"torchtitan-0.1",nullptr,           "wq",     "wk",     "wv",     "wo",        "w1",         "w3",           "w2",            false, true,  false, false, false, kFp32Weight, true, "output"},
    {"torchtitan-2024",nullptr,           "wq",     "wk",     "wv",     "wo",        "w1",         "w3",           "w2",            false, true,  false, false, false, kCastBack, true, "output"},
    {"litgpt",       "qkv",             "query",  "key",    "value",  "projection", "mlp",       "mlp",          "mlp",           false, true,  false, false, false, kFp32Weight, true, "head", true, false, true},
    {"litgpt-0.3",   "qkv",             "query",  "key",    "value",  "projection", "mlp",       "mlp",          "mlp",           false, true,  false, false, false, kCastBack, true, "head", true, false, true},
    {"litgpt-2023",  "qkv",             "query",  "key",    "value",  "projection", "mlp",       "mlp",          "mlp",           false, true,  false, false, false, kInputDtype, true, "head", true, false, true},
    {"deepseek_v2",  nullptr,           "q_proj", "k_proj", "v_proj", "o_proj",    "gate_proj",  "up_proj",      "down_proj",     false, true,  false, false, false, kCastBack, false, "lm_head"},
    {"deepseek_v3",  nullptr,           "q_proj", "k_proj", "v_proj", "o_proj",    "gate_proj",  "up_proj",      "down_proj",     false, true,  false, false, false, kCastBack, false, "lm_head"},
};

}  // namespace

const Family* find_family_row(const std::string& model_type) {
    for (const Family& f : kFamilies)
        if (model_type == f.model_type) return &f;
    return nullptr;
}

const Family& llama_family() { return kFamilies[0]; }
const std::vector<Family>& family_rows() { return kFamilies; }

}  // namespace vramcalc
