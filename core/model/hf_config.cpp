#include "model/hf_config.hpp"

#include <set>

#include "input/json_reader.hpp"
#include "model/families.hpp"

namespace vramcalc {

namespace {

// Defaults of each model_type's configuration class and what its modeling code builds (transformers 5.18,
// models/<type>/configuration_<type>.py and modeling_<type>.py; internlm2 and exaone: their remote code).
// Shapes the config.json names are read by the same generic reader for every family (read_shapes).
struct HfFamily {
    const char* type;
    const char* names;                 // module names: a row of families.cpp
    Mlp mlp;
    Activation act;
    Norm norm;
    bool norm_bias;                    // LayerNorm only
    std::uint64_t norms;               // per layer
    bool parallel;                     // attention and MLP read the same input
    QkNorm qk_norm;
    bool attention_bias, qkv_bias, mlp_bias, lm_head_bias, tied;
    Position position;
    std::uint64_t max_positions;
    std::uint64_t ffn_per_hidden;      // ffn when the config names none (0: required)
    bool scaled_logits;                // logits multiplied or divided once more before the loss
    bool experts_in_ffn;               // routed experts' width is intermediate_size (Mixtral, gpt-oss)
    const char* residual_dropout;      // config keys of each dropout probability ("" when the model has none)
    const char* attention_dropout;
    const char* embedding_dropout;
};

using A = Activation;
using M = Mlp;
using N = Norm;
using P = Position;
using Q = QkNorm;

// clang-format off
constexpr HfFamily kHf[] = {
    // type           names          mlp       act              norm          nbias norms par    qk            abias  qkvb   mbias  lmb    tied   pos          maxpos  ffn/h logit  expff  residual_dropout   attention_dropout   embedding_dropout
    {"llama",         "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attention_dropout", ""},
    {"mistral",       "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    131072, 0, false, false, "",               "attention_dropout", ""},
    {"mixtral",       "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    131072, 0, false, true,  "",               "attention_dropout", ""},
    {"qwen2",         "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, true,  false, false, false, P::rope,    32768,  0, false, false, "",               "attention_dropout", ""},
    {"qwen3",         "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::per_head, false, false, false, false, false, P::rope,    32768,  0, false, false, "",               "attention_dropout", ""},
    {"qwen2_moe",     "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, true,  false, false, false, P::rope,    32768,  0, false, false, "",               "attention_dropout", ""},
    {"qwen3_moe",     "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::per_head, false, false, false, false, false, P::rope,    32768,  0, false, false, "",               "attention_dropout", ""},
    {"gemma",         "llama-fp32-norm",       M::geglu,  A::gelu_tanh,    N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, true,  P::rope,    8192,   0, false, false, "",               "attention_dropout", ""},
    {"gemma2",        "llama-fp32-norm",       M::geglu,  A::gelu_tanh,    N::rmsnorm,   false, 4, false, Q::none,     false, false, false, false, true,  P::rope,    8192,   0, false, false, "",               "attention_dropout", ""},
    {"gemma3_text",   "llama-fp32-norm",       M::geglu,  A::gelu_tanh,    N::rmsnorm,   false, 4, false, Q::per_head, false, false, false, false, true,  P::rope,    131072, 0, false, false, "",               "attention_dropout", ""},
    {"llama4_text",   "llama4",      M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    131072, 0, false, true,  "",               "attention_dropout", ""},
    {"deepseek_v2",   "deepseek_v2", M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attention_dropout", ""},
    {"deepseek_v3",   "deepseek_v3", M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    4096,   0, false, false, "",               "attention_dropout", ""},
    {"gpt_oss",       "llama-fp32-norm",       M::swiglu, A::gelu_glu_oss, N::rmsnorm,   false, 2, false, Q::none,     true,  false, false, false, false, P::rope,    131072, 0, false, true,  "",               "attention_dropout", ""},
    {"olmo",          "llama",       M::swiglu, A::silu,         N::layernorm, false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attention_dropout", ""},
    {"olmo2",         "llama-fp32-norm",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::full,     false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attention_dropout", ""},
    {"olmo3",         "llama-fp32-norm",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::full,     false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attention_dropout", ""},
    {"cohere",        "cohere",      M::swiglu, A::silu,         N::layernorm, false, 1, true,  Q::none,     false, false, false, false, true,  P::rope,    8192,   0, true,  false, "",               "attention_dropout", ""},
    {"cohere2",       "cohere",      M::swiglu, A::silu,         N::layernorm, false, 1, true,  Q::none,     false, false, false, false, true,  P::rope,    8192,   0, true,  false, "",               "attention_dropout", ""},
    {"starcoder2",    "starcoder2",  M::gelu,   A::gelu_tanh,    N::layernorm, true,  2, false, Q::none,     true,  false, true,  false, true,  P::rope,    4096,   0, false, false, "residual_dropout", "attention_dropout", "embedding_dropout"},
    {"granite",       "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, true,  false, "",               "attention_dropout", ""},
    {"granitemoe",    "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, true,  true,  "",               "attention_dropout", ""},
    {"internlm2",     "internlm2",   M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attn_dropout",      ""},
    {"gptj",          "gptj",        M::gelu,   A::gelu_new,     N::layernorm, true,  1, true,  Q::none,     false, false, true,  true,  false, P::rope,    2048,   4, false, false, "resid_pdrop",    "attn_pdrop",        "embd_pdrop"},
    {"falcon",        "falcon",      M::gelu,   A::gelu,         N::layernorm, true,  1, true,  Q::none,     false, false, false, false, true,  P::rope,    2048,   4, false, false, "hidden_dropout", "attention_dropout", ""},
    {"opt",           "opt",         M::gelu,   A::relu,         N::layernorm, true,  2, false, Q::none,     true,  false, true,  false, true,  P::learned, 2048,   4, false, false, "dropout",        "attention_dropout", "dropout"},
    {"bloom",         "bloom",       M::gelu,   A::bloom_gelu,   N::layernorm, true,  2, false, Q::none,     true,  false, true,  false, true,  P::alibi,   0,      4, false, false, "hidden_dropout", "attention_dropout", ""},
    {"mpt",           "mpt",         M::gelu,   A::gelu,         N::layernorm, false, 2, false, Q::none,     false, false, false, false, true,  P::alibi,   2048,   4, false, false, "resid_pdrop",    "",                  "emb_pdrop"},
    {"smollm3",       "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, true,  P::rope,    32768,  0, false, false, "",               "attention_dropout", ""},
    {"phimoe",        "llama",       M::swiglu, A::silu,         N::layernorm, true,  2, false, Q::none,     false, false, false, false, false, P::rope,    131072, 0, false, true,  "",               "attention_dropout", ""},
    {"exaone",        "exaone",      M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    2048,   0, false, false, "resid_dropout",  "attention_dropout", "embed_dropout"},
    {"exaone4",       "llama",       M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::per_head, false, false, false, false, false, P::rope,    2048,   0, false, false, "",               "attention_dropout", ""},
    {"phi",           "phi",         M::gelu,   A::gelu_new,     N::layernorm, true,  1, true,  Q::none,     true,  false, true,  true,  false, P::rope,    2048,   0, false, false, "resid_pdrop",    "attention_dropout", "embd_pdrop"},
    {"phi3",          "phi3",        M::swiglu, A::silu,         N::rmsnorm,   false, 2, false, Q::none,     false, false, false, false, false, P::rope,    4096,   0, false, false, "resid_pdrop",    "attention_dropout", "embd_pdrop"},
    {"gpt2",          "gpt2",        M::gelu,   A::gelu_new,     N::layernorm, true,  2, false, Q::none,     true,  false, true,  false, true,  P::learned, 1024,   4, false, false, "resid_pdrop",    "attn_pdrop",        "embd_pdrop"},
    {"gpt_neox",      "gpt_neox",    M::gelu,   A::gelu,         N::layernorm, true,  2, true,  Q::none,     true,  false, true,  false, false, P::rope,    2048,   0, false, false, "hidden_dropout", "attention_dropout", ""},
};
// clang-format on

// Configuration-class defaults of the sizes a config.json may leave out (vocab_size; head_dim where the class
// fixes it rather than deriving hidden / heads).
struct DefaultSizes {
    const char* type;
    std::uint64_t vocab, head_dim;
};
constexpr DefaultSizes kDefaultSizes[] = {
    {"llama", 32000, 0},       {"mistral", 32000, 0},      {"mixtral", 32000, 0},     {"qwen2", 151936, 0},
    {"qwen3", 151936, 128},    {"qwen2_moe", 151936, 0},   {"qwen3_moe", 151936, 0}, {"gemma", 256000, 256},
    {"gemma2", 256000, 256},   {"gemma3_text", 262208, 256}, {"llama4_text", 202048, 128}, {"deepseek_v2", 102400, 0},
    {"deepseek_v3", 129280, 0}, {"gpt_oss", 201088, 64},   {"olmo", 50304, 0},        {"olmo2", 50304, 0},
    {"olmo3", 50304, 0},       {"cohere", 256000, 0},      {"cohere2", 256000, 0},    {"starcoder2", 49152, 0},
    {"granite", 32000, 0},     {"granitemoe", 32000, 0},   {"gptj", 50400, 0},        {"falcon", 65024, 0},
    {"opt", 50272, 0},         {"bloom", 250880, 0},       {"mpt", 50368, 0},         {"smollm3", 128256, 0},
    {"phimoe", 32064, 0},      {"exaone4", 102400, 0},     {"phi", 51200, 0},         {"phi3", 32064, 0},
    {"gpt2", 50257, 0},        {"gpt_neox", 50432, 0},
};

const HfFamily* find_family(const std::string& type) {
    for (const HfFamily& f : kHf)
        if (type == f.type) return &f;
    return nullptr;
}

// Reads config.json keys, each under any of its spellings; null means "not given".
class HfReader {
public:
    HfReader(const json& hf, std::string prefix, std::vector<FieldError>& errors)
        : hf_(hf), prefix_(std::move(prefix)), errors_(errors) {}

    const json* find(std::initializer_list<const char*> keys, std::string* used = nullptr) const {
        for (const char* k : keys) {
            auto it = hf_.find(k);
            if (it != hf_.end() && !it->is_null()) {
                if (used) *used = k;
                return &*it;
            }
        }
        return nullptr;
    }
    bool has(std::initializer_list<const char*> keys) const { return find(keys) != nullptr; }

    // An integer from lo to hi; `required` reports its absence (naming the first spelling).
    bool integer(std::initializer_list<const char*> keys, std::uint64_t& out, std::uint64_t lo, std::uint64_t hi,
                 bool required = false) {
        std::string key;
        if (!find(keys, &key)) {
            if (required) errors_.push_back({prefix_ + *keys.begin(), "is required in this config.json"});
            return false;
        }
        Reader r(hf_, prefix_, errors_);
        const std::size_t before = errors_.size();
        r.integer(key, out, lo, hi);
        return errors_.size() == before;
    }
    void flag(std::initializer_list<const char*> keys, bool& out) {
        std::string key;
        if (!find(keys, &key)) return;
        Reader r(hf_, prefix_, errors_);
        r.boolean(key, out);
    }
    void probability(const char* key, double& out) {
        if (!*key || !find({key})) return;
        Reader r(hf_, prefix_, errors_);
        r.number(key, out, 0.0, 1.0, true);
    }
    void real(const char* key, double& out, double lo, double hi) {
        if (!find({key})) return;
        Reader r(hf_, prefix_, errors_);
        r.number(key, out, lo, hi, false);
    }
    std::string string(std::initializer_list<const char*> keys, std::string* used = nullptr) const {
        const json* v = find(keys, used);
        return v && v->is_string() ? v->get<std::string>() : "";
    }
    // A list of layer indices (mlp_only_layers, moe_layers); out-of-range entries are errors.
    std::set<std::uint64_t> layer_set(const char* key, std::uint64_t layers) {
        std::set<std::uint64_t> out;
        const json* v = find({key});
        if (!v) return out;
        if (!v->is_array() || v->size() > kMaxLayers) {
            errors_.push_back({prefix_ + key, "must be an array of layer indices, got " + show(*v)});
            return out;
        }
        for (const json& i : *v) {
            if (!i.is_number_integer() || i.get<std::int64_t>() < 0 || std::uint64_t(i.get<std::int64_t>()) >= layers) {
                errors_.push_back({prefix_ + key, "has a layer index outside 0.." + std::to_string(layers - 1) + ": " + show(i)});
                return {};
            }
            out.insert(std::uint64_t(i.get<std::int64_t>()));
        }
        return out;
    }
    void fail(const std::string& key, const std::string& message) { errors_.push_back({prefix_ + key, message}); }
    std::vector<FieldError>& errors() { return errors_; }
    const json& object() const { return hf_; }
    const std::string& prefix() const { return prefix_; }

private:
    const json& hf_;
    std::string prefix_;
    std::vector<FieldError>& errors_;
};

void read_activation(HfReader& r, Architecture& a) {
    std::string key;
    const std::string name = r.string({"hidden_act", "hidden_activation", "activation_function", "activation"}, &key);
    if (name.empty()) return;
    if (a.activation == Activation::gelu_glu_oss || a.activation == Activation::bloom_gelu) return;  // own functions
    if (const ActivationCost* c = find_activation(name))
        a.activation = c->id;
    else
        r.fail(key, "unknown activation \"" + printable_key(name) + "\"; known: " + activation_names());
}

// Which layers are MoE layers: DeepSeek's first_k_dense_replace and moe_layer_freq, Qwen-MoE's
// mlp_only_layers and decoder_sparse_step, Llama 4's moe_layers / interleave_moe_layer_step.
void read_moe(HfReader& r, Architecture& a, const HfFamily& f) {
    std::uint64_t experts = 0;
    r.integer({"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"}, experts, 0, 4096);
    if (experts <= 1) return;
    a.experts = experts;
    a.experts_per_token = 1;
    r.integer({"num_experts_per_tok", "num_experts_per_token", "moe_top_k", "top_k"}, a.experts_per_token, 1, 4096);
    if (f.experts_in_ffn) a.moe_ffn = a.ffn;
    r.integer({"moe_intermediate_size"}, a.moe_ffn, 1, kMaxWidth * 4);
    std::uint64_t shared = 0;
    if (r.integer({"shared_expert_intermediate_size"}, shared, 0, kMaxWidth * 4) && shared > 0)
        a.shared_experts = 1, a.shared_ffn = shared, a.shared_expert_gate = true;  // Qwen2-MoE
    r.integer({"n_shared_experts"}, a.shared_experts, 0, 1024);                   // DeepSeek
    if (std::string(f.type) == "llama4_text") a.shared_experts = 1;              // Llama4TextMoe.shared_expert
    r.flag({"output_router_logits"}, a.router_logits_kept);
    if (std::string(f.type) == "gpt_oss") a.router_bias = a.expert_bias = true;

    const std::uint64_t L = a.layers;
    std::uint64_t dense_first = 0, freq = 1, sparse_step = 1, interleave = 0;
    r.integer({"first_k_dense_replace"}, dense_first, 0, L);
    r.integer({"moe_layer_freq"}, freq, 1, L);
    r.integer({"decoder_sparse_step"}, sparse_step, 1, L);
    const std::set<std::uint64_t> mlp_only = r.layer_set("mlp_only_layers", L);
    std::set<std::uint64_t> moe_list = r.layer_set("moe_layers", L);
    if (moe_list.empty() && r.integer({"interleave_moe_layer_step"}, interleave, 1, L))
        for (std::uint64_t i = interleave - 1; i < L; i += interleave) moe_list.insert(i);
    const bool listed = r.has({"moe_layers"}) || interleave > 0;
    std::uint64_t moe = 0;
    for (std::uint64_t i = 0; i < L; ++i) {
        bool is = i >= dense_first && i % freq == 0 && (i + 1) % sparse_step == 0 && !mlp_only.count(i);
        if (listed) is = moe_list.count(i) > 0;
        moe += is;
    }
    if (moe == 0) {  // no MoE layer after all: a dense model
        a.experts = 1, a.experts_per_token = 1, a.moe_ffn = 0, a.shared_experts = 0;
        return;
    }
    a.dense_layers = L - moe;
    if (std::string(f.type) == "llama4_text") {  // dense layers use intermediate_size_mlp; experts intermediate_size
        a.moe_ffn = a.ffn;
        r.integer({"intermediate_size_mlp"}, a.ffn, 1, kMaxWidth * 4);
    }
}

void read_mla(HfReader& r, Architecture& a) {
    if (!r.has({"kv_lora_rank"})) return;
    r.integer({"kv_lora_rank"}, a.kv_lora_rank, 1, kMaxWidth);
    r.integer({"q_lora_rank"}, a.q_lora_rank, 1, kMaxWidth);  // null: a plain q_proj (DeepSeek-V2-Lite)
    r.integer({"qk_nope_head_dim"}, a.qk_nope_dim, 1, kMaxWidth, true);
    r.integer({"qk_rope_head_dim"}, a.qk_rope_dim, 1, kMaxWidth, true);
    r.integer({"v_head_dim"}, a.v_head_dim, 1, kMaxWidth, true);
    a.kv_heads = a.heads;
}

// How many layers attend through a window (or Llama 4's chunks): layer_types when the config lists them,
// else each family's pattern.
void read_sliding(HfReader& r, Architecture& a, const std::string& type) {
    std::uint64_t window = 0;
    r.integer({"sliding_window", "attention_chunk_size"}, window, 0, kMaxTokens);
    if (window == 0) return;
    bool enabled = true;
    r.flag({"use_sliding_window"}, enabled);
    if (!enabled) return;
    a.sliding_window = window;
    if (const json* types = r.find({"layer_types"}); types && types->is_array()) {
        std::uint64_t n = 0;
        for (const json& t : *types)
            n += t.is_string() && (t.get<std::string>() == "sliding_attention" || t.get<std::string>() == "chunked_attention");
        a.sliding_layers = std::min(n, a.layers);
        return;
    }
    std::uint64_t pattern = 0;
    if (type == "gemma2" || type == "gpt_oss") pattern = 2;
    if (type == "gemma3_text") pattern = 6;
    if (type == "cohere2" || type == "olmo3" || type == "exaone4" || type == "llama4_text") pattern = 4;
    if (const json* p = r.find({"sliding_window_pattern"}); p && p->is_string()) {  // EXAONE 4: "LLLG"
        const std::string local_global = p->get<std::string>();
        if (local_global.empty() || local_global.size() > kMaxLayers) return;
        std::uint64_t n = 0;
        for (std::uint64_t i = 0; i < a.layers; ++i) n += local_global[i % local_global.size()] == 'L';
        a.sliding_layers = n;
        return;
    }
    r.integer({"sliding_window_pattern"}, pattern, 1, kMaxLayers);
    a.sliding_layers = pattern ? a.layers - a.layers / pattern : a.layers;  // every pattern-th layer is global
}

void read_shapes(HfReader& r, Architecture& a, const HfFamily& f) {
    r.integer({"num_hidden_layers", "n_layer", "n_layers", "num_layers"}, a.layers, 1, kMaxLayers, true);
    r.integer({"hidden_size", "n_embd", "d_model"}, a.hidden, 1, kMaxWidth, true);
    r.integer({"num_attention_heads", "n_head", "n_heads"}, a.heads, 1, kMaxWidth, true);
    a.kv_heads = a.heads;
    r.integer({"num_key_value_heads"}, a.kv_heads, 1, kMaxWidth);
    a.vocab = 0;
    for (const DefaultSizes& d : kDefaultSizes)
        if (d.type == std::string(f.type)) a.vocab = d.vocab, a.head_dim = d.head_dim;
    r.integer({"head_dim"}, a.head_dim, 1, kMaxWidth);
    a.ffn = f.ffn_per_hidden * a.hidden;
    r.integer({"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"}, a.ffn, 1, kMaxWidth * 4, f.ffn_per_hidden == 0);
    if (a.ffn == 0) a.ffn = 4 * a.hidden;
    r.integer({"vocab_size"}, a.vocab, 1, kMaxVocab, a.vocab == 0);
    a.max_positions = f.max_positions ? f.max_positions : kMaxTokens;
    r.integer({"max_position_embeddings", "n_positions", "max_seq_len", "seq_length"}, a.max_positions, 1, kMaxTokens);
    r.flag({"tie_word_embeddings"}, a.tied_embeddings);
    read_activation(r, a);
    r.probability(f.residual_dropout, a.residual_dropout);
    r.probability(f.attention_dropout, a.attention_dropout);
    r.probability(f.embedding_dropout, a.embedding_dropout);
    r.probability("activation_dropout", a.activation_dropout);
}

// The few families whose config.json spells their layout in keys of their own.
void read_family_keys(HfReader& r, Architecture& a, const std::string& type) {
    if (type == "olmo") a.norm_weight = false;  // OlmoLayerNorm: no weight, no bias
    if (type == "llama" || type == "granite" || type == "smollm3" || type == "internlm2") {
        r.flag({"attention_bias", "bias"}, a.attention_bias);
        r.flag({"mlp_bias"}, a.mlp_bias);
    } else if (type == "qwen2" || type == "qwen2_moe") {
        r.flag({"qkv_bias"}, a.qkv_bias);
    } else if (type == "gpt_neox") {
        a.kv_heads = a.heads;  // query_key_value is 3 x hidden whatever num_key_value_heads says
        r.flag({"attention_bias"}, a.attention_bias);
        r.flag({"use_parallel_residual"}, a.parallel_block);
    } else if (type == "starcoder2") {
        r.flag({"use_bias"}, a.attention_bias);
        a.mlp_bias = a.attention_bias;
    } else if (type == "phi") {
        bool qk = false;
        r.flag({"qk_layernorm"}, qk);
        if (qk) a.qk_norm = QkNorm::per_head;
    } else if (type == "phimoe") {
        r.flag({"attention_bias"}, a.attention_bias);
        r.flag({"lm_head_bias"}, a.lm_head_bias);
    } else if (type == "cohere" || type == "cohere2") {
        bool qk = false;
        r.flag({"use_qk_norm"}, qk);
        if (qk) a.qk_norm = QkNorm::full;
    } else if (type == "llama4_text") {
        r.flag({"attention_bias"}, a.attention_bias);
    } else if (type == "qwen3" || type == "qwen3_moe" || type == "gemma" || type == "gemma2" ||
               type == "gemma3_text" || type == "olmo" || type == "olmo2" || type == "olmo3" ||
               type == "deepseek_v2" || type == "deepseek_v3" || type == "gpt_oss") {
        r.flag({"attention_bias"}, a.attention_bias);
    } else if (type == "falcon") {
        // modeling_falcon.py: the new decoder architecture (40B, 180B) has grouped kv heads and, unless
        // num_ln_in_parallel_attn is 1, two parallel norms; the 7B style one norm and multi-query attention.
        bool fresh = false, multi_query = true, parallel = true, alibi = false, bias = false;
        r.flag({"new_decoder_architecture"}, fresh);
        r.flag({"multi_query"}, multi_query);
        r.flag({"parallel_attn"}, parallel);
        r.flag({"alibi"}, alibi);
        r.flag({"bias"}, bias);
        a.attention_bias = a.mlp_bias = bias;
        a.parallel_block = fresh || parallel;
        if (alibi) a.position = Position::alibi;
        if (fresh) {
            r.integer({"num_kv_heads"}, a.kv_heads, 1, kMaxWidth);
            std::uint64_t lns = 2;
            r.integer({"num_ln_in_parallel_attn"}, lns, 1, 2);
            a.norms_per_layer = lns;
        } else {
            a.kv_heads = multi_query ? 1 : a.heads;
            a.norms_per_layer = parallel ? 1 : 2;
        }
    } else if (type == "opt") {
        bool bias = true, before = true;
        r.flag({"enable_bias"}, bias);
        a.attention_bias = a.mlp_bias = bias;
        r.flag({"do_layer_norm_before"}, before);
        r.flag({"layer_norm_elementwise_affine"}, a.norm_weight);
        a.position_offset = 2;  // OPTLearnedPositionalEmbedding
        r.integer({"word_embed_proj_dim"}, a.embed_dim, 1, kMaxWidth);
        if (a.embed_dim == a.hidden) a.embed_dim = 0;
        if (!before) r.fail("do_layer_norm_before", "post-norm OPT (opt-350m) is not modelled");
    } else if (type == "bloom") {
        a.embedding_norm = true;
    } else if (type == "mpt") {
        // modeling_mpt.py ignores no_bias, expansion_ratio and kv_n_heads: bias-free linears and norms,
        // a 4x MLP, full multi-head attention.
        a.ffn = 4 * a.hidden, a.kv_heads = a.heads;
        bool learned = true, alibi = true;
        r.flag({"learned_pos_emb"}, learned);
        if (const json* attn = r.find({"attn_config"}); attn && attn->is_object()) {
            HfReader ar(*attn, r.prefix() + "attn_config.", r.errors());
            ar.flag({"alibi"}, alibi);
            ar.probability("attn_pdrop", a.attention_dropout);
        }
        a.position = alibi ? Position::alibi : learned ? Position::learned : Position::none;
    }
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
    static const std::vector<std::string> types = [] {
        std::vector<std::string> t;
        for (const HfFamily& f : kHf) t.push_back(f.type);
        t.push_back("gemma3");  // with a text_config
        t.push_back("llama4");
        return t;
    }();
    return types;
}

namespace {

std::string type_list() {
    std::string s;
    for (const std::string& t : hf_model_types()) s += (s.empty() ? "\"" : ", \"") + t + "\"";
    return s;
}

// Stored-weight formats: what fine-tuning then loads.
void read_quantization(HfReader& r, std::vector<std::string>& notes) {
    const json* q = r.find({"quantization_config"});
    if (!q || !q->is_object()) return;
    const auto method = q->find("quant_method");
    const std::string m = method != q->end() && method->is_string() ? method->get<std::string>() : "";
    if (m == "fp8")
        notes.push_back("the checkpoint stores FP8 weights with block scales (quantization_config); transformers "
                        "dequantizes them for training, so the estimate holds the weights in the chosen precision");
    else if (m == "mxfp4")
        notes.push_back("the checkpoint stores MXFP4 expert weights; training dequantizes them (Mxfp4Config "
                        "dequantize=True), so the estimate holds the weights in the chosen precision");
    else if (!m.empty())
        notes.push_back("the checkpoint is quantized (" + printable_key(m) + "); the estimate holds the weights in the "
                        "chosen precision (use finetune \"qlora\" for 4-bit base weights)");
}

}  // namespace

void read_hf_config(const json& hf, Architecture& a, const std::string& prefix, std::vector<FieldError>& errors,
                    std::vector<std::string>& notes) {
    if (!hf.is_object()) return errors.push_back({prefix.substr(0, prefix.size() - 1), "must be a config.json object"});
    const auto mt = hf.find("model_type");
    std::string type = mt != hf.end() && mt->is_string() ? mt->get<std::string>() : "";
    // Multimodal wrappers (Gemma 3, Llama 4) keep the language model in text_config.
    if (const auto text = hf.find("text_config"); text != hf.end() && text->is_object()) {
        json inner = *text;
        if (!inner.contains("model_type") || !inner["model_type"].is_string())
            inner["model_type"] = type == "gemma3" ? "gemma3_text" : type == "llama4" ? "llama4_text" : type;
        if (hf.contains("quantization_config") && !inner.contains("quantization_config"))
            inner["quantization_config"] = hf["quantization_config"];
        return read_hf_config(inner, a, prefix + "text_config.", errors, notes);
    }
    HfReader r(hf, prefix, errors);
    const HfFamily* f = find_family(type);
    if (!f) {
        const bool usual = r.has({"num_hidden_layers", "n_layer", "num_layers"}) && r.has({"hidden_size", "n_embd"}) &&
                           r.has({"num_attention_heads", "n_head"}) && r.has({"vocab_size"}) &&
                           r.has({"intermediate_size", "n_inner", "ffn_dim"});
        if (!usual)
            return errors.push_back(
                {prefix + "model_type",
                 "must be one of " + type_list() + ", got " + (mt == hf.end() ? std::string("nothing") : show(*mt)) +
                     "; for another architecture give the explicit form {\"layers\", \"hidden\", \"heads\", \"ffn\", "
                     "\"vocab\", ...}"});
        notes.push_back("model_type " + (mt == hf.end() ? std::string("(none)") : show(*mt)) +
                        " is not one vramcalc knows: estimated as a generic Llama-style decoder (RMSNorm, gated "
                        "MLP with the config's activation, rotary positions, separate q/k/v, no biases unless the "
                        "config says attention_bias/mlp_bias)");
        f = find_family("llama");
    }
    a = Architecture{};
    a.id = "custom";
    const Family* row = find_family_row(f->names);
    a.family = row ? row : &llama_family();
    a.mlp = f->mlp, a.activation = f->act, a.norm = f->norm, a.norm_bias = f->norm_bias;
    a.norms_per_layer = f->norms, a.parallel_block = f->parallel, a.qk_norm = f->qk_norm;
    a.attention_bias = f->attention_bias, a.qkv_bias = f->qkv_bias, a.mlp_bias = f->mlp_bias;
    a.lm_head_bias = f->lm_head_bias, a.tied_embeddings = f->tied, a.position = f->position;
    a.scaled_logits = f->scaled_logits;
    const std::size_t before = errors.size();
    read_shapes(r, a, *f);
    if (errors.size() > before) return;  // the shapes the rest depends on are missing or invalid
    read_family_keys(r, a, f->type);
    read_mla(r, a);
    read_moe(r, a, *f);
    read_sliding(r, a, f->type);
    r.real("attn_logit_softcapping", a.attn_softcap, 0, 1e6);
    r.real("final_logit_softcapping", a.final_softcap, 0, 1e6);
    if (std::string(f->type) == "gpt_oss") a.attention_sinks = true;
    read_quantization(r, notes);
}

}  // namespace vramcalc
