// The estimator against measured PyTorch training steps: every case's peak_allocated_bytes must be
// within 3% of the measurement. Prints a table and the median and max error. With --phases, every estimated
// phase's peak must be within the same 3% of the measured phase of the same name (measured.phase_peak_bytes), and the
// regimes' phases (generation, reference, old_logps) must be there on both sides. With --timeline, the step's first
// moment (step_timeline's micro_batch_start) must be within 3% of the live bytes measured as the step starts
// (measured.step_start_bytes; with grad_accum 1, as the measurement starts the step's first micro-batch and the
// timeline describes the last); the largest forward and optimizer moments are shown beside the measured phase peaks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memory/estimate.hpp"
#include "setup/config_json.hpp"

namespace {

// The measured phase each estimated phase is compared with (the measurement scripts' profiler ranges).
std::string measured_phase(const std::string& estimated) { return estimated == "optimizer_step" ? "optimizer" : estimated; }

// Estimated phases against measured ones; returns how many phases were out of tolerance or missing.
// Every case's peak, and with --phases every phase's.
constexpr double kTolerance = 0.03;

int check_phases(const std::string& name, const vramcalc::MemoryEstimate& m, const nlohmann::json& measured,
                 std::vector<double>& errors) {
    const nlohmann::json& peaks = measured["phase_peak_bytes"];
    int failed = 0;
    for (const vramcalc::Phase& p : m.phases) {
        const std::string key = measured_phase(p.name);
        if (!peaks.contains(key)) {
            std::printf("%-40s %-15s estimated %.0f, not measured  <-- missing\n", name.c_str(), p.name.c_str(), p.terms.sum());
            ++failed;
            continue;
        }
        const double truth = peaks[key].get<double>(), error = (p.terms.sum() - truth) / truth;
        const bool ok = std::fabs(error) <= kTolerance;
        errors.push_back(std::fabs(error));
        failed += !ok;
        std::printf("%-40s %-15s %14.0f %14.0f %+7.2f%%%s\n", name.c_str(), p.name.c_str(), truth, p.terms.sum(),
                    100 * error, ok ? "" : "  <-- over 3%");
    }
    for (const char* regime : {"generation", "reference", "old_logps"}) {
        const bool estimated = std::any_of(m.phases.begin(), m.phases.end(), [&](const vramcalc::Phase& p) { return p.name == regime; });
        if (peaks.contains(regime) && !estimated) {
            std::printf("%-40s %-15s measured, not estimated  <-- missing\n", name.c_str(), regime);
            ++failed;
        }
    }
    return failed;
}

// The timeline's first moment against the measured step start; returns 1 when out of tolerance.
int check_timeline(const std::string& name, const vramcalc::Step& step, const vramcalc::MemoryEstimate& m,
                   const nlohmann::json& measured, std::vector<double>& errors) {
    const std::vector<vramcalc::Moment> moments = vramcalc::step_timeline(step, m);
    const double truth = measured["step_start_bytes"].get<double>(), start = moments.front().terms.sum();
    const double error = (start - truth) / truth;
    errors.push_back(std::fabs(error));
    auto largest = [&](const char* phase) {
        double best = 0;
        for (const vramcalc::Moment& t : moments)
            if (t.phase == phase) best = std::max(best, t.terms.sum());
        return best;
    };
    auto shown = [](double estimated, const nlohmann::json& truth) {
        return truth.is_number() ? 100 * (estimated - truth.get<double>()) / truth.get<double>() : 0.0;
    };
    const bool ok = std::fabs(error) <= kTolerance;
    std::printf("%-46s %14.0f %14.0f %+7.2f%%  forward %+6.1f%%, optimizer %+6.1f%%%s\n", name.c_str(), truth, start,
                100 * error, shown(largest("forward"), measured.value("forward_peak_bytes", nlohmann::json())),
                shown(largest("optimizer_step"), measured.value("optimizer_peak_bytes", nlohmann::json())),
                ok ? "" : "  <-- over 3%");
    return !ok;
}

}  // namespace

int main(int argc, char** argv) {
    // --first-micro-batch: the run's first micro-batch (measured.first_micro_batch_peak_bytes) against the estimate
    // with longest_batch_first. --phases: every phase against the measured phase peaks.
    const std::string mode = argc == 3 ? argv[1] : "";
    const bool first = mode == "--first-micro-batch", phases = mode == "--phases", timeline = mode == "--timeline";
    if (argc != 2 && !first && !phases && !timeline) {
        std::fprintf(stderr, "usage: accuracy [--first-micro-batch | --phases | --timeline] MEASURED.jsonl\n");
        return 2;
    }
    const char* path = argv[argc - 1];
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    std::vector<double> errors;
    int failed = 0;
    if (phases)
        std::printf("%-40s %-15s %14s %14s %8s\n", "case", "phase", "measured", "estimated", "error");
    else if (timeline)
        std::printf("%-46s %14s %14s %8s  %s\n", "case", "step start", "estimated", "error",
                    "largest forward / optimizer moment against the measured phase peak (shown, not scored)");
    else
        std::printf("%-46s %14s %14s %8s  %s\n", "case", "measured", "estimated", "error", "peak (estimated)");
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) continue;
        const nlohmann::json record = nlohmann::json::parse(line);
        if (record.contains("not_expressible")) {  // measured, but outside what a configuration can say
            std::printf("%-46s skipped: %s\n", record["name"].get<std::string>().c_str(),
                        record["not_expressible"].get<std::string>().c_str());
            continue;
        }
        nlohmann::json config = record["config"];
        // Measured on PyTorch's CPU kernels: estimate those, not CUDA's.
        const std::string device = record["device"].get<std::string>();
        config["device"] = device == "cpu" ? "cpu" : "cuda";
        if (record["torch"].get<std::string>().rfind("1.13", 0) == 0) config["torch"] = "1.13";
        if (first) config["longest_batch_first"] = true;
        const vramcalc::ParsedConfig parsed = vramcalc::parse_config(config);
        const std::string name = record["name"].get<std::string>();
        if (!parsed.ok()) {
            std::printf("%-46s invalid configuration: %s: %s\n", name.c_str(), parsed.errors[0].field.c_str(),
                        parsed.errors[0].message.c_str());
            ++failed;
            continue;
        }
        const vramcalc::Step step(parsed.config);
        const vramcalc::MemoryEstimate m = vramcalc::estimate_memory(step);
        if (phases) {
            if (record["measured"].contains("phase_peak_bytes")) failed += check_phases(name, m, record["measured"], errors);
            continue;
        }
        if (timeline) {
            if (parsed.config.grad_accum == 1 && record["measured"].contains("step_start_bytes"))
                failed += check_timeline(name, step, m, record["measured"], errors);
            continue;
        }
        const char* metric = first ? "first_micro_batch_peak_bytes" : "peak_allocated_bytes";
        if (!record["measured"].contains(metric)) {
            std::printf("%-46s no %s measured\n", name.c_str(), metric);
            ++failed;
            continue;
        }
        const double measured = record["measured"][metric].get<double>();
        const double error = (m.peak_allocated - measured) / measured;
        errors.push_back(std::fabs(error));
        const bool ok = std::fabs(error) <= kTolerance;
        failed += !ok;
        std::printf("%-46s %14.0f %14.0f %+7.2f%%  %s%s\n", name.c_str(), measured, m.peak_allocated, 100 * error,
                    m.phases[m.peak_phase].name.c_str(), ok ? "" : "  <-- over 3%");
    }
    if (errors.empty()) {
        std::fprintf(stderr, "no measured cases in %s\n", path);
        return 1;
    }
    std::sort(errors.begin(), errors.end());
    const double median = errors.size() % 2 ? errors[errors.size() / 2]
                                            : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
    std::printf("%zu %s: median |error| %.2f%%, max |error| %.2f%%\n", errors.size(), phases ? "phases" : "cases",
                100 * median, 100 * errors.back());
    std::printf("%d failed\n", failed);
    return failed ? 1 : 0;
}
