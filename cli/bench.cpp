// Estimates per second on one core: the breakdown alone, the full report, and JSON text to JSON text.
#include <cstdio>

#include "advice/report.hpp"
#include "cli.hpp"
#include "json/api.hpp"
#include "json/benchmark.hpp"
#include "setup/config_json.hpp"

namespace vramcalc::cli {

int bench(double seconds) {
    const std::string text =
        R"({"model":"llama-2-7b","gpu":"a100-80gb","precision":"bf16-mixed","strategy":"deepspeed","zero":2,)"
        R"("gpus":8,"seq_len":4096,"micro_batch":2,"checkpointing":"full"})";
    Config config = parse_config(text).config;
    volatile double sink = 0;
    const double breakdown = breakdowns_per_second(config, seconds);
    const double report = calls_per_second(seconds, [&](int i) {
        config.micro_batch = 1 + std::uint64_t(i & 7);
        sink = sink + make_report(config).memory.total;
    });
    const double parse = calls_per_second(seconds, [&](int) { sink = sink + double(parse_config(text).config.seq_len); });
    const double json = calls_per_second(seconds, [&](int) { sink = sink + double(estimate_json(text).json.size()); });
    std::printf("7B config (llama-2-7b, ZeRO-2, 8 GPUs), one core, %.1f s per figure:\n", seconds);
    std::printf("  breakdown, no JSON          %12.0f estimates/s\n", breakdown);
    std::printf("  full report, no JSON        %12.0f estimates/s (with max micro-batch and suggestions)\n", report);
    std::printf("  parse JSON + breakdown      %12.0f estimates/s\n", 1.0 / (1.0 / parse + 1.0 / breakdown));
    std::printf("  JSON text to report text    %12.0f estimates/s\n", json);
    return 0;
}

}  // namespace vramcalc::cli
