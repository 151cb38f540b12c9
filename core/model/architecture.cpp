#include "model/architecture.hpp"

#include <algorithm>

#include "model/families.hpp"

namespace vramcalc {

// Parameter counts follow the module shapes of transformers 5.18's modeling_<type>.py files; tests check
// them against counts taken from the real modules and against the published figures.

std::uint64_t q_width(const Architecture& a) {
    return a.heads * (is_mla(a) ? a.qk_nope_dim + a.qk_rope_dim : head_dim(a));
}
std::uint64_t kv_width(const Architecture& a) { return is_mla(a) ? q_width(a) : a.kv_heads * head_dim(a); }
std::uint64_t v_width(const Architecture& a) { return is_mla(a) ? a.heads * a.v_head_dim : a.kv_heads * head_dim(a); }
std::uint64_t embedding_width(const Architecture& a) { return a.embed_dim ? a.embed_dim : a.hidden; }

std::uint64_t norm_params(const Architecture& a) {
    if (a.norm == Norm::rmsnorm) return a.hidden;
    return a.norm_weight ? (a.norm_bias ? 2 : 1) * a.hidden : 0;
}

std::uint64_t embedding_params(const Architecture& a) {
    const std::uint64_t e = embedding_width(a);
    std::uint64_t n = a.vocab * e;
    if (a.position == Position::learned) n += (a.max_positions + a.position_offset) * a.hidden;
    if (a.embedding_norm) n += norm_params(a);
    if (e != a.hidden) n += 2 * e * a.hidden;  // OPT's project_in and project_out
    return n;
}

namespace {

std::uint64_t qk_norm_params(const Architecture& a) {
    const std::uint64_t per = a.norm == Norm::layernorm && a.norm_bias ? 2 : 1;
    if (a.qk_norm == QkNorm::per_head) return 2 * per * head_dim(a);
    if (a.qk_norm == QkNorm::full) return per * (a.heads + a.kv_heads) * head_dim(a);
    return 0;
}

std::uint64_t mlp_matrices(const Architecture& a) { return gated(a) ? 3 : 2; }

// One MLP of width f: its matrices and, with `bias`, up/gate and down biases.
std::uint64_t mlp_of(const Architecture& a, std::uint64_t f, bool bias) {
    std::uint64_t n = mlp_matrices(a) * a.hidden * f;
    if (bias) n += (mlp_matrices(a) - 1) * f + a.hidden;
    return n;
}

}  // namespace

std::uint64_t attention_params(const Architecture& a) {
    const std::uint64_t h = a.hidden, q = q_width(a), o = a.heads * (is_mla(a) ? a.v_head_dim : head_dim(a));
    std::uint64_t n = 0;
    if (is_mla(a)) {  // modeling_deepseek_v3.py DeepseekV3Attention
        n += a.q_lora_rank ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * q : h * q;
        n += h * (a.kv_lora_rank + a.qk_rope_dim) + a.kv_lora_rank;
        n += a.kv_lora_rank * a.heads * (a.qk_nope_dim + a.v_head_dim);
        n += o * h;
        if (a.attention_bias) n += (a.q_lora_rank ? a.q_lora_rank : 0) + a.kv_lora_rank + a.qk_rope_dim + h;
    } else {
        const std::uint64_t kv = kv_width(a);
        n += h * q + 2 * h * kv + o * h;
        if (a.attention_bias || a.qkv_bias) n += q + 2 * kv;
        if (a.attention_bias) n += h;
    }
    n += qk_norm_params(a);
    if (a.attention_sinks) n += a.heads;
    return n;
}

std::uint64_t dense_mlp_params(const Architecture& a) { return mlp_of(a, a.ffn, a.mlp_bias); }

std::uint64_t moe_mlp_params(const Architecture& a) {
    if (!is_moe(a)) return 0;
    std::uint64_t n = a.hidden * a.experts + (a.router_bias ? a.experts : 0);
    n += a.experts * mlp_of(a, expert_ffn(a), a.expert_bias);
    if (a.shared_experts) n += mlp_of(a, shared_width(a), false) + (a.shared_expert_gate ? a.hidden : 0);
    return n;
}

std::uint64_t mlp_params(const Architecture& a) {
    if (!is_moe(a)) return dense_mlp_params(a);
    return a.dense_layers ? std::max(dense_mlp_params(a), moe_mlp_params(a)) : moe_mlp_params(a);
}

std::uint64_t layer_params(const Architecture& a) {
    return attention_params(a) + mlp_params(a) + a.norms_per_layer * norm_params(a);
}

std::uint64_t layers_params(const Architecture& a) {
    const std::uint64_t moe = moe_layers(a);
    return a.layers * (attention_params(a) + a.norms_per_layer * norm_params(a)) + moe * moe_mlp_params(a) +
           (a.layers - moe) * dense_mlp_params(a);
}

std::uint64_t lm_head_params(const Architecture& a) {
    if (a.score_labels) return a.score_labels * a.hidden;
    if (a.tied_embeddings) return 0;
    return a.vocab * embedding_width(a) + (a.lm_head_bias ? a.vocab : 0);
}

std::uint64_t total_params(const Architecture& a) {
    return embedding_params(a) + layers_params(a) + norm_params(a) + lm_head_params(a);
}

const ActivationCost& activation_run(const Architecture& a) {
    switch (a.activation) {
        case Activation::gelu_new:
        case Activation::gelu_fast:
        case Activation::gelu_accurate:
        case Activation::gelu_python:
        case Activation::gelu_python_tanh:
        case Activation::bloom_gelu:
            if (a.family->fused_gelu) return activation_cost(Activation::gelu_tanh);
            break;
        default: break;
    }
    return activation_cost(a.activation);
}

std::vector<Linear> attention_linears(const Architecture& a) {
    const Family& f = (*a.family);
    const std::uint64_t h = a.hidden, q = q_width(a), kv = kv_width(a), v = v_width(a);
    const std::uint64_t o_in = a.heads * (is_mla(a) ? a.v_head_dim : head_dim(a));
    std::vector<Linear> l;
    if (is_mla(a)) {
        if (a.q_lora_rank)
            l.push_back({"q_a_proj", h, a.q_lora_rank}), l.push_back({"q_b_proj", a.q_lora_rank, q});
        else
            l.push_back({"q_proj", h, q});
        l.push_back({"kv_a_proj_with_mqa", h, a.kv_lora_rank + a.qk_rope_dim});
        l.push_back({"kv_b_proj", a.kv_lora_rank, a.heads * (a.qk_nope_dim + a.v_head_dim)});
    } else if (f.q) {  // separate modules, or LitGPT's named parts of one fused module
        l.push_back({f.q, h, q}), l.push_back({f.k, h, kv}), l.push_back({f.v, h, v});
    } else {
        l.push_back({f.qkv, h, q + kv + v});
    }
    l.push_back({f.o, o_in, h});
    return l;
}

std::vector<Linear> mlp_linears(const Architecture& a) {
    // Dense MLPs (every layer of a dense model; MoE models' dense layers), then MoE layers' routed experts
    // (3-D parameters in transformers 5, counted once per expert) and shared experts.
    const Family& f = (*a.family);
    const std::uint64_t h = a.hidden, moe = moe_layers(a), dense = a.layers - moe;
    std::vector<Linear> l;
    auto mlp = [&](std::uint64_t width, std::uint64_t count, std::uint64_t layers, const std::string& prefix) {
        if (!layers) return;
        const std::uint64_t only = layers == a.layers ? 0 : layers;
        if (!gated(a))
            l.push_back({prefix + f.up, h, width, count, only});
        else if (f.fused_gate_up)
            l.push_back({prefix + f.up, h, 2 * width, count, only});
        else
            l.push_back({prefix + f.gate, h, width, count, only}), l.push_back({prefix + f.up, h, width, count, only});
        l.push_back({prefix + f.down, width, h, count, only});
    };
    mlp(a.ffn, 1, dense, "");
    mlp(expert_ffn(a), a.experts, moe, "experts.");
    if (a.shared_experts) mlp(shared_width(a), 1, moe, "shared_experts.");
    return l;
}

std::vector<Linear> layer_linears(const Architecture& a) {
    std::vector<Linear> l = attention_linears(a), m = mlp_linears(a);
    l.insert(l.end(), m.begin(), m.end());
    return l;
}

// The same sum as over layer_linears' matrices, in closed form (estimates call it in a loop).
std::uint64_t linear_weight_params(const Architecture& a) {
    const std::uint64_t h = a.hidden, o_in = a.heads * (is_mla(a) ? a.v_head_dim : head_dim(a));
    std::uint64_t attention = o_in * h;
    if (is_mla(a))
        attention += (a.q_lora_rank ? h * a.q_lora_rank + a.q_lora_rank * q_width(a) : h * q_width(a)) +
                     h * (a.kv_lora_rank + a.qk_rope_dim) + a.kv_lora_rank * a.heads * (a.qk_nope_dim + a.v_head_dim);
    else
        attention += h * (q_width(a) + kv_width(a) + v_width(a));
    const std::uint64_t m = mlp_matrices(a) * h, moe = moe_layers(a);
    std::uint64_t mlp = (a.layers - moe) * m * a.ffn;
    if (moe) mlp += moe * m * (a.experts * expert_ffn(a) + shared_width(a));
    return a.layers * attention + mlp;
}

std::vector<Linear> adapter_linears(const Architecture& a) {
    std::vector<Linear> out;
    for (const Linear& l : layer_linears(a))
        if (l.name.rfind("experts.", 0) != 0) {
            Linear x = l;
            if (x.name.rfind("shared_experts.", 0) == 0) x.name = x.name.substr(15);
            out.push_back(x);
        }
    return out;
}

std::vector<std::string> adapter_target_names(const Architecture& a) {
    std::vector<std::string> out;
    for (const Linear& l : adapter_linears(a))
        if (std::find(out.begin(), out.end(), l.name) == out.end()) out.push_back(l.name);
    out.push_back(a.family->head);
    out.push_back("all-linear");
    return out;
}

// PEFT's default when no target_modules are given (peft/utils/constants.py
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING): the query and value projections ("q_proj", "v_proj"; LitGPT's
// lora_query and lora_value, torchtune's and torchtitan's examples alike), else the fused one ("c_attn",
// "query_key_value", "qkv_proj", "Wqkv"); all-linear for a model with neither (MLA's latent projections).
std::vector<std::string> default_adapter_targets(const Architecture& a) {
    const std::vector<std::string> names = adapter_target_names(a);
    auto has = [&](const char* n) { return n && std::find(names.begin(), names.end(), n) != names.end(); };
    if (has(a.family->q) && has(a.family->v)) return {a.family->q, a.family->v};
    if (has(a.family->qkv)) return {a.family->qkv};
    return {"all-linear"};
}

bool adapts_head(const Architecture& a, const std::vector<std::string>& targets) {
    return std::find(targets.begin(), targets.end(), a.family->head) != targets.end();
}

std::vector<Tensor> lora_tensors(const Architecture& a, std::uint64_t rank, const std::vector<std::string>& targets) {
    const bool all = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
    std::vector<Tensor> out;
    for (const Linear& l : adapter_linears(a))
        if (all || std::find(targets.begin(), targets.end(), l.name) != targets.end()) {
            const std::uint64_t n = (l.layers ? l.layers : a.layers) * l.count;
            out.push_back({rank, l.in, n, true});   // A: rank x in
            out.push_back({l.out, rank, n, true});  // B: out x rank
        }
    if (adapts_head(a, targets)) out.push_back({rank, a.hidden}), out.push_back({a.vocab, rank});
    return out;
}

std::uint64_t lora_params(const Architecture& a, std::uint64_t rank, const std::vector<std::string>& targets) {
    std::uint64_t n = 0;
    for (const Tensor& t : lora_tensors(a, rank, targets)) n += t.numel() * t.count;
    return n;
}

std::vector<Tensor> parameter_tensors(const Architecture& a) {
    const std::uint64_t h = a.hidden, L = a.layers, moe = moe_layers(a);
    std::vector<Tensor> t{{a.vocab, embedding_width(a)}};
    auto vector = [&](std::uint64_t n, std::uint64_t count, bool in_layers) {
        if (n && count) t.push_back({n, 1, count, in_layers});
    };
    auto norm = [&](std::uint64_t width, std::uint64_t count, bool in_layers) {
        if (a.norm == Norm::rmsnorm || a.norm_weight) vector(width, count, in_layers);
        if (a.norm == Norm::layernorm && a.norm_weight && a.norm_bias) vector(width, count, in_layers);
    };
    if (a.position == Position::learned) t.push_back({a.max_positions + a.position_offset, h});
    if (embedding_width(a) != h) t.push_back({h, embedding_width(a)});  // project_in
    if (a.embedding_norm) norm(h, 1, false);
    auto attention = [&] {
        const std::vector<Linear> ls = attention_linears(a);
        for (std::size_t i = 0; i < ls.size(); ++i) {
            const Linear& l = ls[i];
            const bool out = i + 1 == ls.size();
            t.push_back({l.out, l.in, L, true});
            if (is_mla(a)) {  // biases on q_a_proj, kv_a_proj_with_mqa and o_proj; the latent norms
                const bool a_proj = l.name == "q_a_proj" || l.name == "kv_a_proj_with_mqa";
                if (a.attention_bias && (a_proj || out)) vector(l.out, L, true);
                if (l.name == "q_a_proj") vector(a.q_lora_rank, L, true);
                if (l.name == "kv_a_proj_with_mqa") vector(a.kv_lora_rank, L, true);
            } else if (out ? a.attention_bias : (a.attention_bias || a.qkv_bias)) {
                vector(l.out, L, true);
            }
        }
        if (a.qk_norm == QkNorm::per_head) norm(head_dim(a), 2 * L, true);
        if (a.qk_norm == QkNorm::full) norm(a.heads * head_dim(a), L, true), norm(a.kv_heads * head_dim(a), L, true);
        vector(a.attention_sinks ? a.heads : 0, L, true);
    };
    auto mlp = [&] {
        if (moe) {
            t.push_back({a.experts, h, moe, true});  // router
            vector(a.router_bias ? a.experts : 0, moe, true);
        }
        for (const Linear& l : mlp_linears(a)) {
            const std::uint64_t layers = l.layers ? l.layers : L;
            if (l.name.rfind("experts.", 0) == 0) {  // one 3-D tensor for all experts
                t.push_back({l.count * l.out, l.in, layers, true});
                vector(a.expert_bias ? l.count * l.out : 0, layers, true);
            } else {
                t.push_back({l.out, l.in, layers, true});
                vector(a.mlp_bias && l.name.rfind("shared_experts.", 0) != 0 ? l.out : 0, layers, true);
            }
        }
        if (a.shared_expert_gate) t.push_back({1, h, moe, true});
    };
    if ((*a.family).norm_first) {
        norm(h, L, true), attention(), norm(h, L, true), mlp();
    } else {
        attention(), mlp(), norm(h, L * a.norms_per_layer, true);
    }
    norm(h, 1, false);  // final norm
    if (embedding_width(a) != h) t.push_back({embedding_width(a), h});  // project_out
    if (a.score_labels) {
        t.push_back({a.score_labels, h});
        return t;
    }
    if (!a.tied_embeddings) t.push_back({a.vocab, embedding_width(a)});
    if (a.lm_head_bias && !a.tied_embeddings) t.push_back({a.vocab, 1});
    return t;
}

}  // namespace vramcalc
