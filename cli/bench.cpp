// Estimates per second on one core: the breakdown alone, the full report, and JSON text to JSON text.
#include <cstdio>

#include "advice/planner.hpp"
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

    // The planner's goals (issue 21): a plan for a 70B run on 64 GPUs in 200 ms, sizing over the catalog in 1 s
    // (native here; WASM in the page runs 2-3x slower).
    Config big = parse_config(std::string(R"({"model":"llama-2-70b","gpu":"h100-80gb","gpus":64,"strategy":"fsdp",)"
                                          R"("seq_len":4096,"micro_batch":2,"grad_accum":4,"plan":true})")).config;
    const double with_group = fastest_call_seconds(3, [&] { sink = sink + double(make_plans(big).keeping_training.size()); });
    big.plan.keep_method = true;
    const double plans_only = fastest_call_seconds(3, [&] { sink = sink + double(make_plans(big).keeping_training.size()); });
    const Config run = parse_config(std::string(R"({"model":"llama-2-13b","gpu":"a100-80gb","seq_len":4096,"micro_batch":2,)"
                                                R"("grad_accum":8,"train_tokens":1e9})")).config;
    const double sizing = fastest_call_seconds(2, [&] { sink = sink + double(size_run(run).options.size()); });
    std::printf("planner, fastest of 3 runs:\n");
    std::printf("  70B full fine-tuning, 64 H100: plans  %8.1f ms (goal 200), with the labelled group %.1f ms\n",
                plans_only * 1e3, with_group * 1e3);
    std::printf("  sizing, 13B over the catalog (18 GPUs x 1-64)  %8.1f ms (goal 1000)\n", sizing * 1e3);
    return 0;
}

}  // namespace vramcalc::cli
