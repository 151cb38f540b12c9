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
                          "temporaries", "allocator_overhead", "cuda_context", "paged_optimizer_states"}) {
        if (!r["per_gpu_bytes"].contains(k)) continue;  // paged states only with a paged optimizer
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
    for (const auto& w : r["warnings"]) out += "warning: " + w.get<std::string>() + "\n";
    return out;
}

}  // namespace vramcalc::cli
