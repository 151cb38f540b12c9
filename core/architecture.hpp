// A decoder-only transformer's shape, and its exact parameter count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vramcalc {

enum class Mlp { swiglu, geglu, gelu };  // gated (3 matrices) or plain (2 matrices)
enum class Norm { rmsnorm, layernorm };
enum class Position { rope, learned };

struct Architecture {
    std::string id = "custom";     // preset id, or "custom"
    std::uint64_t layers = 32;
    std::uint64_t hidden = 4096;
    std::uint64_t heads = 32;
    std::uint64_t kv_heads = 32;
    std::uint64_t head_dim = 0;    // 0: hidden / heads
    std::uint64_t ffn = 11008;
    std::uint64_t vocab = 32000;
    Mlp mlp = Mlp::swiglu;
    Norm norm = Norm::rmsnorm;
    bool bias = false;             // biases on every attention and MLP projection (GPT-2, GPT-NeoX, Phi)
    bool qkv_bias = false;         // biases on q/k/v only (Qwen2)
    bool lm_head_bias = false;     // Phi
    bool tied_embeddings = false;
    Position position = Position::rope;
    std::uint64_t max_positions = 4096;
    double dropout = 0.0;
    std::uint64_t experts = 1;
    std::uint64_t experts_per_token = 1;
    std::uint64_t norms_per_layer = 2;  // 1 for parallel attention+MLP blocks that share a norm (Phi)
};

inline std::uint64_t head_dim(const Architecture& a) { return a.head_dim ? a.head_dim : a.hidden / a.heads; }
inline bool gated(const Architecture& a) { return a.mlp != Mlp::gelu; }
// GPT-2's module layout: fused c_attn, gelu_new MLP (c_fc, c_proj), learned positions.
inline bool gpt2_layout(const Architecture& a) { return a.position == Position::learned && a.mlp == Mlp::gelu; }

// One linear projection of a layer, as LoRA adapters see it.
struct Linear {
    std::string name;
    std::uint64_t in = 0, out = 0;
    std::uint64_t count = 1;  // per layer (e.g. once per expert)
};

std::uint64_t norm_params(const Architecture&);
std::uint64_t embedding_params(const Architecture&);   // token (+ learned position) embeddings
std::uint64_t attention_params(const Architecture&);   // per layer
std::uint64_t mlp_params(const Architecture&);         // per layer, all experts and the router
std::uint64_t layer_params(const Architecture&);
std::uint64_t lm_head_params(const Architecture&);     // 0 when tied to the embedding
std::uint64_t total_params(const Architecture&);
// Parameters held by the layers' linear projections (what QLoRA quantizes to NF4).
std::uint64_t linear_weight_params(const Architecture&);

// The projections of one layer with Llama's names (q_proj ... down_proj).
std::vector<Linear> layer_linears(const Architecture&);
// The projections LoRA can target, in module order, with the model's own names (GPT-2: c_attn, c_proj,
// c_fc, c_proj; otherwise Llama's).
std::vector<Linear> adapter_linears(const Architecture&);
// One parameter tensor (rows x cols; cols == 1 for vectors), `count` of them in the whole model;
// `in_layers` when they repeat in every layer (count is then a multiple of the layers).
struct Tensor {
    std::uint64_t rows = 0, cols = 1, count = 1;
    bool in_layers = false;
    std::uint64_t numel() const { return rows * cols; }
};
// Every parameter tensor in module registration order (what optimizer.step() walks); their elements add up
// to total_params.
std::vector<Tensor> parameter_tensors(const Architecture&);
// The LoRA A and B matrices on the named projections of every layer.
std::vector<Tensor> lora_tensors(const Architecture&, std::uint64_t rank, const std::vector<std::string>& targets);

// Trainable adapter parameters for LoRA of `rank` on the named projections of every layer.
std::uint64_t lora_params(const Architecture&, std::uint64_t rank, const std::vector<std::string>& targets);

}  // namespace vramcalc
