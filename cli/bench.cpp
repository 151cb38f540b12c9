// Estimates per second on one core: the breakdown alone, the full report, and JSON text to JSON text.
#include <chrono>
#include <cstdio>

#include "api.hpp"
#include "cli.hpp"
#include "config_json.hpp"
#include "estimate.hpp"

namespace vramcalc::cli {

namespace {
template <class F>
double rate(double seconds, F&& f) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    std::uint64_t n = 0;
    double elapsed = 0;
    do {
        for (int i = 0; i < 256; ++i) f(i);
        n += 256;
        elapsed = std::chrono::duration<double>(clock::now() - start).count();
    } while (elapsed < seconds);
    return double(n) / elapsed;
}
}  // namespace

int bench(double seconds) {
    const std::string text =
        R"({"model":"llama-2-7b","gpu":"a100-80gb","precision":"bf16-mixed","strategy":"deepspeed","zero":2,)"
        R"("gpus":8,"seq_len":4096,"micro_batch":2,"checkpointing":"full"})";
    Config config = parse_config(text).config;
    volatile double sink = 0;
    const double breakdown = rate(seconds, [&](int i) {
        config.micro_batch = 1 + (i & 7);
        sink = sink + estimate_memory(config).total;
    });
    const double report = rate(seconds, [&](int i) {
        config.micro_batch = 1 + (i & 7);
        sink = sink + make_report(config).memory.total;
    });
    const double parse = rate(seconds, [&](int) { sink = sink + double(parse_config(text).config.seq_len); });
    const double json = rate(seconds, [&](int) { sink = sink + double(estimate_json(text).json.size()); });
    std::printf("7B config (llama-2-7b, ZeRO-2, 8 GPUs), one core, %.1f s per figure:\n", seconds);
    std::printf("  breakdown, no JSON          %12.0f estimates/s\n", breakdown);
    std::printf("  full report, no JSON        %12.0f estimates/s (with max micro-batch and suggestions)\n", report);
    std::printf("  parse JSON + breakdown      %12.0f estimates/s\n", 1.0 / (1.0 / parse + 1.0 / breakdown));
    std::printf("  JSON text to report text    %12.0f estimates/s\n", json);
    return 0;
}

}  // namespace vramcalc::cli
