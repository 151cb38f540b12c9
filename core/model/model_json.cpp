#include "model/model_json.hpp"

#include <nlohmann/json.hpp>

#include "input/json_reader.hpp"
#include "model/activations.hpp"
#include "model/families.hpp"
#include "model/hf_config.hpp"
#include "model/model_catalog.hpp"
#include "model/model_search.hpp"
#include "model/presets.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

const Names<Mlp, 3> kMlp{{{Mlp::swiglu, "swiglu", "Gated (SwiGLU: gate, up, down)"},
                          {Mlp::geglu, "geglu", "Gated (GeGLU: gate, up, down)"},
                          {Mlp::gelu, "gelu", "Plain (up, down)"}}};
const Names<Norm, 2> kNorm{{{Norm::rmsnorm, "rmsnorm", "RMSNorm"}, {Norm::layernorm, "layernorm", "LayerNorm"}}};
const Names<Position, 4> kPosition{
    {{Position::rope, "rope", "RoPE"}, {Position::learned, "learned", "Learned"}, {Position::alibi, "alibi", "ALiBi"}, {Position::none, "none", "None"}}};
const Names<QkNorm, 3> kQkNorm{{{QkNorm::none, "none", "None"}, {QkNorm::per_head, "per_head", "Per head"}, {QkNorm::full, "full", "Across heads"}}};

// The explicit architecture's keys by type, each read and written from its row. Required keys first.
struct IntField { const char* key; std::uint64_t Architecture::*member; std::uint64_t lo, hi; const char* doc; bool common; };
struct BoolField { const char* key; bool Architecture::*member; const char* doc; bool common; };
struct RealField { const char* key; double Architecture::*member; double lo, hi; bool hi_open; const char* doc; };
const IntField kIntFields[] = {
    {"layers", &Architecture::layers, 1, kMaxLayers, "Decoder layers.", true},
    {"hidden", &Architecture::hidden, 1, kMaxWidth, "The residual stream’s width.", true},
    {"heads", &Architecture::heads, 1, kMaxWidth, "Query heads.", true},
    {"ffn", &Architecture::ffn, 1, kMaxWidth * 4, "The MLP’s inner width (MoE: the dense layers’).", true},
    {"vocab", &Architecture::vocab, 1, kMaxVocab, "Vocabulary size.", true},
    {"kv_heads", &Architecture::kv_heads, 1, kMaxWidth, "Key/value heads (grouped-query attention); default: heads.", true},
    {"head_dim", &Architecture::head_dim, 1, kMaxWidth, "Per-head width; default: hidden / heads.", true},
    {"max_positions", &Architecture::max_positions, 1, kMaxTokens, "max_position_embeddings: learned positions bound the sequence.", true},
    {"norms_per_layer", &Architecture::norms_per_layer, 1, 4, "1: a parallel block sharing a norm; 3–4: sandwich norms (Gemma 2/3).", true},
    {"position_offset", &Architecture::position_offset, 0, 1024, "Learned positions start here (OPT: 2).", false},
    {"embed_dim", &Architecture::embed_dim, 1, kMaxWidth, "OPT’s word_embed_proj_dim when it differs from hidden.", false},
    {"sliding_window", &Architecture::sliding_window, 1, kMaxTokens, "Tokens a sliding-window layer attends to.", false},
    {"sliding_layers", &Architecture::sliding_layers, 0, kMaxLayers, "How many layers use the window.", false},
    {"q_lora_rank", &Architecture::q_lora_rank, 1, kMaxWidth, "Multi-head latent attention: the query’s latent rank.", false},
    {"kv_lora_rank", &Architecture::kv_lora_rank, 1, kMaxWidth, "Multi-head latent attention: the keys’ and values’ latent rank.", false},
    {"qk_nope_dim", &Architecture::qk_nope_dim, 1, kMaxWidth, "MLA: the per-head query/key width without RoPE.", false},
    {"qk_rope_dim", &Architecture::qk_rope_dim, 1, kMaxWidth, "MLA: the per-head query/key width with RoPE.", false},
    {"v_head_dim", &Architecture::v_head_dim, 1, kMaxWidth, "MLA: the per-head value width.", false},
    {"experts", &Architecture::experts, 1, 4096, "Routed experts (MoE above 1).", true},
    {"experts_per_token", &Architecture::experts_per_token, 1, 4096, "Experts each token is routed to.", true},
    {"moe_ffn", &Architecture::moe_ffn, 1, kMaxWidth * 4, "Each routed expert’s width; default: ffn.", false},
    {"shared_experts", &Architecture::shared_experts, 0, 1024, "Always-on experts.", false},
    {"shared_ffn", &Architecture::shared_ffn, 1, kMaxWidth * 4, "Each shared expert’s width; default: moe_ffn.", false},
    {"dense_layers", &Architecture::dense_layers, 0, kMaxLayers, "MoE models: layers with a dense MLP instead (DeepSeek’s first_k_dense_replace).", false},
};
constexpr std::size_t kRequired = 5;
const BoolField kBoolFields[] = {
    {"tied_embeddings", &Architecture::tied_embeddings, "lm_head shares the embedding’s weight.", true},
    {"attention_bias", &Architecture::attention_bias, "Biases on q, k, v and o.", false},
    {"qkv_bias", &Architecture::qkv_bias, "Biases on q, k and v only (Qwen2).", true},
    {"mlp_bias", &Architecture::mlp_bias, "Biases on the MLP’s projections.", false},
    {"lm_head_bias", &Architecture::lm_head_bias, "A bias on lm_head (Phi, GPT-J).", true},
    {"norm_weight", &Architecture::norm_weight, "Norms with a weight (false: OLMo’s parameter-free LayerNorm).", false},
    {"norm_bias", &Architecture::norm_bias, "LayerNorm with a bias (false: Cohere’s, MPT’s).", false},
    {"parallel_block", &Architecture::parallel_block, "Attention and MLP read the same input (GPT-J, Falcon, Cohere, Phi, NeoX).", false},
    {"embedding_norm", &Architecture::embedding_norm, "BLOOM’s LayerNorm after the embedding.", false},
    {"attention_sinks", &Architecture::attention_sinks, "gpt-oss: one learned logit per head joins the softmax.", false},
    {"scaled_logits", &Architecture::scaled_logits, "Granite’s logits_scaling, Cohere’s logit_scale: one more logits tensor.", false},
    {"shared_expert_gate", &Architecture::shared_expert_gate, "Qwen2-MoE: a sigmoid gate on the shared expert.", false},
    {"router_bias", &Architecture::router_bias, "gpt-oss: a bias on the router.", false},
    {"expert_bias", &Architecture::expert_bias, "gpt-oss: biases inside every expert.", false},
    {"router_logits_kept", &Architecture::router_logits_kept, "output_router_logits: every layer’s router logits live until the auxiliary loss.", false},
};
const RealField kRealFields[] = {
    {"residual_dropout", &Architecture::residual_dropout, 0, 1, true, "Dropout on the attention and MLP outputs."},
    {"attention_dropout", &Architecture::attention_dropout, 0, 1, true, "Dropout on the softmax probabilities."},
    {"embedding_dropout", &Architecture::embedding_dropout, 0, 1, true, "Dropout on the embeddings."},
    {"activation_dropout", &Architecture::activation_dropout, 0, 1, true, "Dropout inside the MLP, after the activation (OPT)."},
    {"attn_softcap", &Architecture::attn_softcap, 0, 1e6, false, "Gemma 2: cap x tanh(scores / cap)."},
    {"final_softcap", &Architecture::final_softcap, 0, 1e6, false, "Gemma 2: the same on the logits."},
};

template <class E, std::size_t N>
std::vector<ChoiceView> view(const Names<E, N>& names) {
    std::vector<ChoiceView> out;
    for (const Choice<E>& c : names.items) out.push_back({c.name, c.label, int(c.value)});
    return out;
}

// Defaults that follow other keys; every other default is an Architecture{}'s.
const std::pair<const char*, const char*> kFollowing[] = {
    {"kv_heads", "heads"}, {"head_dim", "hidden / heads"}, {"activation", "silu, gelu_pytorch_tanh or gelu after mlp"},
    {"moe_ffn", "ffn"}, {"shared_ffn", "moe_ffn"}, {"embed_dim", "hidden"}};

std::string default_of(const char* key, const json& defaults, std::string value) {
    for (const auto& [name, rule] : kFollowing)
        if (std::string(key) == name) return rule;
    return defaults.contains(key) ? defaults[key].dump() : value;
}

ArchitectureKey row(const char* name, KeyType type, double lo = 0, double hi = 0, bool hi_open = false) {
    ArchitectureKey k;
    k.name = name, k.type = type, k.lo = lo, k.hi = hi, k.hi_open = hi_open;
    return k;
}

std::vector<ArchitectureKey> build_architecture_keys() {
    const Architecture d;
    const json defaults = architecture_to_json(d);
    std::vector<ArchitectureKey> out;
    for (std::size_t i = 0; i < std::size(kIntFields); ++i) {
        const IntField& f = kIntFields[i];
        ArchitectureKey k = row(f.key, KeyType::integer, double(f.lo), double(f.hi));
        k.doc = f.doc, k.required = i < kRequired, k.common = f.common;
        k.default_rule = k.required ? "required" : default_of(f.key, defaults, d.*f.member ? std::to_string(d.*f.member) : "none");
        k.value = std::to_string(d.*f.member);
        if (std::string(f.key) == "kv_heads") k.follows = "heads";
        out.push_back(k);
    }
    std::vector<ChoiceView> families, activations;
    for (const Family& f : family_rows()) families.push_back({f.model_type, f.model_type, 0});
    for (const ActivationCost& a : activation_table()) activations.push_back({a.name, a.name, int(a.id)});
    const std::pair<const char*, std::vector<ChoiceView>> choices[] = {
        {"family", families}, {"mlp", view(kMlp)}, {"activation", activations}, {"norm", view(kNorm)},
        {"position", view(kPosition)}, {"qk_norm", view(kQkNorm)}};
    const char* choice_docs[] = {
        "Whose module names and attention code it follows (\"llama\", \"gpt2\", \"gpt_neox\", \"phi\", \"phi3\", \"falcon\", \"bloom\", ...).",
        "Gated (three matrices) or plain (two).", "transformers’ ACT2FN name.", "RMSNorm or LayerNorm.",
        "RoPE, learned, ALiBi or none.", "Norms on the queries and keys: per head or across heads."};
    const bool choice_common[] = {false, true, true, true, true, false};
    for (std::size_t i = 0; i < std::size(choices); ++i) {
        ArchitectureKey k = row(choices[i].first, KeyType::choice);
        k.choices = choices[i].second, k.doc = choice_docs[i], k.common = choice_common[i];
        k.default_rule = default_of(k.name, defaults, "\"none\"");
        k.value = defaults.contains(k.name) ? defaults[k.name].dump() : "\"none\"";
        if (std::string(k.name) == "activation") {
            k.follows = "mlp";
            for (const Choice<Mlp>& m : kMlp.items) k.by[m.name] = activation_cost(default_activation(m.value)).name;
        }
        out.push_back(k);
    }
    ArchitectureKey bias = row("bias", KeyType::boolean);
    bias.doc = "Biases on every projection (attention_bias and mlp_bias).", bias.common = true;
    bias.default_rule = default_of("bias", defaults, "false");
    bias.value = defaults.value("bias", false) ? "true" : "false";
    out.push_back(bias);
    ArchitectureKey dropout = row("dropout", KeyType::number, 0, 1, true);
    dropout.doc = "Every dropout site but the MLP’s (residual, attention, embedding).", dropout.common = true;
    dropout.default_rule = default_of("dropout", defaults, "0");
    dropout.value = json(d.residual_dropout).dump();
    out.push_back(dropout);
    for (const BoolField& f : kBoolFields) {
        ArchitectureKey k = row(f.key, KeyType::boolean);
        k.doc = f.doc, k.common = f.common, k.default_rule = default_of(f.key, defaults, d.*f.member ? "true" : "false");
        k.value = d.*f.member ? "true" : "false";
        out.push_back(k);
    }
    for (const RealField& f : kRealFields) {
        ArchitectureKey k = row(f.key, KeyType::number, f.lo, f.hi, f.hi_open);
        k.doc = f.doc, k.default_rule = default_of(f.key, defaults, json(d.*f.member).dump());
        k.value = json(d.*f.member).dump();
        out.push_back(k);
    }
    return out;
}

std::string explicit_keys() {
    std::string s;
    for (const ArchitectureKey& k : architecture_keys()) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

std::string join(const std::vector<std::string>& items) {
    std::string s;
    for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
    return s;
}

std::string module_families() {
    std::string s;
    for (const Family& f : family_rows()) s += (s.empty() ? "\"" : ", \"") + std::string(f.model_type) + "\"";
    return s;
}

void read_explicit_architecture(const json& obj, Architecture& a, const std::string& field, std::vector<FieldError>& errors) {
    Reader r(obj, field + ".", errors);
    for (std::size_t i = 0; i < kRequired; ++i)
        if (!r.has(kIntFields[i].key)) r.fail(kIntFields[i].key, "is required in an explicit architecture");
    a = Architecture{};
    a.id = "custom";
    r.integer("heads", a.heads, 1, kMaxWidth);
    a.kv_heads = a.heads;
    for (const IntField& f : kIntFields) r.integer(f.key, a.*f.member, f.lo, f.hi);
    if (const json* v = r.find("family")) {
        const std::string s = v->is_string() ? v->get<std::string>() : "";
        if (const Family* f = find_family_row(s))
            a.family = f;
        else
            r.fail("family", "must be one of " + module_families() + " (module names and modeling code), got " + show(*v));
    }
    r.choice("mlp", a.mlp, kMlp);
    a.activation = default_activation(a.mlp);
    if (const json* v = r.find("activation")) {
        const ActivationCost* c = v->is_string() ? find_activation(v->get<std::string>()) : nullptr;
        if (c) a.activation = c->id;
        else r.fail("activation", "must be one of " + activation_names() + ", got " + show(*v));
    }
    r.choice("norm", a.norm, kNorm);
    r.choice("position", a.position, kPosition);
    r.choice("qk_norm", a.qk_norm, kQkNorm);
    bool bias = false;
    if (r.has("bias")) {
        r.boolean("bias", bias);
        a.attention_bias = a.mlp_bias = bias;
    }
    double dropout = 0;
    if (r.has("dropout")) {
        r.number("dropout", dropout, 0.0, 1.0, true);
        a.set_dropout(dropout);
    }
    for (const BoolField& f : kBoolFields) r.boolean(f.key, a.*f.member);
    for (const RealField& f : kRealFields) r.number(f.key, a.*f.member, f.lo, f.hi, f.hi_open);
    r.reject_unknown(explicit_keys());
}

}  // namespace

// transformers' configs: LlamaConfig's hidden_act "silu" (SwiGLU), GemmaConfig's "gelu_pytorch_tanh" (GeGLU), GPT-2's
// and BERT-style plain MLPs' "gelu".
Activation default_activation(Mlp m) {
    return m == Mlp::swiglu ? Activation::silu : m == Mlp::geglu ? Activation::gelu_tanh : Activation::gelu;
}

const std::vector<ArchitectureKey>& architecture_keys() {
    static const std::vector<ArchitectureKey> keys = build_architecture_keys();
    return keys;
}

std::string resolve_model_name(const std::string& text) {
    if (const ModelPreset* p = find_model_preset(text)) return p->arch.id;
    if (const CatalogModel* m = find_catalog_model(text)) return m->id;
    const std::vector<std::string> named = exact_models(text);
    return named.size() == 1 ? named[0] : "";
}

void read_model(const json* v, Architecture& a, const std::string& field, std::vector<std::string>& notes,
                std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string()) {
        const std::string text = v->get<std::string>();
        const std::string id = resolve_model_name(text);
        if (const ModelPreset* p = id.empty() ? nullptr : find_model_preset(id)) {
            a = p->arch;
            return;
        }
        if (const CatalogModel* m = id.empty() ? nullptr : find_catalog_model(id)) {
            read_hf_config(json::parse(m->config), a, field + ".", errors, notes);
            a.id = m->id;
            return;
        }
        const std::vector<std::string> named = exact_models(text);
        if (!named.empty()) {
            errors.push_back({field, show(*v) + " names several models: " + join(named) + "; give one of these ids"});
        } else {
            std::vector<std::string> near;
            for (const ModelMatch& m : search_models(text, 3)) near.push_back(m.id);
            std::vector<std::string> ids;
            for (const ModelPreset& m : model_presets()) ids.push_back(m.arch.id);
            const std::string last = near.size() > 1 ? " or " + near.back() : "";
            if (near.size() > 1) near.pop_back();
            errors.push_back({field, "unknown model " + show(*v) + (near.empty() ? "" : " (did you mean " + join(near) + last + "?)") +
                                         "; presets: " + join(ids) + ", or one of the " + std::to_string(model_catalog().size()) +
                                         " Hugging Face ids of the catalog (vramcalc presets), or {\"hf_config\": {...}}"});
        }
    } else if (v->is_object() && v->contains("hf_config")) {
        if (v->size() != 1) errors.push_back({field, "an hf_config object takes no other keys"});
        read_hf_config((*v)["hf_config"], a, field + ".hf_config.", errors, notes);
    } else if (v->is_object()) {
        read_explicit_architecture(*v, a, field, errors);
    } else {
        errors.push_back({field, "must be a preset id, {\"hf_config\": {...}} or an architecture object, got " + show(*v)});
    }
}

json model_to_json(const Architecture& a) { return a.id == "custom" ? architecture_to_json(a) : json(a.id); }

json architecture_to_json(const Architecture& a) {
    // The keys the explicit form always shows, then every other field that differs from its default.
    const Architecture d;
    json j = {{"layers", a.layers},
              {"hidden", a.hidden},
              {"heads", a.heads},
              {"kv_heads", a.kv_heads},
              {"ffn", a.ffn},
              {"vocab", a.vocab},
              {"family", a.family->model_type},
              {"mlp", kMlp.name(a.mlp)},
              {"activation", activation_cost(a.activation).name},
              {"norm", kNorm.name(a.norm)},
              {"tied_embeddings", a.tied_embeddings},
              {"position", kPosition.name(a.position)},
              {"max_positions", a.max_positions},
              {"experts", a.experts},
              {"experts_per_token", a.experts_per_token}};
    if (a.attention_bias == a.mlp_bias) j["bias"] = a.attention_bias;
    if (a.residual_dropout == a.attention_dropout && a.attention_dropout == a.embedding_dropout)
        j["dropout"] = a.residual_dropout;
    if (a.qk_norm != d.qk_norm) j["qk_norm"] = kQkNorm.name(a.qk_norm);
    for (const IntField& f : kIntFields)
        if (!j.contains(f.key) && a.*f.member != d.*f.member) j[f.key] = a.*f.member;
    for (const BoolField& f : kBoolFields)
        if (!j.contains(f.key) && a.*f.member != d.*f.member &&
            !(j.contains("bias") && (std::string(f.key) == "attention_bias" || std::string(f.key) == "mlp_bias")))
            j[f.key] = a.*f.member;
    for (const RealField& f : kRealFields) {
        const bool in_dropout = j.contains("dropout") && std::string(f.key) != "activation_dropout" &&
                                std::string(f.key).find("dropout") != std::string::npos;
        if (!in_dropout && a.*f.member != d.*f.member) j[f.key] = a.*f.member;
    }
    return j;
}

}  // namespace vramcalc
