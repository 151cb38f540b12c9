// A decoder-only transformer's shape, and its exact parameter count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/activations.hpp"
#include "model/families.hpp"

namespace vramcalc {

enum class Mlp { swiglu, geglu, gelu };  // gated (3 matrices) or plain (2 matrices); the activation is its own field
enum class Norm { rmsnorm, layernorm };
enum class Position { rope, learned, alibi, none };
// q/k normalisation before attention: over each head (Qwen3, Gemma 3) or over the whole projection (OLMo 2).
enum class QkNorm { none, per_head, full };

struct Architecture {
    std::string id = "custom";     // catalog id, or "custom"
    const Family* family = &llama_family();  // whose module names and modeling code it follows
    std::uint64_t layers = 32;
    std::uint64_t hidden = 4096;
    std::uint64_t heads = 32;
    std::uint64_t kv_heads = 32;
    std::uint64_t head_dim = 0;    // 0: hidden / heads
    std::uint64_t ffn = 11008;     // dense MLP width (MoE: the dense layers' width)
    std::uint64_t vocab = 32000;
    Mlp mlp = Mlp::swiglu;
    Activation activation = Activation::silu;
    Norm norm = Norm::rmsnorm;
    bool norm_weight = true;       // false: OLMo's LayerNorm without parameters
    bool norm_bias = true;         // LayerNorm only; false for Cohere's and MPT's
    std::uint64_t norms_per_layer = 2;  // 1: parallel blocks sharing a norm; 3-4: sandwich norms (Gemma 2/3)
    bool parallel_block = false;   // attention and MLP read the same input (GPT-J, Falcon, Cohere, Phi, NeoX)
    QkNorm qk_norm = QkNorm::none;
    bool attention_bias = false;   // q, k, v and o projections
    bool qkv_bias = false;         // q, k, v only (Qwen2)
    bool mlp_bias = false;
    bool lm_head_bias = false;     // Phi, GPT-J
    bool tied_embeddings = false;
    bool embedding_norm = false;   // BLOOM's LayerNorm after the embedding
    std::uint64_t embed_dim = 0;   // OPT's word_embed_proj_dim when it differs from hidden (project_in/out)
    Position position = Position::rope;
    std::uint64_t position_offset = 0;  // OPT's learned positions start at 2
    std::uint64_t max_positions = 4096;
    // Dropout probabilities, each where the model applies it.
    double residual_dropout = 0.0;    // on the attention and MLP outputs
    double attention_dropout = 0.0;   // on the softmax probabilities
    double embedding_dropout = 0.0;   // on the embeddings
    double activation_dropout = 0.0;  // inside the MLP, after the activation (OPT)
    // Attention variants.
    bool attention_sinks = false;       // gpt-oss: one learned logit per head joins the softmax
    double attn_softcap = 0;            // Gemma 2: cap * tanh(scores / cap)
    double final_softcap = 0;           // Gemma 2: the same on the logits
    bool scaled_logits = false;         // Granite's logits_scaling, Cohere's logit_scale: one more logits tensor
    std::uint64_t sliding_window = 0;   // 0: every layer attends to the whole sequence
    std::uint64_t sliding_layers = 0;   // how many layers use the window
    // Multi-head latent attention (DeepSeek-V2/V3): kv_lora_rank > 0.
    std::uint64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
    // Mixture of experts.
    std::uint64_t experts = 1;
    std::uint64_t experts_per_token = 1;
    std::uint64_t moe_ffn = 0;          // each routed expert's width (0: ffn)
    std::uint64_t shared_experts = 0;   // always-on experts, fused into one MLP of shared_experts x shared_ffn
    std::uint64_t shared_ffn = 0;       // each shared expert's width (0: moe_ffn)
    bool shared_expert_gate = false;    // Qwen2-MoE: a sigmoid gate (hidden -> 1) on the shared expert
    bool router_bias = false;           // gpt-oss
    bool expert_bias = false;           // gpt-oss: biases inside every expert
    std::uint64_t dense_layers = 0;     // MoE models: layers with a dense MLP instead (DeepSeek's first_k_dense_replace)
    bool router_logits_kept = false;    // output_router_logits: every layer's router logits live until the aux loss
    // AutoModelForSequenceClassification (PPO's value and reward models): `score`, Linear(hidden, labels) without
    // bias, replaces the LM head, never tied (transformers' *ForSequenceClassification). 0: the LM head.
    std::uint64_t score_labels = 0;

    // Dropout as the explicit form's one key sets it: at every site.
    void set_dropout(double p) { residual_dropout = attention_dropout = embedding_dropout = p; }
};

// The activation the model's code runs: the configuration's, or one torch.nn.functional.gelu kernel for any GELU
// form where the family's code runs that (Family::fused_gelu).
const ActivationCost& activation_run(const Architecture&);

inline std::uint64_t head_dim(const Architecture& a) { return a.head_dim ? a.head_dim : a.hidden / a.heads; }
inline bool gated(const Architecture& a) { return a.mlp != Mlp::gelu; }
inline bool is_moe(const Architecture& a) { return a.experts > 1; }
inline bool is_mla(const Architecture& a) { return a.kv_lora_rank > 0; }
inline std::uint64_t moe_layers(const Architecture& a) { return is_moe(a) ? a.layers - a.dense_layers : 0; }
inline std::uint64_t expert_ffn(const Architecture& a) { return a.moe_ffn ? a.moe_ffn : a.ffn; }
inline std::uint64_t shared_width(const Architecture& a) {
    return a.shared_experts * (a.shared_ffn ? a.shared_ffn : expert_ffn(a));
}
// Widths of the attention projections: query (and key) width, value width, output input width.
std::uint64_t q_width(const Architecture&);
std::uint64_t kv_width(const Architecture&);   // one of k or v (GQA); MLA: the per-head keys of all heads
std::uint64_t v_width(const Architecture&);
std::uint64_t embedding_width(const Architecture&);

// One linear projection of a layer, as LoRA adapters see it.
struct Linear {
    std::string name;
    std::uint64_t in = 0, out = 0;
    std::uint64_t count = 1;   // per layer
    std::uint64_t layers = 0;  // how many layers have it (0: all)
};

std::uint64_t norm_params(const Architecture&);
std::uint64_t embedding_params(const Architecture&);   // token (+ learned position) embeddings, BLOOM's norm
std::uint64_t attention_params(const Architecture&);   // per layer
std::uint64_t dense_mlp_params(const Architecture&);   // one dense layer's MLP
std::uint64_t moe_mlp_params(const Architecture&);     // one MoE layer's router, experts and shared experts
std::uint64_t mlp_params(const Architecture&);         // the largest layer's MLP
std::uint64_t layer_params(const Architecture&);       // the largest layer
std::uint64_t layers_params(const Architecture&);      // all layers
std::uint64_t lm_head_params(const Architecture&);     // 0 when tied to the embedding
std::uint64_t total_params(const Architecture&);
// Parameters held by the layers' linear projections and experts (what QLoRA quantizes to NF4).
std::uint64_t linear_weight_params(const Architecture&);

// The projections of one layer with the family's module names, in module order: attention, then MLP.
std::vector<Linear> attention_linears(const Architecture&);
std::vector<Linear> mlp_linears(const Architecture&);
std::vector<Linear> layer_linears(const Architecture&);
// The projections LoRA can target: nn.Linear modules (transformers keeps routed experts as 3-D parameters).
std::vector<Linear> adapter_linears(const Architecture&);
// What LoRA can adapt: the model's projections by name, its output projection, "all-linear"; and what it adapts when
// no targets are given.
std::vector<std::string> adapter_target_names(const Architecture&);
std::vector<std::string> default_adapter_targets(const Architecture&);
// One parameter tensor (rows x cols; cols == 1 for vectors), `count` of them in the whole model;
// `in_layers` when they repeat in the layers.
struct Tensor {
    std::uint64_t rows = 0, cols = 1, count = 1;
    bool in_layers = false;
    std::uint64_t numel() const { return rows * cols; }
};
// Every parameter tensor in module registration order (what optimizer.step() walks); their elements add up
// to total_params.
std::vector<Tensor> parameter_tensors(const Architecture&);
// Whether LoRA adapts the output projection (named explicitly: "all-linear" leaves it out, as PEFT does).
bool adapts_head(const Architecture&, const std::vector<std::string>& targets);
// The LoRA A and B matrices on the named projections of every layer (and on the output projection).
std::vector<Tensor> lora_tensors(const Architecture&, std::uint64_t rank, const std::vector<std::string>& targets);

// Trainable adapter parameters for LoRA of `rank` on the named projections of every layer.
std::uint64_t lora_params(const Architecture&, std::uint64_t rank, const std::vector<std::string>& targets);

}  // namespace vramcalc
