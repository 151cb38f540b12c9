#include "config_json.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "json_text.hpp"
#include "presets.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

// Bounds that keep every product of sizes exact in 64 bits and every byte count exact in a double.
constexpr std::uint64_t kMaxLayers = 100000;
constexpr std::uint64_t kMaxWidth = std::uint64_t(1) << 20;   // hidden, ffn, heads, head_dim
constexpr std::uint64_t kMaxVocab = std::uint64_t(1) << 24;
constexpr std::uint64_t kMaxTokens = std::uint64_t(1) << 24;  // seq_len, max_positions
constexpr std::uint64_t kMaxBatch = std::uint64_t(1) << 20;
constexpr std::uint64_t kMaxGpus = std::uint64_t(1) << 20;

std::string show(const json& v) { return describe_json(v); }

// A user's key as it can be echoed safely: JSON-escaped, invalid UTF-8 replaced, at most 60 characters.
std::string printable_key(const std::string& key) {
    std::string s = json(key).dump(-1, ' ', false, json::error_handler_t::replace);
    s = s.substr(1, s.size() - 2);
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

template <class E, std::size_t N>
struct Names {
    std::pair<E, const char*> items[N];
    const char* name(E e) const {
        for (auto& [k, v] : items)
            if (k == e) return v;
        return "?";
    }
    std::string list() const {
        std::string s;
        for (auto& [k, v] : items) s += (s.empty() ? "" : ", ") + std::string("\"") + v + "\"";
        return s;
    }
};

const Names<Precision, 5> kPrecision{{{Precision::fp32_true, "32-true"},
                                      {Precision::bf16_mixed, "bf16-mixed"},
                                      {Precision::fp16_mixed, "16-mixed"},
                                      {Precision::bf16_true, "bf16-true"},
                                      {Precision::fp16_true, "16-true"}}};
const Names<Optimizer, 6> kOptimizer{{{Optimizer::adamw, "adamw"},
                                      {Optimizer::adamw_8bit, "adamw-8bit"},
                                      {Optimizer::adafactor, "adafactor"},
                                      {Optimizer::lion, "lion"},
                                      {Optimizer::sgd, "sgd"},
                                      {Optimizer::sgd_momentum, "sgd-momentum"}}};
const Names<OptimizerImpl, 3> kImpl{{{OptimizerImpl::foreach, "foreach"},
                                     {OptimizerImpl::fused, "fused"},
                                     {OptimizerImpl::single_tensor, "single-tensor"}}};
const Names<FinetuneMethod, 3> kMethod{
    {{FinetuneMethod::full, "full"}, {FinetuneMethod::lora, "lora"}, {FinetuneMethod::qlora, "qlora"}}};
const Names<Checkpointing, 3> kCheckpointing{
    {{Checkpointing::none, "none"}, {Checkpointing::selective, "selective"}, {Checkpointing::full, "full"}}};
const Names<Attention, 2> kAttention{{{Attention::eager, "eager"}, {Attention::flash, "flash"}}};
const Names<Strategy, 5> kStrategy{{{Strategy::single, "single"},
                                    {Strategy::ddp, "ddp"},
                                    {Strategy::deepspeed, "deepspeed"},
                                    {Strategy::fsdp, "fsdp"},
                                    {Strategy::megatron, "megatron"}}};
const Names<Offload, 3> kOffload{
    {{Offload::none, "none"}, {Offload::optimizer, "optimizer"}, {Offload::optimizer_and_params, "optimizer+params"}}};
const Names<Device, 2> kDevice{{{Device::cuda, "cuda"}, {Device::cpu, "cpu"}}};
const Names<TorchVersion, 2> kTorch{{{TorchVersion::v2, "2"}, {TorchVersion::v1_13, "1.13"}}};
const Names<Mlp, 3> kMlp{{{Mlp::swiglu, "swiglu"}, {Mlp::geglu, "geglu"}, {Mlp::gelu, "gelu"}}};
const Names<Norm, 2> kNorm{{{Norm::rmsnorm, "rmsnorm"}, {Norm::layernorm, "layernorm"}}};
const Names<Position, 2> kPosition{{{Position::rope, "rope"}, {Position::learned, "learned"}}};

// Reads the fields of one JSON object, recording every problem instead of stopping at the first.
class Reader {
public:
    Reader(const json& obj, std::string prefix, std::vector<FieldError>& errors)
        : obj_(obj), prefix_(std::move(prefix)), errors_(errors) {}

    void fail(const std::string& key, const std::string& message) { errors_.push_back({prefix_ + key, message}); }

    const json* find(const std::string& key) {
        seen_.push_back(key);
        auto it = obj_.find(key);
        return it == obj_.end() ? nullptr : &*it;
    }

    bool has(const std::string& key) { return obj_.contains(key); }

    void integer(const std::string& key, std::uint64_t& out, std::uint64_t lo, std::uint64_t hi) {
        const json* v = find(key);
        if (!v) return;
        double d = v->is_number() ? v->get<double>() : NAN;
        if (!v->is_number() || v->is_boolean() || !std::isfinite(d) || d != std::floor(d)) {
            fail(key, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                          show(*v));
        } else if (d < double(lo) || d > double(hi)) {
            fail(key, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + show(*v));
        } else {
            out = v->is_number_unsigned() ? v->get<std::uint64_t>()
                  : v->is_number_integer() ? std::uint64_t(v->get<std::int64_t>())
                                           : std::uint64_t(d);
        }
    }

    void number(const std::string& key, double& out, double lo, double hi, bool hi_open) {
        const json* v = find(key);
        if (!v) return;
        if (!v->is_number()) return fail(key, "must be a number, got " + show(*v));
        double d = v->get<double>();
        if (!(d >= lo && (hi_open ? d < hi : d <= hi)))
            return fail(key, "must be in [" + fmt(lo) + ", " + fmt(hi) + (hi_open ? ")" : "]") + ", got " + show(*v));
        out = d;
    }

    void boolean(const std::string& key, bool& out) {
        const json* v = find(key);
        if (!v) return;
        if (!v->is_boolean()) return fail(key, "must be true or false, got " + show(*v));
        out = v->get<bool>();
    }

    template <class E, std::size_t N>
    void choice(const std::string& key, E& out, const Names<E, N>& names) {
        const json* v = find(key);
        if (!v) return;
        if (v->is_string())
            for (auto& [e, name] : names.items)
                if (v->get_ref<const std::string&>() == name) {
                    out = e;
                    return;
                }
        fail(key, "must be one of " + names.list() + ", got " + show(*v));
    }

    // Keys present in the object that no read asked for.
    void reject_unknown(const std::string& allowed) {
        for (auto it = obj_.begin(); it != obj_.end(); ++it)
            if (std::find(seen_.begin(), seen_.end(), it.key()) == seen_.end())
                fail(printable_key(it.key()), "unknown key; allowed keys: " + allowed);
    }

private:
    static std::string fmt(double d) {
        std::string s = std::to_string(d);
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
        return s;
    }
    const json& obj_;
    std::string prefix_;
    std::vector<FieldError>& errors_;
    std::vector<std::string> seen_;
};

std::string key_list(std::initializer_list<const char*> keys) {
    std::string s;
    for (const char* k : keys) s += (s.empty() ? "" : ", ") + std::string(k);
    return s;
}

void read_explicit_architecture(const json& obj, Architecture& a, std::vector<FieldError>& errors) {
    Reader r(obj, "model.", errors);
    for (const char* k : {"layers", "hidden", "heads", "ffn", "vocab"})
        if (!r.has(k)) r.fail(k, "is required in an explicit architecture");
    a = Architecture{};
    a.id = "custom";
    r.integer("layers", a.layers, 1, kMaxLayers);
    r.integer("hidden", a.hidden, 1, kMaxWidth);
    r.integer("heads", a.heads, 1, kMaxWidth);
    a.kv_heads = a.heads;
    r.integer("kv_heads", a.kv_heads, 1, kMaxWidth);
    r.integer("head_dim", a.head_dim, 1, kMaxWidth);
    r.integer("ffn", a.ffn, 1, kMaxWidth * 4);
    r.integer("vocab", a.vocab, 1, kMaxVocab);
    r.choice("mlp", a.mlp, kMlp);
    r.choice("norm", a.norm, kNorm);
    r.boolean("bias", a.bias);
    r.boolean("tied_embeddings", a.tied_embeddings);
    r.choice("position", a.position, kPosition);
    r.integer("max_positions", a.max_positions, 1, kMaxTokens);
    r.number("dropout", a.dropout, 0.0, 1.0, true);
    r.integer("experts", a.experts, 1, 1024);
    r.integer("experts_per_token", a.experts_per_token, 1, 1024);
    r.boolean("qkv_bias", a.qkv_bias);
    r.boolean("lm_head_bias", a.lm_head_bias);
    r.integer("norms_per_layer", a.norms_per_layer, 1, 2);
    r.reject_unknown(key_list({"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "mlp", "norm",
                               "bias", "tied_embeddings", "position", "max_positions", "dropout", "experts",
                               "experts_per_token", "qkv_bias", "lm_head_bias", "norms_per_layer"}));
}

// Hugging Face config.json → Architecture, following each family's *Config class defaults.
void read_hf_config(const json& hf, Architecture& a, std::vector<FieldError>& errors) {
    const std::string p = "model.hf_config.";
    if (!hf.is_object()) return errors.push_back({"model.hf_config", "must be a config.json object"});
    auto mt = hf.find("model_type");
    const std::string type = (mt != hf.end() && mt->is_string()) ? mt->get<std::string>() : "";
    const std::vector<std::string> llama_like{"llama", "mistral", "mixtral", "qwen2", "gemma", "phi3"};
    const bool is_llama = std::find(llama_like.begin(), llama_like.end(), type) != llama_like.end();
    if (!is_llama && type != "gpt2" && type != "gpt_neox" && type != "phi")
        return errors.push_back({p + "model_type", "must be one of \"llama\", \"mistral\", \"mixtral\", \"qwen2\", "
                                                   "\"gemma\", \"phi3\", \"gpt2\", \"gpt_neox\", \"phi\", got " +
                                                       (mt == hf.end() ? std::string("nothing") : show(*mt))});
    a = Architecture{};
    a.id = "custom";
    std::vector<FieldError> local;
    auto get = [&](const char* key, std::uint64_t& out, std::uint64_t hi, bool required) {
        auto it = hf.find(key);
        if (it == hf.end() || it->is_null()) {
            if (required) local.push_back({p + key, "is required for model_type \"" + type + "\""});
            return;
        }
        Reader r(hf, p, local);
        r.integer(key, out, 1, hi);
    };
    auto flag = [&](const char* key, bool& out) {
        auto it = hf.find(key);
        if (it == hf.end() || it->is_null()) return;
        Reader r(hf, p, local);
        r.boolean(key, out);
    };
    auto real = [&](const char* key, double& out) {  // dropout probabilities
        auto it = hf.find(key);
        if (it == hf.end() || it->is_null()) return;
        Reader r(hf, p, local);
        r.number(key, out, 0.0, 1.0, true);
    };
    if (type == "gpt2") {
        a.mlp = Mlp::gelu, a.norm = Norm::layernorm, a.bias = true, a.position = Position::learned;
        a.tied_embeddings = true, a.dropout = 0.1, a.max_positions = 1024;
        get("n_layer", a.layers, kMaxLayers, true);
        get("n_embd", a.hidden, kMaxWidth, true);
        get("n_head", a.heads, kMaxWidth, true);
        a.kv_heads = a.heads, a.ffn = 4 * a.hidden;
        get("n_inner", a.ffn, kMaxWidth * 4, false);
        get("vocab_size", a.vocab, kMaxVocab, true);
        get("n_positions", a.max_positions, kMaxTokens, false);
        real("resid_pdrop", a.dropout);
    } else {
        get("num_hidden_layers", a.layers, kMaxLayers, true);
        get("hidden_size", a.hidden, kMaxWidth, true);
        get("num_attention_heads", a.heads, kMaxWidth, true);
        a.kv_heads = a.heads;
        get("num_key_value_heads", a.kv_heads, kMaxWidth, false);
        get("head_dim", a.head_dim, kMaxWidth, false);
        get("intermediate_size", a.ffn, kMaxWidth * 4, true);
        get("vocab_size", a.vocab, kMaxVocab, true);
        get("max_position_embeddings", a.max_positions, kMaxTokens, false);
        if (type == "gpt_neox" || type == "phi") {
            a.mlp = Mlp::gelu, a.norm = Norm::layernorm, a.bias = true;
            flag("attention_bias", a.bias);
            if (type == "phi") a.norms_per_layer = 1, a.lm_head_bias = true;
            real("hidden_dropout", a.dropout);
            real("resid_pdrop", a.dropout);
        } else {
            a.mlp = type == "gemma" ? Mlp::geglu : Mlp::swiglu;
            a.tied_embeddings = type == "gemma";
            a.qkv_bias = type == "qwen2";
            flag("attention_bias", a.qkv_bias);
            if (type == "mixtral") {
                a.experts = 8, a.experts_per_token = 2;
                get("num_local_experts", a.experts, 1024, false);
                get("num_experts_per_tok", a.experts_per_token, 1024, false);
            }
            // attention_dropout is left out: `dropout` also means residual dropout, which Llama has not.
        }
        flag("tie_word_embeddings", a.tied_embeddings);
    }
    errors.insert(errors.end(), local.begin(), local.end());
}

void read_model(const json* v, Config& c, std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string()) {
        const ModelPreset* p = find_model_preset(v->get<std::string>());
        if (p) {
            c.model = p->arch;
        } else {
            std::string ids;
            for (const ModelPreset& m : model_presets()) ids += (ids.empty() ? "" : ", ") + m.arch.id;
            errors.push_back({"model", "unknown preset " + show(*v) + "; presets: " + ids});
        }
    } else if (v->is_object() && v->contains("hf_config")) {
        if (v->size() != 1) errors.push_back({"model", "an hf_config object takes no other keys"});
        read_hf_config((*v)["hf_config"], c.model, errors);
    } else if (v->is_object()) {
        read_explicit_architecture(*v, c.model, errors);
    } else {
        errors.push_back({"model", "must be a preset id, {\"hf_config\": {...}} or an architecture object, got " +
                                       show(*v)});
    }
}

void read_finetune(const json* v, Config& c, std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string() && v->get_ref<const std::string&>() == "full") {
        c.finetune.method = FinetuneMethod::full;
        return;
    }
    if (!v->is_object()) {
        errors.push_back({"finetune", "must be \"full\" or {\"method\":\"lora\"|\"qlora\",\"rank\":8,\"targets\":[...]}"});
        return;
    }
    Reader r(*v, "finetune.", errors);
    if (!r.has("method")) r.fail("method", "is required: \"lora\" or \"qlora\"");
    r.choice("method", c.finetune.method, kMethod);
    r.integer("rank", c.finetune.rank, 1, 65536);
    if (const json* t = r.find("targets")) {
        static const std::vector<std::string> known{"q_proj", "k_proj", "v_proj",   "o_proj", "gate_proj", "up_proj",
                                                    "down_proj", "c_attn", "c_proj", "c_fc", "all-linear"};
        std::string allowed;
        for (const std::string& k : known) allowed += (allowed.empty() ? "" : ", ") + k;
        if (!t->is_array() || t->empty() || t->size() > known.size()) {
            r.fail("targets", "must be a non-empty array of module names from: " + allowed);
        } else {
            c.finetune.targets.clear();
            for (const json& name : *t) {
                if (name.is_string() && std::find(known.begin(), known.end(), name.get<std::string>()) != known.end())
                    c.finetune.targets.push_back(name.get<std::string>());
                else
                    r.fail("targets", "unknown module " + show(name) + "; allowed: " + allowed);
            }
        }
    }
    r.reject_unknown("method, rank, targets");
}

void read_gpu(const json* v, Config& c, std::vector<FieldError>& errors) {
    if (!v) return;
    if (v->is_string()) {
        if (const Gpu* g = find_gpu(v->get<std::string>())) {
            c.gpu = *g;
            return;
        }
        std::string ids;
        for (const Gpu& g : gpu_catalog()) ids += (ids.empty() ? "" : ", ") + g.id;
        errors.push_back({"gpu", "unknown GPU " + show(*v) + "; catalog: " + ids});
    } else if (v->is_object()) {
        Reader r(*v, "gpu.", errors);
        c.gpu = Gpu{"custom", "Custom GPU", 0, 0, 0};
        if (const json* n = r.find("name")) {
            if (n->is_string() && n->get_ref<const std::string&>().size() <= 100)
                c.gpu.name = n->get<std::string>();
            else
                r.fail("name", "must be a string of at most 100 characters");
        }
        if (!r.has("memory_gib")) r.fail("memory_gib", "is required for a custom GPU");
        r.number("memory_gib", c.gpu.memory_gib, 0.0625, 1 << 20, false);
        r.reject_unknown("name, memory_gib");
    } else {
        errors.push_back({"gpu", "must be a catalog id or {\"name\", \"memory_gib\"}, got " + show(*v)});
    }
}

// Checks between fields, once each field is valid on its own.
void check_consistency(const Config& c, std::vector<FieldError>& errors) {
    const Architecture& a = c.model;
    auto err = [&](const char* f, std::string m) { errors.push_back({f, std::move(m)}); };
    if (a.head_dim == 0 && a.hidden % a.heads != 0)
        err("model.heads", "heads (" + std::to_string(a.heads) + ") must divide hidden (" +
                               std::to_string(a.hidden) + ")");
    if (a.heads % a.kv_heads != 0)
        err("model.kv_heads", "kv_heads (" + std::to_string(a.kv_heads) + ") must divide heads (" +
                                  std::to_string(a.heads) + ")");
    if (a.experts_per_token > a.experts)
        err("model.experts_per_token", "must not exceed experts (" + std::to_string(a.experts) + ")");
    if (a.position == Position::learned && c.seq_len > a.max_positions)
        err("seq_len", "exceeds the model's learned positions (max_positions " + std::to_string(a.max_positions) + ")");
    // Sizes whose parameter count or byte counts would leave exact 64-bit arithmetic.
    const double width = double(a.heads) * double(head_dim(a));
    const double params = double(a.vocab) * a.hidden * 2 + double(a.max_positions) * a.hidden +
                          double(a.layers) * (4.0 * a.hidden * width + 3.0 * a.hidden * a.ffn * a.experts);
    if (params > 1e15) err("model", "is absurdly large (over 10^15 parameters)");
    if (c.finetune.method != FinetuneMethod::full &&
        double(c.finetune.rank) * double(a.layers) * (double(a.hidden) + width + double(a.ffn)) * 8 * double(a.experts) > 1e15)
        err("finetune.rank", "gives absurdly many adapter parameters (over 10^15)");
    const double tokens = double(c.micro_batch) * double(c.seq_len);
    const double per_token = double(a.vocab) * 16 + double(a.layers) * (double(a.heads) * c.seq_len * 16 +
                             64.0 * (a.hidden + width) + 8.0 * a.ffn * a.experts_per_token);
    if (tokens * per_token > 1e17)
        err("micro_batch", "micro_batch x seq_len is absurdly large for this model (activations over 10^17 bytes)");
    const bool sharded = c.strategy == Strategy::deepspeed || c.strategy == Strategy::fsdp;
    if (c.strategy == Strategy::single && c.gpus != 1) err("gpus", "strategy \"single\" uses exactly 1 GPU");
    if (c.zero != 0 && !sharded && !(c.strategy == Strategy::megatron && c.zero == 1))
        err("zero", "ZeRO stages need strategy \"deepspeed\" or \"fsdp\" (\"megatron\" takes zero 1: the distributed "
                    "optimizer)");
    if (c.strategy == Strategy::fsdp && c.zero == 1)
        err("zero", "FSDP shards as zero 0 (NO_SHARD), 2 (SHARD_GRAD_OP) or 3 (FULL_SHARD)");
    if (c.tp > 1 && c.strategy != Strategy::megatron) err("tp", "tensor parallelism needs strategy \"megatron\"");
    if (c.pp > 1 && c.strategy != Strategy::megatron) err("pp", "pipeline parallelism needs strategy \"megatron\"");
    if (c.strategy == Strategy::deepspeed &&
        (c.precision == Precision::bf16_true || c.precision == Precision::fp16_true))
        err("precision", "DeepSpeed's bf16 and fp16 modes keep fp32 master weights: use \"bf16-mixed\" or \"16-mixed\"");
    if (c.finetune.method != FinetuneMethod::full) {
        const std::vector<Linear> modules = adapter_linears(a);
        std::string names;
        for (const Linear& l : modules)
            if (names.find(l.name) == std::string::npos) names += (names.empty() ? "" : ", ") + l.name;
        for (const std::string& t : c.finetune.targets) {
            bool found = t == "all-linear";
            for (const Linear& l : modules) found = found || l.name == t;
            if (!found) err("finetune.targets", "this model has no module \"" + t + "\"; its projections: " + names + ", all-linear");
        }
    }
    if (c.gpus % (c.tp * c.pp) != 0)
        err("gpus", "gpus (" + std::to_string(c.gpus) + ") must be a multiple of tp x pp (" +
                        std::to_string(c.tp * c.pp) + ")");
    if (c.tp > 1 && (a.heads % c.tp != 0 || a.kv_heads % c.tp != 0))
        err("tp", "tp (" + std::to_string(c.tp) + ") must divide heads (" + std::to_string(a.heads) +
                      ") and kv_heads (" + std::to_string(a.kv_heads) + ")");
    if (c.pp > a.layers) err("pp", "pp (" + std::to_string(c.pp) + ") exceeds the model's layers");
    if (c.sequence_parallel && c.tp < 2) err("sequence_parallel", "needs tp of 2 or more");
    if (c.offload != Offload::none) {
        if (c.strategy == Strategy::deepspeed) {
            if (c.zero == 0) err("offload", "DeepSpeed offloads with ZeRO stage 1, 2 or 3 only");
            if (c.offload == Offload::optimizer_and_params && c.zero != 3)
                err("offload", "offloading parameters needs ZeRO stage 3");
        } else if (c.strategy == Strategy::fsdp) {
            if (c.offload == Offload::optimizer)
                err("offload", "FSDP offloads parameters and gradients with the optimizer: use \"optimizer+params\"");
        } else {
            err("offload", "offload needs strategy \"deepspeed\" or \"fsdp\"");
        }
    }
    if (c.finetune.method == FinetuneMethod::qlora && c.strategy == Strategy::megatron)
        err("finetune", "QLoRA is not available with Megatron-LM");
}

}  // namespace

const char* to_string(Precision e) { return kPrecision.name(e); }
const char* to_string(Optimizer e) { return kOptimizer.name(e); }
const char* to_string(OptimizerImpl e) { return kImpl.name(e); }
const char* to_string(FinetuneMethod e) { return kMethod.name(e); }
const char* to_string(Checkpointing e) { return kCheckpointing.name(e); }
const char* to_string(Attention e) { return kAttention.name(e); }
const char* to_string(Strategy e) { return kStrategy.name(e); }
const char* to_string(Offload e) { return kOffload.name(e); }
const char* to_string(Device e) { return kDevice.name(e); }
const char* to_string(TorchVersion e) { return kTorch.name(e); }

ParsedConfig parse_config(const json& v) {
    ParsedConfig out;
    Config& c = out.config;
    auto& errors = out.errors;
    c.model = find_model_preset("llama-2-7b")->arch;
    c.gpu = *find_gpu("a100-80gb");
    if (!v.is_object()) {
        errors.push_back({"", "the configuration must be a JSON object, got " + show(v)});
        return out;
    }
    Reader r(v, "", errors);
    read_model(r.find("model"), c, errors);
    const bool seq_len_given = v.contains("seq_len");
    r.integer("seq_len", c.seq_len, 1, kMaxTokens);
    r.integer("micro_batch", c.micro_batch, 1, kMaxBatch);
    r.integer("grad_accum", c.grad_accum, 1, kMaxBatch);
    r.choice("precision", c.precision, kPrecision);
    r.choice("optimizer", c.optimizer, kOptimizer);
    r.choice("optimizer_impl", c.optimizer_impl, kImpl);
    read_finetune(r.find("finetune"), c, errors);
    r.choice("checkpointing", c.checkpointing, kCheckpointing);
    r.choice("attention", c.attention, kAttention);
    r.choice("strategy", c.strategy, kStrategy);
    r.integer("gpus", c.gpus, 1, kMaxGpus);
    c.zero = c.strategy == Strategy::fsdp ? 3 : 0;  // FSDP's default is FULL_SHARD
    std::uint64_t zero = std::uint64_t(c.zero);
    r.integer("zero", zero, 0, 3);
    c.zero = int(zero);
    r.integer("tp", c.tp, 1, 1024);
    r.integer("pp", c.pp, 1, 1024);
    r.boolean("sequence_parallel", c.sequence_parallel);
    r.choice("offload", c.offload, kOffload);
    read_gpu(r.find("gpu"), c, errors);
    r.choice("device", c.device, kDevice);
    r.choice("torch", c.torch, kTorch);
    r.reject_unknown(key_list({"model", "seq_len", "micro_batch", "grad_accum", "precision", "optimizer",
                               "optimizer_impl", "finetune", "checkpointing", "attention", "strategy", "gpus", "zero",
                               "tp", "pp", "sequence_parallel", "offload", "gpu", "device", "torch"}));
    // Without a seq_len, a model with learned positions gets as many as it has.
    if (!seq_len_given && c.model.position == Position::learned) c.seq_len = std::min(c.seq_len, c.model.max_positions);
    if (errors.empty()) check_consistency(c, errors);
    return out;
}

ParsedConfig parse_config(const std::string& text) {
    std::string problem;
    const json v = parse_json_text(text, problem);
    if (!problem.empty()) {
        ParsedConfig out;
        out.errors.push_back({"", problem});
        return out;
    }
    return parse_config(v);
}

json architecture_to_json(const Architecture& a) {
    json j = {{"layers", a.layers},   {"hidden", a.hidden}, {"heads", a.heads},   {"kv_heads", a.kv_heads},
              {"ffn", a.ffn},         {"vocab", a.vocab},   {"mlp", kMlp.name(a.mlp)}, {"norm", kNorm.name(a.norm)},
              {"bias", a.bias},       {"tied_embeddings", a.tied_embeddings},
              {"position", kPosition.name(a.position)}, {"max_positions", a.max_positions},
              {"dropout", a.dropout}, {"experts", a.experts}, {"experts_per_token", a.experts_per_token}};
    if (a.head_dim) j["head_dim"] = a.head_dim;
    if (a.qkv_bias) j["qkv_bias"] = true;
    if (a.lm_head_bias) j["lm_head_bias"] = true;
    if (a.norms_per_layer != 2) j["norms_per_layer"] = a.norms_per_layer;
    return j;
}

json config_to_json(const Config& c) {
    json model = c.model.id == "custom" ? architecture_to_json(c.model) : json(c.model.id);
    json finetune = "full";
    if (c.finetune.method != FinetuneMethod::full)
        finetune = {{"method", to_string(c.finetune.method)}, {"rank", c.finetune.rank}, {"targets", c.finetune.targets}};
    json gpu = c.gpu.id == "custom" ? json{{"name", c.gpu.name}, {"memory_gib", c.gpu.memory_gib}} : json(c.gpu.id);
    return {{"model", model},
            {"seq_len", c.seq_len},
            {"micro_batch", c.micro_batch},
            {"grad_accum", c.grad_accum},
            {"precision", to_string(c.precision)},
            {"optimizer", to_string(c.optimizer)},
            {"optimizer_impl", to_string(c.optimizer_impl)},
            {"finetune", finetune},
            {"checkpointing", to_string(c.checkpointing)},
            {"attention", to_string(c.attention)},
            {"strategy", to_string(c.strategy)},
            {"gpus", c.gpus},
            {"zero", c.zero},
            {"tp", c.tp},
            {"pp", c.pp},
            {"sequence_parallel", c.sequence_parallel},
            {"offload", to_string(c.offload)},
            {"gpu", gpu},
            {"device", to_string(c.device)},
            {"torch", to_string(c.torch)}};
}

json errors_to_json(const std::vector<FieldError>& errors) {
    json list = json::array();
    for (const FieldError& e : errors) list.push_back({{"field", e.field}, {"message", e.message}});
    return {{"errors", list}};
}

}  // namespace vramcalc
