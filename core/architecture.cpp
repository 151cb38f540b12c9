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

std::uint64_t largest_tensor_params(const Architecture& a) {
    std::uint64_t m = a.vocab * a.hidden;
    for (const Linear& l : layer_linears(a)) m = std::max(m, l.in * l.out);
    return m;
}

namespace {
// GPT-2 names for the same projections: c_attn is the fused q/k/v, c_proj matches both output
// projections (PEFT matches by suffix), c_fc the MLP's input projection.
std::vector<Linear> gpt2_linears(const Architecture& a) {
    const std::uint64_t h = a.hidden, q = a.heads * head_dim(a), kv = a.kv_heads * head_dim(a), f = a.ffn;
    return {{"c_attn", h, q + 2 * kv}, {"c_proj", q, h}, {"c_proj", f, h, a.experts}, {"c_fc", h, f, a.experts}};
}
}  // namespace

std::vector<Tensor> lora_tensors(const Architecture& a, std::uint64_t rank, const std::vector<std::string>& targets) {
    const bool all = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
    std::vector<Tensor> out;
    auto add_matching = [&](const std::vector<Linear>& linears) {
        for (const Linear& l : linears)
            if (all || std::find(targets.begin(), targets.end(), l.name) != targets.end()) {
                out.push_back({rank, l.in, a.layers * l.count, true});   // A: rank x in
                out.push_back({l.out, rank, a.layers * l.count, true});  // B: out x rank
            }
    };
    add_matching(layer_linears(a));
    if (!all) add_matching(gpt2_linears(a));
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
    for (const Linear& l : layer_linears(a)) t.push_back({l.out, l.in, L * l.count, true});
    if (a.bias || a.qkv_bias)
        for (const Linear& l : layer_linears(a))
            if (a.bias || l.name == "q_proj" || l.name == "k_proj" || l.name == "v_proj")
                t.push_back({l.out, 1, L * l.count, true});
    if (a.experts > 1) t.push_back({a.experts, h, L, true});
    const std::uint64_t norm_tensors = a.norm == Norm::layernorm ? 2 : 1;
    t.push_back({h, 1, norm_tensors * a.norms_per_layer * L, true});
    t.push_back({h, 1, norm_tensors});  // final norm
    if (!a.tied_embeddings) t.push_back({a.vocab, h});
    if (a.lm_head_bias) t.push_back({a.vocab, 1});
    return t;
}

}  // namespace vramcalc
