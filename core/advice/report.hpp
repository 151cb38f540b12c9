// The whole answer for a configuration: its memory, the largest micro-batch that fits, what to change when it
// does not, the step time and cost, and warnings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advice/planner.hpp"
#include "memory/estimate.hpp"
#include "time/step_time.hpp"

namespace vramcalc {

struct Suggestion {
    std::string change;     // short, for people
    nlohmann::json patch;   // the configuration keys to set
    double total = 0;       // total_bytes after the change
    bool fits = false;
    std::string why;
    double step_time = 0;   // seconds of one optimizer step after the change (0: unknown)
    bool time_is_bound = false;  // step_time is a lower bound (offload)
    std::uint64_t gpus = 1;
};

struct Report {
    Config config;
    MemoryEstimate memory;
    std::uint64_t max_micro_batch = 0;  // 0 when not even 1 fits
    bool sequence_too_long = false;     // not even 1 fits, and one sequence of 1 token would: the sequence is the cause
    bool suggested = true;                // false: the suggestions were not asked for (Advice::later)
    std::vector<Suggestion> suggestions;  // those that fit first, fastest first, then on fewer GPUs
    std::vector<std::string> warnings;
    StepTime time;
    RunCost run;
    Plans plans;  // with "plan": true and a PlanMaker
};

// What computes the plans (make_plans, advice/planner.hpp): passed in, so that what estimates without plans (the
// page's WebAssembly module) does not carry the planner.
using PlanMaker = Plans (*)(const Config&, std::size_t count);

// Whether the report estimates its suggestions now (each one a configuration estimated again) or leaves them to a
// later call: the page paints its first answer without them.
enum class Advice { now, later };

// Everything: breakdown, largest micro-batch, what to change, warnings; the plans when the configuration asks and
// a planner is given.
Report make_report(const Config&, PlanMaker plans = nullptr, Advice advice = Advice::now);

}  // namespace vramcalc
