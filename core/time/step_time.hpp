// How long one optimizer step takes on the busiest GPU, one small function per term (step_time.cpp), and what the
// run costs. Compute is FLOPs over the GPU's dense peak at an achieved fraction calibrated on published runs
// (tests/validation/throughput); communication is ring-collective volume over the link it crosses, minus what
// the stack overlaps with compute.
#pragma once
#include "memory/step.hpp"
#include "setup/config.hpp"

namespace vramcalc {

struct StepTime {
    // Seconds of one optimizer step (all micro-batches) by phase, exposed communication included.
    double forward = 0, loss = 0, backward = 0, optimizer_step = 0;
    double compute = 0;                // forward + loss + backward before communication and the bubble:
    double matmul = 0, attention = 0, memory = 0;  // its matmuls, flash attention and element-wise traffic
    double data_parallel = 0, tensor_parallel = 0;  // the collectives' own seconds, before overlap
    double exposed_communication = 0;  // part of forward + backward: what overlapping does not hide
    double pipeline_bubble = 0;        // part of forward + backward
    double offload = 0;                // part of optimizer_step: PCIe transfers of ZeRO-Offload
    double step = 0;
    double tokens_per_s = 0, tokens_per_s_per_gpu = 0;
    double model_flops_per_token = 0;  // 6N plus attention (PaLM's convention), or LoRA's share of it
    double executed_flops_per_token = 0;  // what the GPUs run: causal flash halves the scores, recomputation adds
    double mfu = 0;                    // model FLOPs per second over the GPUs' dense peak
    bool known = false;                // false: see unknown_reason
    const char* unknown_reason = "";   // why the step is not timed, in words
    // A lower bound: the CPU's optimizer step under offload, and activation offloading's copies, are not timed.
    bool lower_bound = false;
};

// Across nodes, where neither the user nor the GPU's reference system says: a 100 Gb/s NIC per GPU (GB/s).
constexpr double kAssumedNetworkGbps = 12.5;

StepTime estimate_step_time(const Step&);

// The run the user describes (train_tokens, or epochs x dataset_tokens) at price_per_gpu_hour.
struct RunCost {
    double hours = 0, gpu_hours = 0, cost = 0;
    bool has_tokens = false, has_price = false;
};
RunCost estimate_run_cost(const Config&, const StepTime&);

}  // namespace vramcalc
