// Make it fit: the fastest combinations of the known changes (advice/changes.hpp) that fit, within the constraints
// the configuration's `plan` pins; and which GPUs, how many, to rent for a run.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "input/field_error.hpp"
#include "memory/estimate.hpp"
#include "time/step_time.hpp"

namespace vramcalc {

struct PlanChange {
    std::string change;    // for people
    nlohmann::json patch;  // the configuration keys it sets
    bool changes_training = false;
};

struct Plan {
    std::vector<PlanChange> changes;  // empty: the configuration as given is already the fastest
    Config config;                    // the planned configuration, read again by parse_config (its `plan` off)
    MemoryEstimate memory;
    StepTime time;
    RunCost run;
    bool changes_training = false;    // one of its changes changes what is trained
};

struct Plans {
    std::vector<Plan> keeping_training;   // fastest first (cheapest first where the GPU count may change and a price is given)
    std::vector<Plan> changing_training;  // the best plan after each change of what is trained, fastest first
};

// The best plans that fit under c.plan's constraints, each on its own strategy layout, at most `count` of each kind.
Plans make_plans(const Config&, std::size_t count = 5);

struct SizingOption {
    const Gpu* gpu = nullptr;
    std::uint64_t gpus = 0;
    bool fits = false;
    Plan plan;            // the fastest plan that fits on it (when it fits)
    bool pareto = false;  // no cheaper option is as fast (cost, or GPU-hours without prices; priced GPUs only)
};

struct Sizing {
    std::vector<SizingOption> options;  // those that fit, cheapest first (GPU-hours without prices), then the rest
    std::vector<FieldError> errors;
};

// Every catalog GPU at 1, 2, 4, 8 GPUs and nodes of 8 (16, 32, ...) up to c.plan.max_gpus, each with its fastest
// plan; the run's tokens (train_tokens, or epochs x dataset_tokens) are required.
Sizing size_run(const Config&);

}  // namespace vramcalc
