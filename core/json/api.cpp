#include "json/api.hpp"

#include <cmath>
#include <string_view>
#include <nlohmann/json.hpp>

#include "evidence/evidence.hpp"
#include "exports/exports.hpp"
#include "input/json_text.hpp"
#include "json/report_json.hpp"
#include "memory/estimate.hpp"
#include "json/scenarios.hpp"
#include "model/families.hpp"
#include "model/model_catalog.hpp"
#include "hardware/gpus.hpp"
#include "model/model_json.hpp"
#include "model/model_search.hpp"
#include "model/presets.hpp"
#include "setup/config_json.hpp"
#include "setup/schema.hpp"

namespace vramcalc {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ApiResult failure(const std::vector<FieldError>& errors) { return {false, dump(errors_to_json(errors))}; }

namespace {

// Reads an axis of the sweep grid: an array of positive integers up to `max` (the configuration's own
// limit for that key), or the configuration's own value.
bool read_axis(const json& request, const char* key, std::uint64_t fallback, std::uint64_t max,
               std::vector<std::uint64_t>& out, std::vector<FieldError>& errors) {
    auto it = request.find(key);
    if (it == request.end()) {
        out = {fallback};
        return true;
    }
    const std::string rule = "must be an array of 1 to 1000 integers from 1 to " + std::to_string(max);
    if (!it->is_array() || it->empty() || it->size() > 1000) {
        errors.push_back({key, rule});
        return false;
    }
    for (const json& v : *it) {
        const double d = v.is_number() ? v.get<double>() : 0;
        if (!(d >= 1 && d <= double(max) && d == std::floor(d))) {
            errors.push_back({key, rule + ", got " + describe_json(v)});
            return false;
        }
        out.push_back(std::uint64_t(d));
    }
    return true;
}

}  // namespace

namespace {

// The report of a configuration, with `add` given the report and its JSON; the parse's or the plan's error otherwise.
template <class Add>
ApiResult report_json(const std::string& config_json, PlanMaker plans, Add add, Advice advice = Advice::now) {
    ParsedConfig p = parse_config(config_json);
    if (!p.ok()) return failure(p.errors);
    if (p.config.plan.on && !plans)
        return failure({{"plan", "is answered by the planner: plan() of the page's planner module, or vramcalc plan"}});
    const Report r = make_report(p.config, plans, advice);
    nlohmann::json out = report_to_json(r);
    add(r, out);
    return {true, dump(out)};
}

}  // namespace

ApiResult timeline_json(const std::string& config_json) {
    ParsedConfig p = parse_config(config_json);
    if (!p.ok()) return failure(p.errors);
    const Step step(p.config);
    const MemoryEstimate m = estimate_memory(step);
    return {true, dump({{"timeline", timeline_to_json(step_timeline(step, m), m)}})};
}

ApiResult estimate_json(const std::string& config_json, PlanMaker plans) {
    return report_json(config_json, plans, [](const Report& r, nlohmann::json& out) {
        out["evidence"] = evidence_for(r.config, r.memory);  // what the estimate rests on (evidence.cpp)
    });
}

ApiResult answer_json(const std::string& config_json, Advice advice) {
    return report_json(config_json, nullptr, [](const Report&, nlohmann::json&) {}, advice);
}

ApiResult evidence_json(const std::string& config_json) {
    ParsedConfig p = parse_config(config_json);
    if (!p.ok()) return failure(p.errors);
    return {true, dump({{"evidence", evidence_for(p.config, estimate_memory(p.config))}})};
}

ApiResult deepspeed_json(const std::string& config_json) {
    ParsedConfig p = parse_config(config_json);
    if (p.ok() && p.config.strategy != Strategy::deepspeed)
        p.errors.push_back({"strategy", "a DeepSpeed config needs strategy \"deepspeed\""});
    if (!p.ok()) return failure(p.errors);
    return {true, dump(deepspeed_config(p.config))};
}

ApiResult exports_json(const std::string& config_json) {
    const ParsedConfig p = parse_config(config_json);
    if (!p.ok()) return failure(p.errors);
    json list = json::array();
    for (const Export& e : exports_for(p.config))
        list.push_back({{"id", e.id}, {"title", e.title}, {"filename", e.filename}, {"language", e.language}, {"text", e.text}});
    return {true, dump({{"exports", list}})};
}

ApiResult sweep_json(const std::string& request_json) {
    std::string problem;
    const json request = parse_json_text(request_json, problem);
    if (request.is_discarded()) return failure({{"", problem}});
    if (!request.is_object())
        return failure({{"", "the sweep request must be a JSON object {\"config\", \"micro_batch\", \"seq_len\"}"}});
    for (auto it = request.begin(); it != request.end(); ++it)
        if (it.key() != "config" && it.key() != "micro_batch" && it.key() != "seq_len")
            return failure({{it.key(), "unknown key; allowed keys: config, micro_batch, seq_len"}});
    ParsedConfig p = parse_config(request.contains("config") ? request["config"] : json::object());
    if (!p.ok()) return failure(p.errors);
    std::vector<FieldError> errors;
    std::vector<std::uint64_t> batches, seqs;
    read_axis(request, "micro_batch", p.config.micro_batch, std::uint64_t(1) << 20, batches, errors);
    read_axis(request, "seq_len", p.config.seq_len, std::uint64_t(1) << 24, seqs, errors);
    if (errors.empty() && batches.size() * seqs.size() > 10000)
        errors.push_back({"", "the grid is larger than 10000 points"});
    if (!errors.empty()) return failure(errors);
    json peak = json::array(), total = json::array();
    // Each point from the request's own configuration, so that defaults derived from the shape (LitGPT's loss
    // chunks) follow the point, as a single estimate of it would.
    const json base = request.contains("config") ? request["config"] : json::object();
    for (std::uint64_t s : seqs) {
        json peak_row = json::array(), total_row = json::array();
        for (std::uint64_t b : batches) {
            json point = base;
            point["seq_len"] = s, point["micro_batch"] = b;
            ParsedConfig q = parse_config(point);  // the same checks as a single estimate
            if (!q.ok()) {
                peak_row.push_back(nullptr), total_row.push_back(nullptr);
                continue;
            }
            const MemoryEstimate m = estimate_memory(q.config);
            peak_row.push_back(std::uint64_t(m.peak_allocated)), total_row.push_back(std::uint64_t(m.total));
        }
        peak.push_back(peak_row), total.push_back(total_row);
    }
    const json out = {{"micro_batch", batches}, {"seq_len", seqs}, {"peak_allocated_bytes", peak},
                      {"total_bytes", total},
                      {"capacity_bytes", std::uint64_t(p.config.gpu.memory_gib * 1024.0 * 1024 * 1024)}};
    return {true, dump(out)};
}

std::string models_json() {
    static const std::string cached = [] {
        json models = json::array(), catalog = json::array(), gpus = json::array();
        for (const ModelPreset& m : model_presets())
            models.push_back({{"id", m.arch.id}, {"name", m.name}, {"parameters", total_params(m.arch)},
                              {"architecture", architecture_to_json(m.arch)}});
        // The model type read off the compact config.json text make_catalog.py writes, not parsed: what the page
        // lists at start costs the first estimate nothing (a parse of every config took 15-25 ms in WASM).
        constexpr const char* kType = "\"model_type\":\"";
        for (const CatalogModel& m : model_catalog()) {
            const std::string_view text = m.config;
            const std::size_t at = text.find(kType), from = at + std::char_traits<char>::length(kType);
            const std::size_t to = at == std::string_view::npos ? at : text.find('"', from);
            catalog.push_back({{"id", m.id}, {"model_type", to == std::string_view::npos ? "" : std::string(text.substr(from, to - from))}});
        }
        for (const Gpu& g : gpu_catalog())
            gpus.push_back({{"id", g.id}, {"name", g.name}, {"memory_gib", g.memory_gib}});
        return dump({{"models", models}, {"catalog", catalog}, {"gpus", gpus}});
    }();
    return cached;
}

ApiResult search_models_json(const std::string& query, int limit) {
    std::vector<FieldError> errors;
    if (limit < 1 || limit > 100) errors.push_back({"limit", "must be from 1 to 100, got " + std::to_string(limit)});
    if (query.size() > 512) errors.push_back({"query", "must be at most 512 characters, got " + std::to_string(query.size())});
    if (!errors.empty()) return failure(errors);
    json results = json::array();
    for (const ModelMatch& m : search_models(query, std::size_t(limit)))
        results.push_back({{"id", m.id}, {"name", m.name}, {"parameters", m.parameters}, {"match", match_name(m.match)}});
    const std::string id = resolve_model_name(query);  // what a configuration's model reads the text as
    return {true, dump({{"results", results}, {"resolves", id.empty() ? json(nullptr) : json(id)}})};
}

std::string presets_json() {
    static const std::string cached = [] {
        json models = json::array(), gpus = json::array(), examples = json::array();
        for (const ModelPreset& m : model_presets())
            models.push_back({{"id", m.arch.id}, {"name", m.name}, {"source", m.source},
                              {"parameters", total_params(m.arch)}, {"architecture", architecture_to_json(m.arch)}});
        json catalog = json::array();
        for (const CatalogModel& m : model_catalog()) {
            const ParsedConfig p = parse_config(json{{"model", m.id}});
            const json hf = json::parse(m.config, nullptr, false);
            catalog.push_back({{"id", m.id},
                               {"model_type", hf.is_object() ? hf.value("model_type", "") : ""},
                               {"parameters", p.ok() ? total_params(p.config.model) : 0}});
        }
        for (const Gpu& g : gpu_catalog())
            gpus.push_back({{"id", g.id}, {"name", g.name}, {"memory_gib", g.memory_gib},
                            {"bandwidth_gbps", g.bandwidth_gbps}, {"bf16_tflops", g.bf16_tflops}});
        for (const Scenario& s : scenarios())
            examples.push_back({{"id", s.id}, {"description", s.description}, {"config", json::parse(s.config_json)}});
        return dump({{"models", models}, {"catalog", catalog}, {"gpus", gpus}, {"scenarios", examples}});
    }();  // the tables are constant: build the answer once
    return cached;
}

std::string schema_text() {
    static const std::string cached = dump(schema_json());
    return cached;
}

std::string schema_markdown_text() { return schema_markdown(); }

ApiResult describe_json(const std::string& config_json) {
    const ParsedConfig p = parse_config(config_json);
    json errors = errors_to_json(p.errors)["errors"];
    const Family& f = *p.config.model.family;
    json roles = json::object();  // each role's module name in the model's code (a LoRA target's meaning)
    for (const auto& [role, name] : {std::pair{"qkv", f.qkv}, {"q", f.q}, {"k", f.k}, {"v", f.v}, {"o", f.o}, {"gate", f.gate},
                                     {"up", f.up}, {"down", f.down}, {"head", f.head}})
        if (name) roles[role] = name;
    return {p.ok(), dump({{"defaults", key_defaults(p.config)}, {"modules", adapter_target_names(p.config.model)},
                          {"roles", roles}, {"parameters", total_params(p.config.model)}, {"errors", errors}})};
}

}  // namespace vramcalc
