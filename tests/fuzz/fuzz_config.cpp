// libFuzzer harness over the text-in, text-out API (core/json/api.hpp).
//
// The first byte picks the entry point (entry_points.hpp), so one corpus covers all six; a configuration starts with
// '{' or whitespace, so plain config files in corpus/ go to estimate_json.
//
// Beyond "no crash, no sanitizer report, no hang", every call must satisfy invariants that hold for any input:
//   * the output is valid JSON;
//   * a failure is {"errors":[{"field":string,"message":non-empty string}, ...]} with at least one error;
//   * an estimate has non-negative integer byte fields, total_bytes equal to the sum of per_gpu_bytes (within
//     rounding: each term is rounded separately), each phase's allocated_bytes equal to the sum of its terms,
//     peak_allocated <= peak_reserved <= total, headroom == capacity - total, the peak phase the largest one,
//     max_micro_batch >= micro_batch when the configuration fits;
//   * the "config" an estimate echoes is itself a valid configuration that gives the same estimate back
//     (parse_config(config_to_json(c)) == c, the share-link contract);
//   * an estimate's suggestions each need no more than the configuration itself, and fit only within the capacity;
//     fits agrees with the sign of headroom_bytes; pipeline_stage is "first"/"last" exactly when pp > 1;
//   * a sweep has a peak <= total at every non-null point of the grid, and its first valid point equals the
//     single estimate of that configuration;
//   * a DeepSpeed config has positive integer batch sizes;
//   * every plan fits, and its configuration, estimated again on its own, gives its memory and fits.
// A broken invariant prints what broke and aborts, which libFuzzer reports as a crash.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "entry_points.hpp"
#include "json/api.hpp"

namespace {

using nlohmann::json;

[[noreturn]] void fail(const char* what, const std::string& input, const std::string& output) {
    std::fprintf(stderr, "\n=== invariant broken: %s\n--- input (%zu bytes): %.2000s\n--- output: %.4000s\n", what,
                 input.size(), input.c_str(), output.c_str());
    std::abort();
}

#define CHECK_OR_FAIL(cond, what) \
    do {                          \
        if (!(cond)) fail(what, input, r.json); \
    } while (0)

bool is_bytes(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0); }

double as_double(const json& v) { return v.get<double>(); }

// Sums of separately rounded terms: each rounding moves a term by at most 0.5; doubles add a relative error.
bool close(double a, double b, double terms) { return std::fabs(a - b) <= 0.5 * terms + 1 + 1e-12 * std::fabs(b); }

void check_errors(const std::string& input, const vramcalc::ApiResult& r, const json& out) {
    CHECK_OR_FAIL(out.is_object() && out.contains("errors"), "a failure must be {\"errors\": [...]}");
    const json& errs = out["errors"];
    CHECK_OR_FAIL(errs.is_array() && !errs.empty(), "a failure must list at least one error");
    for (const json& e : errs) {
        CHECK_OR_FAIL(e.is_object() && e.contains("field") && e.contains("message"), "error without field/message");
        CHECK_OR_FAIL(e["field"].is_string() && e["message"].is_string(), "field/message must be strings");
        CHECK_OR_FAIL(!e["message"].get_ref<const std::string&>().empty(), "empty error message");
    }
}

double sum_terms(const std::string& input, const vramcalc::ApiResult& r, const json& terms, std::size_t expected) {
    CHECK_OR_FAIL(terms.is_object() && terms.size() == expected, "per_gpu_bytes has the wrong keys");
    double s = 0;
    for (auto it = terms.begin(); it != terms.end(); ++it) {
        CHECK_OR_FAIL(is_bytes(it.value()), "a byte term is not a non-negative integer");
        s += as_double(it.value());
    }
    return s;
}

void check_estimate(const std::string& input, const vramcalc::ApiResult& r, const json& out, bool round_trip);

// Every plan of either group fits, and its configuration estimated on its own gives the same memory.
void check_plans(const std::string& input, const vramcalc::ApiResult& r, const json& out) {
    check_estimate(input, r, out, false);
    for (const char* group : {"plans", "plans_changing_training"}) {
        CHECK_OR_FAIL(out.contains(group) && out[group].is_array(), "a plan group is missing");
        for (const json& p : out[group]) {
            CHECK_OR_FAIL(p.value("fits", false), "a plan does not fit");
            const vramcalc::ApiResult again = vramcalc::answer_json(p["config"].dump());
            const json a = json::parse(again.json, nullptr, false);
            CHECK_OR_FAIL(again.ok && a.value("fits", false), "a plan's configuration does not fit on its own");
            CHECK_OR_FAIL(a["total_bytes"] == p["total_bytes"], "a plan's memory differs from its configuration's");
        }
    }
}

void check_estimate(const std::string& input, const vramcalc::ApiResult& r, const json& out, bool round_trip) {
    CHECK_OR_FAIL(out.is_object(), "an estimate must be an object");
    for (const char* k : {"peak_allocated_bytes", "peak_reserved_bytes", "total_bytes", "cpu_bytes", "max_micro_batch"})
        CHECK_OR_FAIL(out.contains(k) && is_bytes(out[k]), "a byte field is missing or not a non-negative integer");
    CHECK_OR_FAIL(out.contains("per_gpu_bytes") && out.contains("phases") && out.contains("gpu") &&
                      out.contains("config") && out.contains("headroom_bytes") && out.contains("fits"),
                  "an estimate lacks a field");
    const double total = as_double(out["total_bytes"]);
    const double allocated = as_double(out["peak_allocated_bytes"]);
    const double reserved = as_double(out["peak_reserved_bytes"]);
    // Nine terms, and the paged optimizer states when a paged optimizer keeps them.
    const std::size_t terms = 9 + (out["per_gpu_bytes"].is_object() && out["per_gpu_bytes"].contains("paged_optimizer_states"));
    const double per_gpu = sum_terms(input, r, out["per_gpu_bytes"], terms);
    CHECK_OR_FAIL(close(per_gpu, total, double(terms)), "total_bytes != sum of per_gpu_bytes");
    CHECK_OR_FAIL(allocated <= reserved + 1 && reserved <= total + 1, "peak_allocated <= peak_reserved <= total broken");

    const json& phases = out["phases"];
    CHECK_OR_FAIL(phases.is_array() && !phases.empty(), "phases must be a non-empty array");
    double largest = 0;
    bool peak_named = false;
    for (const json& p : phases) {
        CHECK_OR_FAIL(p.is_object() && p.contains("allocated_bytes") && is_bytes(p["allocated_bytes"]) &&
                          p.contains("per_gpu_bytes") && p.contains("name"),
                      "malformed phase");
        const double a = as_double(p["allocated_bytes"]);
        CHECK_OR_FAIL(close(sum_terms(input, r, p["per_gpu_bytes"], 7), a, 7), "phase allocated != sum of its terms");
        largest = std::max(largest, a);
        if (p["name"] == out["peak_phase"]) {
            peak_named = true;
            CHECK_OR_FAIL(close(a, allocated, 1), "peak_allocated_bytes != the peak phase's allocated_bytes");
        }
    }
    CHECK_OR_FAIL(peak_named, "peak_phase names no phase");
    CHECK_OR_FAIL(close(largest, allocated, 1), "the peak phase is not the largest phase");

    const json& gpu = out["gpu"];
    CHECK_OR_FAIL(gpu.is_object() && gpu.contains("capacity_bytes") && is_bytes(gpu["capacity_bytes"]),
                  "gpu.capacity_bytes missing");
    CHECK_OR_FAIL(out["headroom_bytes"].is_number_integer() &&
                      out["headroom_bytes"].get<std::int64_t>() ==
                          std::int64_t(gpu["capacity_bytes"].get<std::uint64_t>()) -
                              std::int64_t(out["total_bytes"].get<std::uint64_t>()),
                  "headroom_bytes != capacity - total");
    CHECK_OR_FAIL(out["fits"].is_boolean(), "fits must be a boolean");
    // fits is total <= capacity, taken before rounding: the rounded headroom may be off by one only.
    const std::int64_t headroom = out["headroom_bytes"].get<std::int64_t>();
    CHECK_OR_FAIL(out["fits"].get<bool>() ? headroom >= -1 : headroom <= 1, "fits disagrees with headroom_bytes");
    const double capacity = as_double(gpu["capacity_bytes"]);
    CHECK_OR_FAIL(out.contains("parameters") && out["parameters"].is_object() && out["parameters"].contains("total") &&
                      out["parameters"].contains("trainable") && is_bytes(out["parameters"]["total"]) &&
                      is_bytes(out["parameters"]["trainable"]),
                  "parameters must hold non-negative integer total and trainable");
    CHECK_OR_FAIL(out.contains("warnings") && out["warnings"].is_array(), "warnings must be an array");
    for (const json& w : out["warnings"])
        CHECK_OR_FAIL(w.is_string() && !w.get_ref<const std::string&>().empty(), "a warning is not a non-empty string");
    // Suggestions: each a smaller total than the configuration's own, fits consistent with the capacity.
    CHECK_OR_FAIL(out.contains("suggestions") && out["suggestions"].is_array(), "suggestions must be an array");
    for (const json& s : out["suggestions"]) {
        CHECK_OR_FAIL(s.is_object() && s.contains("change") && s["change"].is_string() && s.contains("config") &&
                          s["config"].is_object() && s.contains("total_bytes") && is_bytes(s["total_bytes"]) &&
                          s.contains("fits") && s["fits"].is_boolean() && s.contains("why") && s["why"].is_string(),
                      "malformed suggestion");
        CHECK_OR_FAIL(as_double(s["total_bytes"]) <= total, "a suggestion needs more memory than the configuration");
        CHECK_OR_FAIL(!s["fits"].get<bool>() || as_double(s["total_bytes"]) <= capacity + 1,
                      "a suggestion said to fit exceeds the capacity");
    }
    const json& cfg = out["config"];
    // Pipeline parallelism names the stage whose peak is reported; without it there is no stage.
    const bool pipelined = cfg.is_object() && cfg.contains("pp") && cfg["pp"].is_number_unsigned() &&
                           cfg["pp"].get<std::uint64_t>() > 1;
    CHECK_OR_FAIL(pipelined ? out.contains("pipeline_stage") && out["pipeline_stage"].is_string() &&
                                  (out["pipeline_stage"] == "first" || out["pipeline_stage"] == "last")
                            : !out.contains("pipeline_stage"),
                  "pipeline_stage must be \"first\" or \"last\" exactly when pp > 1");
    CHECK_OR_FAIL(cfg.is_object() && cfg.contains("micro_batch") && is_bytes(cfg["micro_batch"]), "config echo");
    if (out["fits"].get<bool>())
        CHECK_OR_FAIL(out["max_micro_batch"].get<std::uint64_t>() >= cfg["micro_batch"].get<std::uint64_t>(),
                      "the configuration fits but max_micro_batch is below its micro_batch");

    if (round_trip) {
        // The echoed configuration must be accepted as input and give the same estimate.
        const std::string echoed = cfg.dump();
        const vramcalc::ApiResult again = vramcalc::estimate_json(echoed);
        if (!again.ok) fail("the echoed config is rejected by estimate_json", input, again.json);
        const json out2 = json::parse(again.json, nullptr, false);
        if (out2.is_discarded() || out2["config"] != cfg) fail("the echoed config does not round-trip", input, again.json);
        if (out2["total_bytes"] != out["total_bytes"]) fail("the echoed config gives another total", input, again.json);
    }
}

void check_sweep(const std::string& input, const vramcalc::ApiResult& r, const json& out) {
    CHECK_OR_FAIL(out.is_object() && out.contains("peak_allocated_bytes") && out.contains("total_bytes"),
                  "a sweep lacks its grids");
    const json &peak = out["peak_allocated_bytes"], &total = out["total_bytes"];
    CHECK_OR_FAIL(peak.is_array() && total.is_array() && peak.size() == total.size() &&
                      peak.size() == out["seq_len"].size(),
                  "sweep grid shape");
    for (std::size_t i = 0; i < peak.size(); ++i) {
        CHECK_OR_FAIL(peak[i].size() == out["micro_batch"].size() && total[i].size() == peak[i].size(), "sweep row");
        for (std::size_t j = 0; j < peak[i].size(); ++j) {
            CHECK_OR_FAIL(peak[i][j].is_null() == total[i][j].is_null(), "a sweep point is null in one grid only");
            if (peak[i][j].is_null()) continue;
            CHECK_OR_FAIL(is_bytes(peak[i][j]) && is_bytes(total[i][j]), "a sweep point is not a byte count");
            CHECK_OR_FAIL(as_double(peak[i][j]) <= as_double(total[i][j]), "sweep peak > total");
        }
    }
    // The first valid point of the grid is what a single estimate of that configuration gives (the sweep truncates
    // where the estimate rounds: within 1 byte).
    const json request = json::parse(input, nullptr, false);
    if (!request.is_object()) return;
    json config = request.contains("config") ? request["config"] : json::object();
    for (std::size_t i = 0; i < peak.size(); ++i)
        for (std::size_t j = 0; j < peak[i].size(); ++j) {
            if (peak[i][j].is_null()) continue;
            config["seq_len"] = out["seq_len"][i], config["micro_batch"] = out["micro_batch"][j];
            const vramcalc::ApiResult single = vramcalc::estimate_json(config.dump());
            if (!single.ok) fail("a sweep point is valid but its estimate is rejected", input, single.json);
            const json one = json::parse(single.json, nullptr, false);
            if (!close(as_double(one["total_bytes"]), as_double(total[i][j]), 2) ||
                !close(as_double(one["peak_allocated_bytes"]), as_double(peak[i][j]), 2))
                fail("a sweep point differs from the estimate of the same configuration", input, single.json);
            return;
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string all(reinterpret_cast<const char*>(data), size);
    const char mode = vramcalc::fuzz::entry_mode(all);
    const std::string input = vramcalc::fuzz::entry_input(all);
    const vramcalc::ApiResult r = vramcalc::fuzz::call_entry(all);
    const json out = json::parse(r.json, nullptr, false);
    CHECK_OR_FAIL(!out.is_discarded(), "the output is not valid JSON");
    if (!r.ok) {
        check_errors(input, r, out);
        return 0;
    }
    switch (mode) {
        case 'S': check_sweep(input, r, out); break;
        case 'D':
            CHECK_OR_FAIL(out.is_object() && out.contains("zero_optimization"), "deepspeed config shape");
            for (const char* k : {"train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size"})
                CHECK_OR_FAIL(out.contains(k) && out[k].is_number_unsigned() && out[k].get<std::uint64_t>() >= 1,
                              "a DeepSpeed batch size is not a positive integer");
            break;
        case 'A': CHECK_OR_FAIL(out.is_object() && out.contains("steps") && out.contains("param"), "adamw shape"); break;
        case 'M': CHECK_OR_FAIL(out["results"].is_array() && out["results"].size() <= 10, "search results shape"); break;
        case 'P': check_plans(input, r, out); break;
        default: check_estimate(input, r, out, true); break;
    }
    return 0;
}
