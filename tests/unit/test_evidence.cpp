// The evidence beside an estimate (core/evidence/evidence.cpp) against the validation data read here directly: the
// JSONL files ctest's accuracy tests and published/evaluate.py read, not the rows generated from them. Which
// cases match, how many, and their errors (recomputed here as tests/validation/accuracy.cpp and evaluate.py
// compute them) must be what the report shows; the allowances must be the estimate's own terms.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "evidence/evidence.hpp"
#include "memory/estimate.hpp"
#include "model/families.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

const std::string kRoot = VRAMCALC_SOURCE_DIR;

std::vector<json> read_jsonl(const std::string& rel) {
    std::ifstream in(kRoot + "/" + rel);
    INFO(rel);
    REQUIRE(in);
    std::vector<json> out;
    for (std::string line; std::getline(in, line);)
        if (line.find_first_not_of(" \t\r") != std::string::npos) out.push_back(json::parse(line));
    return out;
}

// One validation case as this test reads it.
struct TruthCase {
    std::string set, name;
    Config config;
    bool ran = false;   // a published run that ran, without a figure: must fit
    double error = 0;   // (estimate - measured) / measured
    bool fits = false;
};


// The CPU sets by file, with the names the report gives them.
const std::vector<std::pair<std::string, std::string>> kCpuSets = {
    {"tests/validation/measured_hf_cpu.jsonl", "transformers modeling code (measure_hf.py)"},
    {"tests/validation/measured_cpu.jsonl", "hand-written Llama and GPT-2 copies (measure_torch.py)"},
    {"tests/validation/stacks/torchtune/measured.jsonl", "torchtune recipes' training step"},
    {"tests/validation/stacks/litgpt/measured.jsonl", "LitGPT full.py and lora.py under Fabric"},
    {"tests/validation/stacks/fsdp/measured.jsonl", "FSDP 1 and 2 with transformers, 2 gloo ranks"},
    {"tests/validation/stacks/torchtitan/measured.jsonl", "torchtitan's own training step, 2-4 gloo ranks"},
    {"tests/validation/stacks/qlora/measured.jsonl", "PEFT LoRA and bitsandbytes QLoRA"},
    {"tests/validation/stacks/litgpt2023/measured.jsonl", "lit-gpt 8641822 (2023) LoRA and QLoRA, whole-run peaks"},
    {"tests/validation/stacks/trl/measured.jsonl", "TRL 1.16's DPOTrainer and GRPOTrainer"},
    {"tests/validation/stacks/trl-ppo/measured.jsonl", "TRL 1.12's PPOTrainer (policy, reference, value, reward)"},
    {"tests/validation/stacks/trl-fsdp/measured.jsonl", "TRL 1.16's DPOTrainer and GRPOTrainer under FSDP 1 and 2, 2 gloo ranks"},
};

// published/evaluate.py's source_group.
std::string source_group(const std::string& id) {
    const std::pair<const char*, const char*> groups[] = {
        {"tt-tut-", "torchtune tutorials"}, {"tt-", "torchtune README"}, {"lg-hub-", "LitGPT config hub"},
        {"lg-rt-", "LitGPT resource tables"}, {"hf-peft-mmqa-", "PEFT MetaMathQA"}, {"hf-peft-", "PEFT docs/README"},
        {"titan-", "torchtitan"}, {"foundry-", "llm-foundry"}, {"megatron-", "Megatron-LM"},
        {"unsloth-", "Unsloth README"}, {"qlora-", "QLoRA"}};
    for (const auto& [prefix, name] : groups)
        if (id.rfind(prefix, 0) == 0) return name;
    return "other published";
}

// Every case, estimated once.
const std::vector<TruthCase>& truth() {
    static const std::vector<TruthCase> all = [] {
        std::vector<TruthCase> out;
        for (const auto& [file, set] : kCpuSets) {
            for (const json& record : read_jsonl(file)) {
                if (record.contains("not_expressible")) continue;
                // As tests/validation/accuracy.cpp.
                json config = record["config"];
                config["device"] = record["device"].get<std::string>() == "cpu" ? "cpu" : "cuda";
                if (record["torch"].get<std::string>().rfind("1.13", 0) == 0) config["torch"] = "1.13";
                TruthCase t{set, record["name"].get<std::string>(), parsed(config)};
                const MemoryEstimate m = estimate_memory(t.config);
                const double measured = record["measured"]["peak_allocated_bytes"].get<double>();
                t.error = (m.peak_allocated - measured) / measured;
                t.fits = m.fits;
                out.push_back(std::move(t));
            }
        }
        // As published/evaluate.py: memory rows on their counter; fits rows and unmodelled ones must fit.
        std::map<std::string, json> rows;
        for (const json& r : read_jsonl("tests/validation/published/rows.jsonl")) rows[r["id"].get<std::string>()] = r;
        for (const json& e : read_jsonl("tests/validation/published/configs.jsonl")) {
            if (!e.contains("config")) continue;
            const std::string id = e["id"].get<std::string>();
            const json& row = rows.at(id);
            const bool ran = row["kind"] == "fits" || e.contains("unmodelled");
            if (!ran && !(row["kind"] == "memory" && e.contains("published_gib") && e["published_gib"].is_number()))
                continue;
            TruthCase t{source_group(id), id, parsed(e["config"]), ran};
            const MemoryEstimate m = estimate_memory(t.config);
            t.fits = m.fits;
            if (!ran) {
                const std::string metric = e["metric"].get<std::string>();
                const double estimated = metric == "peak_allocated_bytes" ? m.peak_allocated
                                         : metric == "peak_reserved_bytes" ? m.peak_reserved
                                                                           : m.total;
                const double published = e["published_gib"].get<double>() * 1024.0 * 1024 * 1024;
                t.error = (estimated - published) / published;
            }
            out.push_back(std::move(t));
        }
        return out;
    }();
    return all;
}

// The keys of the report's groups, written out again here.
std::vector<std::string> shared_keys(const Config& a, const Config& b) {
    std::vector<std::string> keys;
    if (std::strcmp(a.model.family->model_type, b.model.family->model_type) == 0 && is_moe(a.model) == is_moe(b.model))
        keys.push_back("family");
    if (a.framework->id == b.framework->id) keys.push_back("framework");
    if (a.precision == b.precision) keys.push_back("precision");
    keys.push_back("method");
    keys.push_back("strategy");
    if (a.checkpointing == b.checkpointing) keys.push_back("checkpointing");
    return keys;
}

bool same_method_and_strategy(const Config& a, const Config& b) {
    return a.finetune.method == b.finetune.method && a.method == b.method && a.strategy == b.strategy && (a.tp > 1) == (b.tp > 1) &&
           (a.pp > 1) == (b.pp > 1) && (a.cp > 1) == (b.cp > 1);
}

struct Expected {
    std::size_t cases = 0, compared = 0, ran = 0, ran_fit = 0;
    double median = 0, max = 0;  // percent
};

double median_of(std::vector<double> v) {  // as tests/validation/accuracy.cpp
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Groups (set, shared keys) of the cases that share the configuration's method and strategy.
std::map<std::pair<std::string, std::vector<std::string>>, Expected> expected_groups(const Config& c) {
    std::map<std::pair<std::string, std::vector<std::string>>, std::vector<const TruthCase*>> members;
    for (const TruthCase& t : truth())
        if (same_method_and_strategy(t.config, c)) members[{t.set, shared_keys(t.config, c)}].push_back(&t);
    std::map<std::pair<std::string, std::vector<std::string>>, Expected> out;
    for (const auto& [key, list] : members) {
        Expected e;
        std::vector<double> errors;
        for (const TruthCase* t : list) {
            ++e.cases;
            if (t->ran) ++e.ran, e.ran_fit += t->fits;
            else errors.push_back(std::fabs(t->error));
        }
        e.compared = errors.size();
        if (!errors.empty()) e.median = 100 * median_of(errors), e.max = 100 * *std::max_element(errors.begin(), errors.end());
        out[key] = e;
    }
    return out;
}

const TruthCase& find_case(const std::string& name) {
    for (const TruthCase& t : truth())
        if (t.name == name) return t;
    FAIL("no case " << name);
    return truth().front();
}

// The report's groups against the ones computed here; returns the report's evidence.
json check_measured(const Config& c) {
    const MemoryEstimate m = estimate_memory(c);
    const json ev = evidence_for(c, m);
    const auto expected = expected_groups(c);
    std::size_t expected_cases = 0;
    for (const auto& [key, e] : expected) expected_cases += e.cases;
    const json& groups = ev["measured"];
    CHECK(groups.size() == std::min<std::size_t>(expected.size(), kMaxEvidenceGroups));
    std::size_t shown = 0;
    int previous_keys = 7;
    for (const json& g : groups) {
        const std::vector<std::string> matches = g["matches"].get<std::vector<std::string>>();
        const auto it = expected.find({g["set"].get<std::string>(), matches});
        INFO(g.dump());
        REQUIRE(it != expected.end());
        const Expected& e = it->second;
        CHECK(g["cases"] == e.cases);
        CHECK(g["compared"] == e.compared);
        CHECK(g.value("ran", std::size_t(0)) == e.ran);
        CHECK(g.value("ran_estimated_to_fit", std::size_t(0)) == e.ran_fit);
        if (e.compared) {
            CHECK(g["median_error"].get<double>() == Approx(e.median).epsilon(1e-9).margin(1e-12));
            CHECK(g["max_error"].get<double>() == Approx(e.max).epsilon(1e-9).margin(1e-12));
        } else {
            CHECK(g["median_error"].is_null());
        }
        CHECK(int(matches.size()) <= previous_keys);  // closest first
        previous_keys = int(matches.size());
        CHECK((g["source"] == "cpu" || g["source"] == "gpu"));
        CHECK(!g["versions"].get<std::string>().empty());
        shown += g["cases"].get<std::size_t>();
    }
    const std::size_t more = ev.contains("more") ? ev["more"]["cases"].get<std::size_t>() : 0;
    CHECK(shown + more == expected_cases);
    if (expected.size() > kMaxEvidenceGroups) CHECK(ev["more"]["groups"] == expected.size() - kMaxEvidenceGroups);
    else CHECK(!ev.contains("more"));
    CHECK(!ev["summary"].get<std::string>().empty());
    return ev;
}

const json* allowance(const json& ev, const char* term) {
    for (const json& a : ev["allowances"])
        if (a["term"] == term) return &a;
    return nullptr;
}

void check_allowances(const Config& c, const json& ev) {
    const MemoryEstimate m = estimate_memory(c);
    const json* context = allowance(ev, "cuda_context");
    const json* overhead = allowance(ev, "allocator_overhead");
    REQUIRE(context);
    REQUIRE(overhead);
    CHECK((*context)["bytes"].get<double>() == Approx(m.cuda_context).margin(0.5));
    const json* cached = allowance(ev, "collective_streams_cached");
    CHECK((cached != nullptr) == (m.collective_stream_cached > 0));
    CHECK((*overhead)["bytes"].get<double>() + (cached ? (*cached)["bytes"].get<double>() : 0) ==
          Approx(m.peak_reserved - m.peak_allocated).margin(0.5));
    CHECK((allowance(ev, "nccl_buffers") != nullptr) == (c.gpus > 1 && c.device == Device::cuda));
    CHECK((allowance(ev, "paged_optimizer_states") != nullptr) == (m.paged_optimizer_states > 0));
    if (m.paged_optimizer_states > 0)
        CHECK((*allowance(ev, "paged_optimizer_states"))["bytes"].get<double>() == Approx(m.paged_optimizer_states).margin(0.5));
}

// The case's configuration as a user would give it (the CUDA kernels, the current torch).
Config as_user(const TruthCase& t) {
    Config c = t.config;
    c.device = Device::cuda;
    c.torch = TorchVersion::v2;
    return c;
}

}  // namespace

TEST_CASE("evidence: every committed case is read, and the sets are the ones ctest and evaluate.py read") {
    const EvidenceSelfCheck check = evidence_self_check();
    CHECK(check.cases == truth().size());
    CHECK(check.refused == 0);
    CHECK(check.kind_mismatches == 0);
    std::map<std::string, std::size_t> per_set;
    for (const TruthCase& t : truth()) ++per_set[t.set];
    CHECK(per_set.at("transformers modeling code (measure_hf.py)") == read_jsonl("tests/validation/measured_hf_cpu.jsonl").size());
    CHECK(per_set.at("hand-written Llama and GPT-2 copies (measure_torch.py)") == read_jsonl("tests/validation/measured_cpu.jsonl").size());
    // The loosest configuration of each kind sees every case of that kind: a full, single-GPU run sees all of them.
    std::size_t full_single = 0;
    const Config base = parsed({{"model", "llama-2-7b"}});
    for (const TruthCase& t : truth()) full_single += same_method_and_strategy(t.config, base);
    const json ev = evidence_for(base, estimate_memory(base));
    std::size_t reported = ev.contains("more") ? ev["more"]["cases"].get<std::size_t>() : 0;
    for (const json& g : ev["measured"]) reported += g["cases"].get<std::size_t>();
    CHECK(reported == full_single);
    CHECK(full_single > 100);
}

TEST_CASE("evidence: the transformers LoRA Llama case") {
    const TruthCase* lora = nullptr;
    for (const TruthCase& t : truth())
        if (t.set == "transformers modeling code (measure_hf.py)" && t.config.finetune.method == FinetuneMethod::lora &&
            std::string(t.config.model.family->model_type) == "llama")
            lora = &t;
    REQUIRE(lora);
    const Config c = as_user(*lora);
    const json ev = check_measured(c);
    REQUIRE(!ev["measured"].empty());
    const json& best = ev["measured"][0];
    CHECK(best["group"] == "every key equal");
    // The case itself is in the closest group; a group of one has its own error, as accuracy prints it.
    CHECK(best["set"] == "transformers modeling code (measure_hf.py)");
    if (best["cases"] == 1) CHECK(best["median_error"].get<double>() == Approx(100 * std::fabs(lora->error)));
    check_allowances(c, ev);
}

TEST_CASE("evidence: a torchtune case") {
    const TruthCase& t = find_case("lora_all_chunked8");
    const Config c = as_user(t);
    const json ev = check_measured(c);
    REQUIRE(!ev["measured"].empty());
    CHECK(ev["measured"][0]["set"] == "torchtune recipes' training step");
    CHECK(ev["measured"][0]["source"] == "cpu");
    CHECK(ev["measured"][0]["versions"].get<std::string>().find("torchtune 0.6.1") != std::string::npos);
    check_allowances(c, ev);
}

TEST_CASE("evidence: an FSDP case") {
    const TruthCase* fsdp = nullptr;
    for (const TruthCase& t : truth())
        if (t.set == "FSDP 1 and 2 with transformers, 2 gloo ranks" && !fsdp) fsdp = &t;
    REQUIRE(fsdp);
    const Config c = as_user(*fsdp);
    const json ev = check_measured(c);
    REQUIRE(!ev["measured"].empty());
    CHECK(ev["measured"][0]["set"] == "FSDP 1 and 2 with transformers, 2 gloo ranks");
    check_allowances(c, ev);  // two GPUs: NCCL's buffers listed as not counted
    CHECK(allowance(ev, "nccl_buffers"));
}

TEST_CASE("evidence: a torchtitan case with tensor parallelism") {
    const TruthCase* titan = nullptr;
    for (const TruthCase& t : truth())
        if (t.set == "torchtitan's own training step, 2-4 gloo ranks" && t.config.tp > 1 && !titan) titan = &t;
    REQUIRE(titan);
    const Config c = as_user(*titan);
    const json ev = check_measured(c);
    REQUIRE(!ev["measured"].empty());
    CHECK(ev["measured"][0]["set"] == "torchtitan's own training step, 2-4 gloo ranks");
    for (const json& g : ev["measured"]) CHECK(g["matches"].size() >= 2);  // tp > 1 is part of the strategy
    check_allowances(c, ev);
}

TEST_CASE("evidence: a stack nothing measured (Megatron-LM) lists no measurement and says so") {
    const Config c = parsed({{"model", "llama-2-7b"}, {"strategy", "megatron"}, {"gpus", 8}, {"tp", 2}});
    std::size_t expected = 0;
    for (const TruthCase& t : truth()) expected += same_method_and_strategy(t.config, c);
    CHECK(expected == 0);
    const json ev = check_measured(c);
    CHECK(ev["measured"].empty());
    CHECK(ev["summary"].get<std::string>().rfind("No committed measurement", 0) == 0);
    check_allowances(c, ev);
}

TEST_CASE("evidence: the allowances are the estimate's own terms, and CPU estimates have none of CUDA's") {
    Config c = parsed({{"model", "llama-2-7b"}, {"optimizer", "paged-adamw-8bit"}, {"compile", true}});
    json ev = evidence_for(c, estimate_memory(c));
    check_allowances(c, ev);
    CHECK(allowance(ev, "compile"));
    c = parsed({{"model", "llama-2-7b"}, {"device", "cpu"}});
    ev = evidence_for(c, estimate_memory(c));
    check_allowances(c, ev);
    CHECK((*allowance(ev, "cuda_context"))["bytes"] == 0);
    CHECK((*allowance(ev, "allocator_overhead"))["bytes"] == 0);
}

TEST_CASE("evidence: the cost per report stays small") {
    const Config c = parsed({{"model", "llama-3.1-8b"}, {"finetune", {{"method", "lora"}}}, {"gpu", "a100-80gb"}});
    const MemoryEstimate m = estimate_memory(c);
    evidence_for(c, m);  // the cases parsed and this kind's estimated once
    using clock = std::chrono::steady_clock;
    const int calls = 2000;
    const auto start = clock::now();
    std::size_t sink = 0;
    for (int i = 0; i < calls; ++i) sink += evidence_for(c, m)["measured"].size();
    const double us = std::chrono::duration<double, std::micro>(clock::now() - start).count() / calls;
    std::printf("evidence_for: %.1f us per call (%zu groups)\n", us, sink / calls);
    CHECK(us < 2000);  // generous: the page estimates on every keystroke; measured ~tens of us
}
