#include "evidence/evidence.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>

#include "memory/memory_terms.hpp"
#include "model/families.hpp"
#include "setup/config_json.hpp"
#include "setup/strategies.hpp"

namespace vramcalc {

namespace {

struct EvidenceSetRow {
    const char* name;
    const char* source;  // "cpu" or "gpu"
    const char* file;
};

struct EvidenceCaseRow {
    int set, versions, model;  // indices into kEvidenceSets, kEvidenceVersions, kEvidenceModels (-1: no model)
    const char* name;
    const char* config;        // the configuration without its "model"
    double measured;           // bytes of `metric` (0 for a run that ran without a figure)
    int metric;                // 0 peak_allocated_bytes, 1 peak_reserved_bytes, 2 total_bytes
    bool ran;                  // a published run that ran: it must fit, outside the error statistics
    // The JSON-level method and strategy ("full", "single" when absent; nullptr when the text does not say
    // plainly) and tp/pp/cp > 1 bits (1, 2, 4): only the cases of the configuration's kind are parsed.
    const char* method;
    const char* strategy;
    int parallel;
};

#include "evidence_data.inc"  // generated from the validation data by core/evidence/gen_evidence.py

constexpr std::size_t kCases = sizeof kEvidenceCases / sizeof kEvidenceCases[0];

// What a case is compared on. method and strategy must be equal; the others rank how close a case is.
struct Keys {
    const char* model_type = "";
    bool moe = false;
    Framework framework = Framework::hf;
    Precision precision = Precision::bf16_mixed;
    FinetuneMethod method = FinetuneMethod::full;
    TrainingMethod training = TrainingMethod::sft;  // SFT, DPO, GRPO: must be equal too
    Strategy strategy = Strategy::single;
    bool tp = false, pp = false, cp = false;
    Checkpointing checkpointing = Checkpointing::none;
    Optimizer optimizer = Optimizer::adamw;
    Loss loss = Loss::full;
};

Keys keys_of(const Config& c) {
    Keys k;
    k.model_type = c.model.family ? c.model.family->model_type : "";
    k.moe = is_moe(c.model);
    k.framework = c.framework->id;
    k.precision = c.precision;
    k.method = c.finetune.method;
    k.training = c.method;
    k.strategy = c.strategy;
    k.tp = c.tp > 1, k.pp = c.pp > 1, k.cp = c.cp > 1;
    k.checkpointing = c.checkpointing;
    k.optimizer = c.optimizer;
    k.loss = c.loss;
    return k;
}

// The optional keys, most telling first: their bits order the groups (more keys shared, then the higher bits).
enum : unsigned { kFramework = 8, kFamily = 4, kPrecision = 2, kCheckpointing = 1, kAll = 15 };

bool operator==(const Keys& a, const Keys& b) {
    return std::strcmp(a.model_type, b.model_type) == 0 && a.moe == b.moe && a.framework == b.framework &&
           a.precision == b.precision && a.method == b.method && a.training == b.training && a.strategy == b.strategy && a.tp == b.tp &&
           a.pp == b.pp && a.cp == b.cp && a.checkpointing == b.checkpointing && a.optimizer == b.optimizer &&
           a.loss == b.loss;
}

bool same_kind(const Keys& a, const Keys& b) {
    return a.method == b.method && a.training == b.training && a.strategy == b.strategy && a.tp == b.tp && a.pp == b.pp &&
           a.cp == b.cp;
}

unsigned shared(const Keys& a, const Keys& b) {
    unsigned m = 0;
    if (a.framework == b.framework) m |= kFramework;
    if (std::strcmp(a.model_type, b.model_type) == 0 && a.moe == b.moe) m |= kFamily;
    if (a.precision == b.precision) m |= kPrecision;
    if (a.checkpointing == b.checkpointing) m |= kCheckpointing;
    return m;
}

int bits(unsigned m) { return int((m >> 3 & 1) + (m >> 2 & 1) + (m >> 1 & 1) + (m & 1)); }

struct Case {
    bool parsed = false;     // parse() ran
    bool ok = false;         // the current format accepts the configuration
    Keys keys;
    Config config;
    bool estimated = false;  // error and fits below are set
    double error = 0;        // (estimate - measured) / measured
    bool fits = false;
};

std::mutex mutex;  // guards everything below

std::vector<Case>& cases() {
    static std::vector<Case> all(kCases);
    return all;
}

// Parsed "model" values, each once (cases share them).
const nlohmann::json& model_json(int index) {
    static std::vector<nlohmann::json> models(sizeof kEvidenceModels / sizeof kEvidenceModels[0]);
    nlohmann::json& m = models[std::size_t(index)];
    if (m.is_null()) m = nlohmann::json::parse(kEvidenceModels[index], nullptr, false);
    return m;
}

// A case's configuration through the same parser users go through, once.
Case& parse(std::size_t i) {
    Case& c = cases()[i];
    if (c.parsed) return c;
    c.parsed = true;
    const EvidenceCaseRow& row = kEvidenceCases[i];
    nlohmann::json j = nlohmann::json::parse(row.config, nullptr, false);
    if (j.is_discarded()) return c;
    if (row.model >= 0) j["model"] = model_json(row.model);
    ParsedConfig p = parse_config(j);
    if (!p.ok()) return c;  // a case the current format refuses: left out (evidence_self_check counts them)
    c.ok = true;
    c.keys = keys_of(p.config);
    c.config = std::move(p.config);
    return c;
}

// Whether the case's text can be of the configuration's kind (method, strategy, tp/pp/cp > 1), unparsed.
bool may_be_kind(const EvidenceCaseRow& row, const Keys& want) {
    if (row.method && std::strcmp(row.method, to_string(want.method)) != 0) return false;
    if (row.strategy && std::strcmp(row.strategy, to_string(want.strategy)) != 0) return false;
    return !row.method || !row.strategy || row.parallel == (want.tp ? 1 : 0) + (want.pp ? 2 : 0) + (want.cp ? 4 : 0);
}

void estimate_case(std::size_t i, Case& c) {
    if (c.estimated) return;
    const EvidenceCaseRow& row = kEvidenceCases[i];
    const MemoryEstimate m = estimate_memory(c.config);
    const double estimated = row.metric == 0 ? m.peak_allocated : row.metric == 1 ? m.peak_reserved : m.total;
    c.error = row.measured > 0 ? (estimated - row.measured) / row.measured : 0;
    c.fits = m.fits;
    c.estimated = true;
}

const char* key_name(unsigned bit) {
    switch (bit) {
        case kFramework: return "framework";
        case kFamily: return "family";
        case kPrecision: return "precision";
        default: return "checkpointing";
    }
}

std::string method_words(FinetuneMethod m) {
    return m == FinetuneMethod::full ? "full fine-tuning" : m == FinetuneMethod::lora ? "LoRA" : "QLoRA";
}

std::string strategy_words(const Config& c) {
    std::string s = traits(c).max_gpus == 1 ? "one GPU" : to_string(c.strategy);
    for (auto [on, name] : {std::pair<bool, const char*>{c.tp > 1, "tp"}, {c.pp > 1, "pp"}, {c.cp > 1, "cp"}})
        if (on) s += std::string(" + ") + name;
    return s;
}

std::string gib(double bytes) {
    char s[32];
    std::snprintf(s, sizeof s, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    return s;
}

// Groups and errors are tens of items: an insertion sort keeps the page's code small.
template <class T, class Less>
void small_sort(std::vector<T>& v, Less less) {
    for (std::size_t i = 1; i < v.size(); ++i)
        for (std::size_t j = i; j > 0 && less(v[j], v[j - 1]); --j) std::swap(v[j], v[j - 1]);
}

struct Building {
    unsigned mask;
    int set;
    std::vector<std::size_t> members;
};

std::vector<EvidenceGroup> measured_groups(const Keys& want, std::size_t& more_groups, std::size_t& more_cases) {
    std::vector<Case>& all = cases();
    std::vector<Building> building;
    for (std::size_t i = 0; i < kCases; ++i) {
        if (!may_be_kind(kEvidenceCases[i], want)) continue;
        const Case& c = parse(i);
        if (!c.ok || !same_kind(c.keys, want)) continue;
        const unsigned mask = shared(c.keys, want);
        const int set = kEvidenceCases[i].set;
        auto it = std::find_if(building.begin(), building.end(),
                               [&](const Building& b) { return b.mask == mask && b.set == set; });
        if (it == building.end()) it = building.insert(building.end(), Building{mask, set, {}});
        it->members.push_back(i);
    }
    small_sort(building, [](const Building& a, const Building& b) {
        if (bits(a.mask) != bits(b.mask)) return bits(a.mask) > bits(b.mask);
        if (a.mask != b.mask) return a.mask > b.mask;
        return a.set < b.set;  // the generator's order: CPU measurements first
    });
    more_groups = more_cases = 0;
    for (std::size_t g = kMaxEvidenceGroups; g < building.size(); ++g) ++more_groups, more_cases += building[g].members.size();
    if (building.size() > kMaxEvidenceGroups) building.resize(kMaxEvidenceGroups);

    std::vector<EvidenceGroup> out;
    for (const Building& b : building) {
        EvidenceGroup g;
        const EvidenceSetRow& set = kEvidenceSets[b.set];
        g.source = set.source, g.set = set.name, g.file = set.file;
        for (unsigned bit : {kFamily, kFramework, kPrecision}) if (b.mask & bit) g.matches.push_back(key_name(bit));
        g.matches.push_back("method");
        g.matches.push_back("strategy");
        if (b.mask & kCheckpointing) g.matches.push_back("checkpointing");
        if (b.mask == kAll) {
            g.group = "every key equal";
        } else {
            g.group = "same ";
            for (std::size_t k = 0; k < g.matches.size(); ++k)
                g.group += (k == 0 ? "" : k + 1 == g.matches.size() ? " and " : ", ") + g.matches[k];
        }
        std::vector<double> errors;
        std::vector<int> versions;
        for (std::size_t i : b.members) {
            Case& c = all[i];
            estimate_case(i, c);
            const EvidenceCaseRow& row = kEvidenceCases[i];
            if (std::find(versions.begin(), versions.end(), row.versions) == versions.end()) versions.push_back(row.versions);
            if (row.ran) {
                ++g.ran;
                g.ran_fit += c.fits;
            } else {
                errors.push_back(std::fabs(c.error));
            }
        }
        for (int v : versions) g.versions += (g.versions.empty() ? "" : "; ") + std::string(kEvidenceVersions[v]);
        g.cases = b.members.size();
        g.compared = errors.size();
        if (!errors.empty()) {  // as tests/validation/accuracy.cpp
            small_sort(errors, [](double a, double b) { return a < b; });
            const std::size_t n = errors.size();
            const double median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
            g.median_error = 100 * median;
            g.max_error = 100 * errors.back();
        }
        out.push_back(std::move(g));
    }
    return out;
}

// Whether any CPU-measured case (a step measured tensor by tensor) uses this optimizer / loss.
// (Asked only for optimizers and losses outside the usual ones: the CPU cases are then parsed.)
template <class Pred>
bool cpu_measured(Pred pred) {
    for (std::size_t i = 0; i < kCases; ++i)
        if (std::strcmp(kEvidenceSets[kEvidenceCases[i].set].source, "cpu") == 0 && parse(i).ok && pred(cases()[i].keys))
            return true;
    return false;
}

// A term at its largest moment of the step, and that moment (the peak's own moment may hold none of it).
std::pair<double, std::string> largest(const MemoryEstimate& m, double Terms::*term) {
    std::pair<double, std::string> best{0, m.phases[m.peak_phase].name};
    for (const Phase& p : m.phases)
        if (p.terms.*term > best.first) best = {p.terms.*term, p.name};
    return best;
}

std::vector<Allowance> allowances(const Step& c, const MemoryEstimate& m) {
    std::vector<Allowance> out;
    const bool cuda = c.device == Device::cuda;
    const Terms& peak = m.at_peak();
    const auto activations = largest(m, &Terms::activations);
    const auto logits = largest(m, &Terms::logits);
    const std::string at_activations = " (the activations at their largest, in the " + activations.second + " phase)";
    out.push_back({"cuda_context", m.cuda_context,
                   cuda ? "an allowance of 512 MiB for the CUDA context (driver, loaded kernels, cuBLAS handles) outside "
                          "PyTorch's allocator: in total_bytes, not yet measured on any GPU"
                        : "device \"cpu\": no CUDA context"});
    const bool loading_floor = m.loading_reserved > 0 && m.loading_reserved >= m.peak_reserved;
    out.push_back({"allocator_overhead", m.allocator_overhead,
                   !cuda ? "device \"cpu\": no caching allocator"
                   : loading_floor
                       ? "peak_reserved - peak_allocated: what loading the model left reserved (loading_reserved_bytes: the "
                         "stack's loading and quantizing, read from its code and replayed through PyTorch's caching "
                         "allocator, not measured on a GPU), which the step's allocations reuse"
                       : "peak_reserved - peak_allocated: 5% of the allocated peak for the caching allocator's rounding "
                         "and cached blocks, an assumption, neither derived nor measured (the CPU measurements have no "
                         "caching allocator)"});
    if (cuda)
        out.push_back({"cublas_workspace", cublas_workspace_bytes(c),
                       "PyTorch's default cuBLAS workspace, read from aten/src/ATen/cuda/CublasHandlePool.cpp, not measured "
                       "(in temporaries)"});
    if (m.collective_stream_cached > 0)
        out.push_back({"collective_streams_cached", m.collective_stream_cached,
                       "FSDP's blocks cached in its all-gather and reduce-scatter streams' pools at the peak (the sharded "
                       "gradients zero_grad freed, an all-gather buffer), read from torch 2.13's FSDP and caching-allocator "
                       "code, not measured on a GPU: in peak_reserved and total_bytes up to the card, not in the verdict "
                       "(released before an out-of-memory error)"});
    if (cuda && c.gpus > 1)
        out.push_back({"nccl_buffers", m.nccl,
                       c.gpu.rocm ? "RCCL's buffers are not modelled: not counted"
                                  : "NCCL's connection, NVLS and pool buffers for the run's process groups, read from NCCL "
                                    "2.18-2.27's code for the NCCL the torch wheel ships (core/memory/nccl_memory.md), "
                                    "checked against the sizes NCCL logged and allocated in published runs, not measured "
                                    "on a training step; outside PyTorch's allocator, in total_bytes"});
    if (m.paged_optimizer_states > 0)
        out.push_back({"paged_optimizer_states", m.paged_optimizer_states,
                       "bitsandbytes' paged states in CUDA unified memory, counted as wholly resident on the GPU (in "
                       "total_bytes, not in peak_allocated_bytes); their residency under memory pressure is not measured"});
    if (c.activation_offload)
        out.push_back({"activation_offload", activations.first,
                       "activation offloading (torchtune's OffloadActivations) is read from its code, CUDA only, not "
                       "measured: about two layers' saved activations are counted on the GPU, " +
                           gib(offloaded_activation_bytes(c)) + " in pinned CPU RAM" + at_activations});
    if (c.compile)
        out.push_back({"compile", activations.first,
                       "torch.compile is not modelled: the activations are estimated as in eager mode, an upper bound "
                       "(compiled graphs also keep their own workspace, not counted)" + at_activations});
    if (c.loss == Loss::fused || c.loss == Loss::fused_linear)
        if (!cpu_measured([&](const Keys& k) { return k.loss == c.loss; }))
            out.push_back({"logits", logits.first,
                           std::string("the ") + (c.loss == Loss::fused ? "cross-entropy kernel over the 16-bit logits "
                                                                          "(flash-attn, Liger)"
                                                                        : "fused linear cross-entropy (Liger)") +
                               " is read from its code (CUDA kernels), not measured (the logits at their largest, in "
                               "the " + logits.second + " phase)"});
    if (c.cp > 1)
        out.push_back({"ring_attention", ring_attention_bytes(c),
                       "context parallelism's all-gathered k and v are read from PyTorch's ring attention code (CUDA "
                       "kernels), not measured on the CPU"});
    if (traits(c).buckets == GradientBuckets::deepspeed && communication_buffer_bytes(c) > 0)
        out.push_back({"deepspeed_buckets", communication_buffer_bytes(c),
                       "DeepSpeed's reduce bucket (reduce_bucket_size, 5e8 elements by default), from its configuration "
                       "defaults, not measured"});
    if (peak.optimizer_states + m.paged_optimizer_states > 0 &&
        !cpu_measured([&](const Keys& k) { return k.optimizer == c.optimizer; }))
        out.push_back({"optimizer_states", peak.optimizer_states + m.paged_optimizer_states,
                       std::string("no committed step measurement uses ") + to_string(c.optimizer) +
                           ": its states follow its source code and paper only"});
    if (c.offload != Offload::none)
        out.push_back({"cpu_offload", m.cpu,
                       "CPU RAM (cpu_bytes, not GPU memory) for the offloaded states, sized with DeepSpeed's estimators' "
                       "1.5x buffer factor, not measured"});
    return out;
}

std::string summary(const Config& c, const MemoryEstimate& m, const Evidence& e, const std::vector<EvidenceGroup>& groups) {
    const std::string kind = (c.method == TrainingMethod::sft ? std::string() : std::string(to_string(c.method)) + " ") +
                             method_words(c.finetune.method) + " on " + strategy_words(c);
    std::size_t total = e.more_cases;
    for (const EvidenceGroup& g : groups) total += g.cases;
    char text[768];
    int n = 0;
    if (groups.empty()) {
        n = std::snprintf(text, sizeof text, "No committed measurement covers %s: every term comes from its cited source only",
                          kind.c_str());
    } else {
        const EvidenceGroup& best = groups.front();
        const char* where = best.source == "cpu" ? "measured on the CPU" : "published GPU figures";
        n = std::snprintf(text, sizeof text, "%zu committed case%s of %s; the closest (%s, %s): ", total,
                          total == 1 ? "" : "s", kind.c_str(), best.group.c_str(), where);
        if (best.compared > 0)
            n += std::snprintf(text + n, sizeof text - std::size_t(n), "median |error| %.1f%%, max %.1f%% over %zu",
                               best.median_error, best.max_error, best.compared);
        else
            n += std::snprintf(text + n, sizeof text - std::size_t(n), "%zu of %zu runs that ran estimated to fit",
                               best.ran_fit, best.ran);
    }
    if (c.device == Device::cuda && n > 0 && std::size_t(n) < sizeof text) {
        constexpr double kGiB = 1024.0 * 1024 * 1024;
        const std::size_t more = e.allowances.size() - 2;
        n += std::snprintf(text + n, sizeof text - std::size_t(n),
                           "; not measured: the CUDA context and allocator allowances, %.2f GiB of the %.2f GiB total",
                           (m.cuda_context + m.allocator_overhead) / kGiB, m.total / kGiB);
        if (more > 0 && std::size_t(n) < sizeof text)
            n += std::snprintf(text + n, sizeof text - std::size_t(n), ", and %zu more term%s listed", more, more == 1 ? "" : "s");
    }
    return std::string(text) + ".";
}

nlohmann::json groups_to_json(const std::vector<EvidenceGroup>& groups) {
    nlohmann::json measured = nlohmann::json::array();
    for (const EvidenceGroup& g : groups) {
        nlohmann::json j = nlohmann::json::object();
        j["group"] = g.group;
        j["source"] = g.source;
        j["set"] = g.set;
        j["file"] = g.file;
        j["versions"] = g.versions;
        j["cases"] = g.cases;
        j["compared"] = g.compared;
        j["median_error"] = g.compared ? nlohmann::json(g.median_error) : nlohmann::json(nullptr);
        j["max_error"] = g.compared ? nlohmann::json(g.max_error) : nlohmann::json(nullptr);
        if (g.ran) j["ran"] = g.ran, j["ran_estimated_to_fit"] = g.ran_fit;
        j["matches"] = g.matches;
        measured.push_back(std::move(j));
    }
    return measured;
}

// The groups depend on the configuration's keys only: the page estimates on every keystroke, mostly with the
// same keys, so the last few kinds keep their groups and JSON.
struct Cached {
    Keys keys;
    std::vector<EvidenceGroup> groups;
    std::size_t more_groups = 0, more_cases = 0;
    nlohmann::json measured;
};

const Cached& cached_groups(const Config& c) {
    static std::vector<Cached> cache;  // (under `mutex`) most recent last
    const Keys keys = keys_of(c);
    for (std::size_t i = 0; i < cache.size(); ++i)
        if (cache[i].keys == keys) {
            if (i + 1 != cache.size()) std::rotate(cache.begin() + long(i), cache.begin() + long(i) + 1, cache.end());
            return cache.back();
        }
    if (cache.size() == 8) cache.erase(cache.begin());
    Cached entry;
    entry.keys = keys;
    entry.groups = measured_groups(keys, entry.more_groups, entry.more_cases);
    entry.measured = groups_to_json(entry.groups);
    cache.push_back(std::move(entry));
    return cache.back();
}

nlohmann::json allowances_to_json(const std::vector<Allowance>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const Allowance& a : list) {
        nlohmann::json j = nlohmann::json::object();
        j["term"] = a.term;
        j["bytes"] = a.bytes <= 0 ? 0 : std::uint64_t(std::llround(a.bytes));
        j["why"] = a.why;
        out.push_back(std::move(j));
    }
    return out;
}

}  // namespace

Evidence evidence(const Config& c, const MemoryEstimate& m) {
    Evidence e;
    {
        std::lock_guard<std::mutex> lock(mutex);
        const Cached& cached = cached_groups(c);
        e.measured = cached.groups, e.more_groups = cached.more_groups, e.more_cases = cached.more_cases;
        e.allowances = allowances(Step(c), m);
    }
    e.summary = summary(c, m, e, e.measured);
    return e;
}

nlohmann::json evidence_to_json(const Evidence& e) {
    nlohmann::json out = nlohmann::json::object();
    out["measured"] = groups_to_json(e.measured);
    out["allowances"] = allowances_to_json(e.allowances);
    out["summary"] = e.summary;
    if (e.more_groups) out["more"] = {{"groups", e.more_groups}, {"cases", e.more_cases}};
    return out;
}

nlohmann::json evidence_for(const Config& c, const MemoryEstimate& m) {
    Evidence e;  // without its groups: the cached JSON stands for them
    nlohmann::json out = nlohmann::json::object();
    {
        std::lock_guard<std::mutex> lock(mutex);
        const Cached& cached = cached_groups(c);
        out["measured"] = cached.measured;
        e.more_groups = cached.more_groups, e.more_cases = cached.more_cases;
        e.allowances = allowances(Step(c), m);
        e.summary = summary(c, m, e, cached.groups);
    }
    out["allowances"] = allowances_to_json(e.allowances);
    out["summary"] = std::move(e.summary);
    if (e.more_groups) out["more"] = {{"groups", e.more_groups}, {"cases", e.more_cases}};
    return out;
}

EvidenceSelfCheck evidence_self_check() {
    std::lock_guard<std::mutex> lock(mutex);
    EvidenceSelfCheck check;
    check.cases = kCases;
    for (std::size_t i = 0; i < kCases; ++i) {
        const Case& c = parse(i);
        if (!c.ok) {
            ++check.refused;
            continue;
        }
        const EvidenceCaseRow& row = kEvidenceCases[i];
        const int parallel = (c.keys.tp ? 1 : 0) + (c.keys.pp ? 2 : 0) + (c.keys.cp ? 4 : 0);
        if ((row.method && std::strcmp(row.method, to_string(c.keys.method)) != 0) ||
            (row.strategy && std::strcmp(row.strategy, to_string(c.keys.strategy)) != 0) ||
            (row.method && row.strategy && row.parallel != parallel))
            ++check.kind_mismatches;
    }
    return check;
}

}  // namespace vramcalc
