#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace vramcalc::cli {

namespace {
std::string gib(double b) {
    char s[32];
    std::snprintf(s, sizeof s, "%9.2f GiB", b / (1024.0 * 1024 * 1024));
    return s;
}
// What the estimate rests on: the closest measured groups, then the terms nothing measured.
std::string format_evidence(const nlohmann::json& e) {
    std::string out = "Evidence: " + e["summary"].get<std::string>() + "\n";
    char line[512];
    std::size_t shown = 0;
    for (const auto& g : e["measured"]) {
        if (++shown > 3) break;
        std::string errors = "no figure";
        if (!g["median_error"].is_null()) {
            std::snprintf(line, sizeof line, "median |error| %.2f%%, max %.2f%%", g["median_error"].get<double>(),
                          g["max_error"].get<double>());
            errors = line;
        }
        if (g.contains("ran"))
            errors += ", " + std::to_string(g["ran_estimated_to_fit"].get<std::size_t>()) + " of " +
                      std::to_string(g["ran"].get<std::size_t>()) + " runs that ran fit";
        std::snprintf(line, sizeof line, "  %3zu %s (%s), %s: %s\n", g["cases"].get<std::size_t>(),
                      g["set"].get<std::string>().c_str(),
                      g["source"] == "cpu" ? "measured on CPU" : "published GPU figures",
                      g["group"].get<std::string>().c_str(), errors.c_str());
        out += line;
    }
    std::size_t more_cases = e.contains("more") ? e["more"]["cases"].get<std::size_t>() : 0;
    for (std::size_t i = 3; i < e["measured"].size(); ++i) more_cases += e["measured"][i]["cases"].get<std::size_t>();
    if (more_cases) out += "  and " + std::to_string(more_cases) + " more cases in looser groups\n";
    std::string terms;
    for (const auto& a : e["allowances"]) {
        std::string bytes = gib(a["bytes"].get<double>());
        bytes = bytes.substr(bytes.find_first_not_of(' '));
        terms += (terms.empty() ? "" : ", ") + a["term"].get<std::string>() + " " + bytes;
    }
    if (!terms.empty()) out += "  not measured: " + terms + "\n";
    return out;
}

}  // namespace

std::string format_table(const std::string& report_json) {
    const nlohmann::json r = nlohmann::json::parse(report_json);
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%s: %.3fB parameters (%.3fB trainable)\n",
                  r["config"]["model"].is_string() ? r["config"]["model"].get<std::string>().c_str() : "custom",
                  r["parameters"]["total"].get<double>() / 1e9, r["parameters"]["trainable"].get<double>() / 1e9);
    out += line;
    out += "per GPU at the peak (" + r["peak_phase"].get<std::string>() + "):\n";
    for (const char* k : {"weights", "gradients", "optimizer_states", "master_weights", "activations", "logits",
                          "temporaries", "allocator_overhead", "collective_streams_cached", "cuda_context", "nccl_buffers",
                          "paged_optimizer_states"}) {
        if (!r["per_gpu_bytes"].contains(k)) continue;  // some terms only where they apply (FSDP, a paged optimizer)
        std::snprintf(line, sizeof line, "  %-20s %s\n", k, gib(r["per_gpu_bytes"][k].get<double>()).c_str());
        out += line;
    }
    std::snprintf(line, sizeof line, "  %-20s %s of %s on %s: %s (headroom %s)\n", "total",
                  gib(r["total_bytes"].get<double>()).c_str(), gib(r["gpu"]["capacity_bytes"].get<double>()).c_str(),
                  r["gpu"]["name"].get<std::string>().c_str(), r["fits"].get<bool>() ? "fits" : "DOES NOT FIT",
                  gib(r["headroom_bytes"].get<double>()).c_str());
    out += line;
    out += "largest micro_batch that fits: " + std::to_string(r["max_micro_batch"].get<std::uint64_t>()) + "\n";
    for (const auto& s : r["suggestions"]) {
        std::snprintf(line, sizeof line, "  -> %-55s %s %s\n", s["change"].get<std::string>().c_str(),
                      gib(s["total_bytes"].get<double>()).c_str(), s["fits"].get<bool>() ? "fits" : "");
        out += line;
    }
    if (r.contains("evidence")) out += format_evidence(r["evidence"]);
    for (const auto& w : r["warnings"]) out += "warning: " + w.get<std::string>() + "\n";
    return out;
}

}  // namespace vramcalc::cli
