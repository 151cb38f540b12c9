#include "architecture.hpp"

#include <algorithm>

namespace vramcalc {

// Parameter counts follow the Hugging Face modeling files (modeling_llama.py, modeling_gpt2.py,
// modeling_mixtral.py, modeling_phi.py); tests check them against the published model cards.

std::uint64_t norm_params(const Architecture& a) { return a.norm == Norm::layernorm ? 2 * a.hidden : a.hidden; }

std::uint64_t embedding_params(const Architecture& a) {
    std::uint64_t n = a.vocab * a.hidden;
    if (a.position == Position::learned) n += a.max_positions * a.hidden;
    return n;
}

std::uint64_t attention_params(const Architecture& a) {
    const std::uint64_t q = a.heads * head_dim(a), kv = a.kv_heads * head_dim(a);
    std::uint64_t n = a.hidden * q + 2 * a.hidden * kv + q * a.hidden;
    if (a.bias || a.qkv_bias) n += q + 2 * kv;
    if (a.bias) n += a.hidden;
    return n;
}

std::uint64_t mlp_params(const Architecture& a) {
    const std::uint64_t matrices = gated(a) ? 3 : 2;
    std::uint64_t expert = matrices * a.hidden * a.ffn;
    if (a.bias) expert += (matrices - 1) * a.ffn + a.hidden;
    const std::uint64_t router = a.experts > 1 ? a.hidden * a.experts : 0;
    return a.experts * expert + router;
}

std::uint64_t layer_params(const Architecture& a) {
    return attention_params(a) + mlp_params(a) + a.norms_per_layer * norm_params(a);
}

std::uint64_t lm_head_params(const Architecture& a) {
    if (a.tied_embeddings) return 0;
    return a.vocab * a.hidden + (a.lm_head_bias ? a.vocab : 0);
}

std::uint64_t total_params(const Architecture& a) {
    return embedding_params(a) + a.layers * layer_params(a) + norm_params(a) + lm_head_params(a);
}

std::vector<Linear> layer_linears(const Architecture& a) {
    const std::uint64_t h = a.hidden, q = a.heads * head_dim(a), kv = a.kv_heads * head_dim(a), f = a.ffn;
    std::vector<Linear> l{{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", q, h}};
    if (gated(a)) {
        l.push_back({"gate_proj", h, f, a.experts});
        l.push_back({"up_proj", h, f, a.experts});
    } else {
        l.push_back({"up_proj", h, f, a.experts});
    }
    l.push_back({"down_proj", f, h, a.experts});
    return l;
}

std::uint64_t linear_weight_params(const Architecture& a) {
    std::uint64_t n = 0;
    for (const Linear& l : layer_linears(a)) n += l.in * l.out * l.count;
    return a.layers * n;
}

std::vector<Linear> adapter_linears(const Architecture& a) {
    if (!gpt2_layout(a)) return layer_linears(a);
    const std::uint64_t h = a.hidden, q = a.heads * head_dim(a), kv = a.kv_heads * head_dim(a), f = a.ffn;
    return {{"c_attn", h, q + 2 * kv}, {"c_proj", q, h}, {"c_fc", h, f, a.experts}, {"c_proj", f, h, a.experts}};
}

std::vector<Tensor> lora_tensors(const Architecture& a, std::uint64_t rank, const std::vector<std::string>& targets) {
    const bool all = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
    std::vector<Tensor> out;
    for (const Linear& l : adapter_linears(a))
        if (all || std::find(targets.begin(), targets.end(), l.name) != targets.end()) {
            out.push_back({rank, l.in, a.layers * l.count, true});   // A: rank x in
            out.push_back({l.out, rank, a.layers * l.count, true});  // B: out x rank
        }
    return out;
}

std::uint64_t lora_params(const Architecture& a, std::uint64_t rank, const std::vector<std::string>& targets) {
    std::uint64_t n = 0;
    for (const Tensor& t : lora_tensors(a, rank, targets)) n += t.numel() * t.count;
    return n;
}

std::vector<Tensor> parameter_tensors(const Architecture& a) {
    const std::uint64_t h = a.hidden, L = a.layers;
    std::vector<Tensor> t{{a.vocab, h}};
    if (a.position == Position::learned) t.push_back({a.max_positions, h});
    auto norm = [&] {
        t.push_back({h, 1, L, true});
        if (a.norm == Norm::layernorm) t.push_back({h, 1, L, true});
    };
    auto linear = [&](const Linear& l, bool bias) {
        t.push_back({l.out, l.in, L * l.count, true});
        if (bias) t.push_back({l.out, 1, L * l.count, true});
    };
    const std::vector<Linear> linears = adapter_linears(a);
    if (gpt2_layout(a)) {  // ln_1, c_attn, c_proj, ln_2, c_fc, c_proj
        norm(), linear(linears[0], a.bias), linear(linears[1], a.bias);
        norm(), linear(linears[2], a.bias), linear(linears[3], a.bias);
    } else {  // self_attn (q, k, v, o), mlp (router, experts), then the layer's norms
        for (std::size_t i = 0; i < 4; ++i) linear(linears[i], a.bias || (i < 3 && a.qkv_bias));
        if (a.experts > 1) t.push_back({a.experts, h, L, true});
        for (std::size_t i = 4; i < linears.size(); ++i) linear(linears[i], a.bias);
        for (std::uint64_t i = 0; i < a.norms_per_layer; ++i) norm();
    }
    t.push_back({h, 1, a.norm == Norm::layernorm ? 2u : 1u});  // final norm
    if (!a.tied_embeddings) t.push_back({a.vocab, h});
    if (a.lm_head_bias) t.push_back({a.vocab, 1});
    return t;
}

}  // namespace vramcalc
