#include "setup/config_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "hardware/gpus.hpp"
#include "input/json_reader.hpp"
#include "input/json_text.hpp"
#include "model/families.hpp"
#include "model/model_json.hpp"
#include "setup/alloc_conf.hpp"
#include "setup/config_checks.hpp"
#include "setup/schema.hpp"
#include "setup/strategies.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

using Errors = std::vector<FieldError>;

std::string local_name(const Key& k) {
    const std::string name = k.name;
    return k.parent ? name.substr(name.find('.') + 1) : name;
}

// The keys an object takes, for its unknown-key message: names[0] the top level's, names[row] an object key's members.
const std::string& key_names(std::size_t row) {
    static const std::vector<std::string> names = [] {
        const std::vector<Key>& keys = config_keys();
        std::vector<std::string> out(keys.size() + 1);
        for (const Key& k : keys) out[k.parent] += (out[k.parent].empty() ? "" : ", ") + local_name(k);
        return out;
    }();
    return names[row];
}

std::string choice_list(const Key& k) {
    std::string s;
    for (const ChoiceView& v : k.choices) s += (s.empty() ? "\"" : ", \"") + std::string(v.name) + "\"";
    return s;
}

}  // namespace

namespace {

struct Context {
    Config& c;
    Errors& errors;
};

// A key read by its type through its binding.
void read_typed(const Key& k, Reader& r, Config& c) {
    const std::string key = local_name(k);
    void* p = k.value.at ? k.value.at(c) : nullptr;
    using K = Binding::Kind;
    switch (k.value.kind) {
        case K::u64: r.integer(key, *static_cast<std::uint64_t*>(p), std::uint64_t(k.lo), std::uint64_t(k.hi)); break;
        case K::i32: {
            std::uint64_t v = std::uint64_t(*static_cast<int*>(p));
            r.integer(key, v, std::uint64_t(k.lo), std::uint64_t(k.hi));
            *static_cast<int*>(p) = int(v);
            break;
        }
        case K::f64: r.number(key, *static_cast<double*>(p), k.lo, k.hi, k.hi_open); break;
        case K::flag: r.boolean(key, *static_cast<bool*>(p)); break;
        case K::enumeration: {
            const json* v = r.find(key);
            if (!v) break;
            if (v->is_string())
                for (const ChoiceView& choice : k.choices)
                    if (v->get_ref<const std::string&>() == choice.name) return k.value.set_enum(p, choice.value);
            r.fail(key, "must be one of " + choice_list(k) + ", got " + show(*v));
            break;
        }
        default: break;
    }
}

void read_key(const Key& k, Reader& r, Context& x);

// The members of an object key, in table order; then anything else in the object is unknown (`names`: the keys
// its codec reads itself).
void read_members(const Key& parent, Reader& r, Context& x, const std::string& own = "") {
    const std::size_t row = std::size_t(&parent - config_keys().data()) + 1;
    for (const Key& k : config_keys()) {
        if (k.parent != row) continue;
        if (k.before) k.before(x.c);
        read_key(k, r, x);
    }
    r.reject_unknown(own.empty() ? key_names(row) : own + ", " + key_names(row));
}

void read_framework(const Key& k, Reader& r, Context& x) {
    const json* f = r.find(k.name);
    if (!f) return;
    const FrameworkProfile* profile = f->is_string() ? find_framework(f->get<std::string>()) : nullptr;
    if (profile) x.c.framework = profile;
    else r.fail(k.name, "must be one of " + choice_list(k) + ", got " + show(*f));
}

void read_framework_version(const Key& k, Reader& r, Context& x) {
    const json* fv = r.find(k.name);
    if (!fv) return;
    const FrameworkProfile& current = *x.c.framework;
    const FrameworkProfile* revision = nullptr;
    if (fv->is_string() && fv->get_ref<const std::string&>().size() <= 32) revision = framework_revision(current, fv->get<std::string>());
    if (revision) {
        x.c.framework = revision, x.c.framework_version = fv->get<std::string>();
        return;
    }
    std::string revisions;
    for (const FrameworkProfile& p : framework_profiles())
        if (p.id == current.id && *p.since_date)
            revisions += (revisions.empty() ? "" : ", ") + std::string(p.since_release) + " (" + p.since_date + ")";
    r.fail(k.name, "must be a release (\"0.3.1\") or a date (\"2024-05-20\")" +
                       (revisions.empty() ? std::string() : "; " + std::string(current.name) + " changes at " + revisions) +
                       ", got " + show(*fv));
}

void read_precision(const Key& k, Reader& r, Context& x) {
    // "fp8": bf16 mixed precision whose linears compute in float8 (fp8_recipe says how; torchao tensorwise by default).
    if (const json* v = r.find(k.name); v && v->is_string() && v->get_ref<const std::string&>() == "fp8") {
        x.c.precision = Precision::bf16_mixed, x.c.fp8_recipe = Fp8Recipe::torchao_tensorwise;
        return;
    }
    read_typed(k, r, x.c);
}

void read_finetune(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v) return;
    if (v->is_string() && v->get_ref<const std::string&>() == "full") {
        x.c.finetune.method = FinetuneMethod::full;
        return;
    }
    if (!v->is_object()) return r.fail(k.name, "must be \"full\" or {\"method\":\"lora\"|\"qlora\",\"rank\":8,\"targets\":[...]}");
    Reader fr(*v, "finetune.", x.errors);
    if (!fr.has("method")) fr.fail("method", "is required: \"lora\" or \"qlora\"");
    read_members(k, fr, x);
}

// Module names depend on the model (check_consistency checks them against its projections).
void read_targets(const Key& k, Reader& r, Context& x) {
    const std::string key = local_name(k);
    const json* t = r.find(key);
    if (!t) return;
    if (!t->is_array() || t->empty() || t->size() > 64)
        return r.fail(key, "must be a non-empty array of the model's module names (e.g. q_proj, v_proj) or all-linear");
    x.c.finetune.targets.clear();
    for (const json& name : *t) {
        if (name.is_string() && !name.get_ref<const std::string&>().empty() && name.get_ref<const std::string&>().size() <= 64)
            x.c.finetune.targets.push_back(name.get<std::string>());
        else
            r.fail(key, "module names are strings of 1 to 64 characters, got " + show(name));
    }
}

void read_release(const Key& k, Reader& r, Context& x) {
    const std::string key = local_name(k);
    const json* v = r.find(key);
    if (!v) return;
    if (v->is_string() && v->get_ref<const std::string&>().size() <= 32 && is_release(v->get<std::string>()))
        *static_cast<std::string*>(k.value.at(x.c)) = v->get<std::string>();
    else
        r.fail(key, "must be the back end's release, e.g. \"0.41.1\", got " + show(*v));
}

// PYTORCH_CUDA_ALLOC_CONF's text, checked by the allocator's own rules for the torch release in force.
void read_alloc_conf(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v) return;
    if (!v->is_string() || v->get_ref<const std::string&>().size() > 512)
        return r.fail(k.name, "must be PYTORCH_CUDA_ALLOC_CONF's text (at most 512 characters), got " + show(*v));
    if (parse_alloc_conf(v->get<std::string>(), torch_release(x.c.torch), x.errors))
        x.c.alloc_conf = v->get<std::string>();
}

// A mode, or {"mode": "layers", "every": N} (full checkpointing of every N-th layer).
void read_checkpointing(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v || !v->is_object()) return read_typed(k, r, x.c);
    Reader cr(*v, "checkpointing.", x.errors);
    const json* mode = cr.find("mode");
    if (!mode || !mode->is_string() || mode->get<std::string>() != "layers")
        cr.fail("mode", "must be \"layers\" (or give checkpointing as " + choice_list(k) + ")");
    if (!v->contains("every")) cr.fail("every", "is required: checkpoint every N-th layer");
    read_members(k, cr, x, "mode");
    x.c.checkpointing = Checkpointing::full;
}

void read_gpu(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v) return;
    if (v->is_string()) {
        if (const Gpu* g = find_gpu(v->get<std::string>())) {
            x.c.gpu = *g;
            return;
        }
        std::string ids;
        for (const Gpu& g : gpu_catalog()) ids += (ids.empty() ? "" : ", ") + g.id;
        return r.fail(k.name, "unknown GPU " + show(*v) + "; catalog: " + ids);
    }
    if (!v->is_object()) return r.fail(k.name, "must be a catalog id or {\"name\", \"memory_gib\"}, got " + show(*v));
    Reader gr(*v, "gpu.", x.errors);
    x.c.gpu = Gpu{"custom", "Custom GPU", 0, 0, 0, 0, 0, 0, 0, 0};
    if (!gr.has("memory_gib")) gr.fail("memory_gib", "is required for a custom GPU");
    read_members(k, gr, x);
}

void read_gpu_name(const Key& k, Reader& r, Context& x) {
    const json* n = r.find(local_name(k));
    if (!n) return;
    if (n->is_string() && n->get_ref<const std::string&>().size() <= 100) x.c.gpu.name = n->get<std::string>();
    else r.fail(local_name(k), "must be a string of at most 100 characters");
}

void read_inference_engine(const Key& k, Reader& r, Context& x) {
    const json* ie = r.find(k.name);
    if (!ie) return;
    Config& c = x.c;
    if (ie->is_string() && ie->get<std::string>() == "none") {
        c.inference_engine = InferenceEngine::none;
        return;
    }
    if (!ie->is_object())
        return r.fail(k.name, "must be \"none\" or {\"name\": \"vllm\", \"mode\": \"colocate\", \"gpu_memory_utilization\": 0.3}, got " + show(*ie));
    Reader er(*ie, "inference_engine.", x.errors);
    const json* name = er.find("name");
    if (!name || !name->is_string() || name->get<std::string>() != "vllm") er.fail("name", "must be \"vllm\"");
    c.inference_engine = InferenceEngine::vllm_colocate;
    if (const json* mode = er.find("mode")) {
        if (*mode == "server") c.inference_engine = InferenceEngine::vllm_server;
        else if (*mode != "colocate")
            er.fail("mode", "must be \"colocate\" (on the training GPUs) or \"server\" (other GPUs), got " + show(*mode));
    }
    if (c.inference_engine != InferenceEngine::vllm_colocate) {
        for (const char* key : {"gpu_memory_utilization", "sleep_mode"})
            if (er.has(key)) er.fail(key, "is the colocated engine's; a vLLM server runs on other GPUs");
    }
    const std::size_t row = std::size_t(&k - config_keys().data()) + 1;
    for (const Key& member : config_keys())
        if (member.parent == row && c.inference_engine == InferenceEngine::vllm_colocate) read_key(member, er, x);
    er.reject_unknown("name, mode, " + key_names(row));
}

void read_optional_dtype(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v) return;
    if (v->is_string())
        for (const ChoiceView& choice : k.choices)
            if (v->get_ref<const std::string&>() == choice.name) {
                x.c.reward_dtype = Dtype(choice.value);
                return;
            }
    r.fail(k.name, "must be one of " + choice_list(k) + ", got " + show(*v));
}

// A number for every GPU, or {catalog id: price}: the run's GPU takes its own price (0 when it has none).
void read_price(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v || !v->is_object()) return read_typed(k, r, x.c);
    Reader pr(*v, std::string(k.name) + ".", x.errors);
    x.c.gpu_prices.clear();
    for (auto it = v->begin(); it != v->end(); ++it) {
        if (!find_gpu(it.key())) {
            std::string ids;
            for (const Gpu& g : gpu_catalog()) ids += (ids.empty() ? "" : ", ") + g.id;
            pr.fail(printable_key(it.key()), "unknown GPU; prices are per catalog GPU: " + ids);
            continue;
        }
        double price = 0;
        pr.number(it.key(), price, k.lo, k.hi, k.hi_open);
        x.c.gpu_prices.push_back({it.key(), price});
    }
    x.c.price_per_gpu_hour = 0;
    for (const auto& [id, price] : x.c.gpu_prices)
        if (id == x.c.gpu.id) x.c.price_per_gpu_hour = price;
}

// true, false, or an object of the planner's constraints (its members).
void read_plan(const Key& k, Reader& r, Context& x) {
    const json* v = r.find(k.name);
    if (!v) return;
    if (v->is_boolean()) {
        x.c.plan.on = v->get<bool>();
        return;
    }
    if (!v->is_object())
        return r.fail(k.name, "must be true, false or an object of " + key_names(std::size_t(&k - config_keys().data()) + 1) +
                                  ", got " + show(*v));
    x.c.plan.on = true;
    Reader pr(*v, "plan.", x.errors);
    read_members(k, pr, x);
}

void read_strategies(const Key& k, Reader& r, Context& x) {
    const std::string key = local_name(k);
    const json* v = r.find(key);
    if (!v) return;
    std::string names;
    for (const StrategyTraits& s : strategy_table()) names += (names.empty() ? "" : ", ") + std::string(s.name);
    if (!v->is_array()) return r.fail(key, "must be a list of strategies (empty: every one): " + names + ", got " + show(*v));
    std::vector<Strategy>& out = x.c.plan.strategies;
    out.clear();
    for (const json& name : *v) {
        const StrategyTraits* found = nullptr;
        for (const StrategyTraits& s : strategy_table())
            if (name.is_string() && name.get_ref<const std::string&>() == s.name) found = &s;
        if (!found) r.fail(key, "unknown strategy " + show(name) + "; strategies: " + names);
        else if (std::find(out.begin(), out.end(), found->id) == out.end()) out.push_back(found->id);
    }
}

void read_model_key(const Key& k, Reader& r, Context& x) {
    Architecture& a = *static_cast<Architecture*>(k.value.at(x.c));
    read_model(r.find(k.name), a, k.name, x.c.notes, x.errors);
    if (&a != &x.c.model || !*x.c.framework->modules) return;
    a.family = find_family_row(x.c.framework->modules);  // the stack's own code
    const ActivationCost& runs = activation_run(a);
    if (runs.id != a.activation)
        x.c.notes.push_back(std::string(x.c.framework->name) + " runs the model's " + activation_cost(a.activation).name +
                            " as one torch.nn.functional.gelu kernel (its own MLP code), which saves only its input");
    if (a.family->own_head && a.tied_embeddings) {
        a.tied_embeddings = false;
        x.c.notes.push_back(std::string(x.c.framework->name) + " keeps lm_head as its own weight: the checkpoint's tied "
                            "embedding is copied into it, so it has its own gradient and optimizer states");
    }
}

void read_key(const Key& k, Reader& r, Context& x) {
    switch (k.codec) {
        case Codec::typed:
        case Codec::fp8_recipe: return read_typed(k, r, x.c);
        case Codec::framework: return read_framework(k, r, x);
        case Codec::framework_version: return read_framework_version(k, r, x);
        case Codec::model: return read_model_key(k, r, x);
        case Codec::precision: return read_precision(k, r, x);
        case Codec::finetune: return read_finetune(k, r, x);
        case Codec::checkpointing: return read_checkpointing(k, r, x);
        case Codec::gpu: return read_gpu(k, r, x);
        case Codec::gpu_name: return read_gpu_name(k, r, x);
        case Codec::inference_engine: return read_inference_engine(k, r, x);
        case Codec::release: return read_release(k, r, x);
        case Codec::targets: return read_targets(k, r, x);
        case Codec::optional_dtype: return read_optional_dtype(k, r, x);
        case Codec::price: return read_price(k, r, x);
        case Codec::plan: return read_plan(k, r, x);
        case Codec::strategies: return read_strategies(k, r, x);
        case Codec::alloc_conf: return read_alloc_conf(k, r, x);
    }
}

// Keys whose value others derive after every key is read: the sequence of TRL's trainers, a model's learned
// positions.
void derive(Config& c, const json& v, Reader& r) {
    const bool seq_len_given = v.contains("seq_len");
    if (is_trl(c) && c.prompt_len && c.completion_len) {
        if (c.prompt_len + c.completion_len > kMaxTokens)
            r.fail("completion_len", "prompt_len + completion_len must not exceed " + std::to_string(kMaxTokens));
        else if (seq_len_given && c.seq_len != c.prompt_len + c.completion_len)
            r.fail("seq_len", "is prompt_len + completion_len (" + std::to_string(c.prompt_len + c.completion_len) +
                                  ") under " + to_string(c.method) + "; give those two");
        c.seq_len = c.prompt_len + c.completion_len;
    }
    // Without a seq_len, a model with learned positions gets as many as it has.
    if (!seq_len_given && c.model.position == Position::learned) c.seq_len = std::min(c.seq_len, c.model.max_positions);
}

}  // namespace

ParsedConfig parse_config(const json& v) {
    ParsedConfig out;
    Config& c = out.config;
    if (!v.is_object()) {
        for (const Key& k : config_keys())
            if (!k.parent && k.before) k.before(c);
        out.errors.push_back({"", "the configuration must be a JSON object, got " + show(v)});
        return out;
    }
    Reader r(v, "", out.errors);
    Context x{c, out.errors};
    const std::vector<Key>& keys = config_keys();
    for (const Key& k : keys) {
        if (k.parent) continue;
        if (k.before) k.before(c);
        const bool given = v.contains(k.name);
        const bool applies = !(given ? k.strict : k.required) || key_applies(k, c);
        if (given && k.strict && !applies) {  // its value means nothing here: only its place is wrong
            r.find(k.name);
            r.fail(k.name, "goes with " + condition_text(k.applies));
        } else {
            read_key(k, r, x);
        }
        if (!given && k.required && applies) r.fail(k.name, "is required with " + condition_text(k.applies));
    }
    for (const Key& k : keys)
        if (!k.parent && k.late && !v.contains(k.name)) k.late(c);
    derive(c, v, r);
    r.reject_unknown(key_names(0));
    if (out.errors.empty()) check_consistency(c, out.errors);
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

namespace {

json write_typed(const Key& k, const Config& c) {
    const void* p = k.value.at_const(c);
    using K = Binding::Kind;
    switch (k.value.kind) {
        case K::u64: return *static_cast<const std::uint64_t*>(p);
        case K::i32: return *static_cast<const int*>(p);
        case K::f64: return *static_cast<const double*>(p);
        case K::flag: return *static_cast<const bool*>(p);
        case K::text: return *static_cast<const std::string*>(p);
        case K::enumeration: {
            const ChoiceView* v = choice_of(k, k.value.get_enum(p));
            return v ? json(v->name) : json();
        }
        case K::architecture: return model_to_json(*static_cast<const Architecture*>(p));
        default: return nullptr;
    }
}

bool is_set(const Key& k, const Config& c) {
    if (k.codec == Codec::optional_dtype) return c.reward_dtype.has_value();
    if (k.codec == Codec::plan) return c.plan.on;
    if (k.codec == Codec::strategies) return !c.plan.strategies.empty();
    const json v = write_typed(k, c);
    return !(v.is_string() && v.get_ref<const std::string&>().empty()) && !(v.is_number() && v.get<double>() == 0);
}

bool echoed(const Key& k, const Config& c) {
    switch (k.echo) {
        case Echo::always: return true;
        case Echo::when_applies: return key_applies(k, c);
        case Echo::when_set: return key_applies(k, c) && is_set(k, c);
    }
    return false;
}

void write_members(const Key& parent, const Config& c, json& out);

json write_key(const Key& k, const Config& c) {
    switch (k.codec) {
        case Codec::framework: return c.framework->name;
        case Codec::framework_version: return c.framework_version.empty() ? c.framework->since_release : c.framework_version;
        case Codec::precision: return c.fp8_recipe != Fp8Recipe::none ? json("fp8") : write_typed(k, c);
        case Codec::finetune: {
            if (c.finetune.method == FinetuneMethod::full) return "full";
            json f = json::object();
            write_members(k, c, f);
            return f;
        }
        case Codec::checkpointing:
            return c.checkpoint_every > 1 ? json{{"mode", "layers"}, {"every", c.checkpoint_every}} : write_typed(k, c);
        case Codec::gpu: {
            if (c.gpu.id != "custom") return c.gpu.id;
            json g = json::object();
            write_members(k, c, g);
            return g;
        }
        case Codec::inference_engine: {
            if (c.inference_engine == InferenceEngine::none) return "none";
            json e = {{"name", "vllm"}, {"mode", choice_of(k, int(c.inference_engine))->name}};
            write_members(k, c, e);
            return e;
        }
        case Codec::targets: return c.finetune.targets;
        case Codec::optional_dtype: return c.reward_dtype ? json(choice_of(k, int(*c.reward_dtype))->name) : json();
        case Codec::price: {
            if (c.gpu_prices.empty()) return c.price_per_gpu_hour;
            json prices = json::object();
            for (const auto& [id, price] : c.gpu_prices) prices[id] = price;
            return prices;
        }
        case Codec::plan: {
            if (!c.plan.on) return false;
            json p = json::object();
            write_members(k, c, p);
            return p;
        }
        case Codec::strategies: {
            json names = json::array();
            for (Strategy s : c.plan.strategies) names.push_back(to_string(s));
            return names;
        }
        default: return write_typed(k, c);
    }
}

void write_members(const Key& parent, const Config& c, json& out) {
    const std::size_t row = std::size_t(&parent - config_keys().data()) + 1;
    for (const Key& k : config_keys()) {
        if (k.parent != row) continue;
        if (key_applies(k, c) && echoed(k, c)) out[local_name(k)] = write_key(k, c);
    }
}

}  // namespace

json config_to_json(const Config& c) {
    json out = json::object();
    for (const Key& k : config_keys())
        if (!k.parent && echoed(k, c)) out[k.name] = write_key(k, c);
    return out;
}

namespace {

// Gives a key the value a configuration without it would hold: Config{}'s member, then its rules.
void unset(const Key& k, Config& c) {
    static const Config blank;
    switch (k.codec) {
        case Codec::framework: c.framework = &framework_profile(Framework::hf); return;
        case Codec::framework_version: c.framework = &framework_profile(c.framework->id), c.framework_version.clear(); return;
        case Codec::finetune: c.finetune.method = FinetuneMethod::full; return;
        case Codec::precision: c.fp8_recipe = Fp8Recipe::none; break;
        case Codec::fp8_recipe:  // the recipe fp8 takes when none is named
            c.fp8_recipe = c.fp8_recipe == Fp8Recipe::none ? Fp8Recipe::none : Fp8Recipe::torchao_tensorwise;
            return;
        case Codec::targets: c.finetune.targets = blank.finetune.targets; break;
        case Codec::optional_dtype: c.reward_dtype.reset(); return;
        case Codec::price: c.gpu_prices.clear(); break;
        case Codec::plan: c.plan = PlanRequest{}; return;
        case Codec::strategies: c.plan.strategies.clear(); return;
        default: break;
    }
    k.value.copy(blank, c);
}

}  // namespace

json key_defaults(const Config& c) {
    json out = json::object();
    for (const Key& k : config_keys()) {
        Config d = c;
        unset(k, d);
        if (k.before) k.before(d);
        if (k.late) k.late(d);
        out[k.name] = write_key(k, d);
    }
    return out;
}

json errors_to_json(const std::vector<FieldError>& errors) {
    json list = json::array();
    for (const FieldError& e : errors) list.push_back({{"field", e.field}, {"message", e.message}});
    return {{"errors", list}};
}

}  // namespace vramcalc
