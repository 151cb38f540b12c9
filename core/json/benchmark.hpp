// How many estimates per second the core computes on one thread: the figure `vramcalc bench` and the
// WASM benchmark print. Never used by tests.
#pragma once
#include <functional>

#include "setup/config.hpp"

namespace vramcalc {

// Calls `work(i)` in batches of 256 for about `seconds`; returns calls per second.
double calls_per_second(double seconds, const std::function<void(int)>& work);
// The fastest of `calls` runs of `work`, in seconds (for work that takes milliseconds: the planner).
double fastest_call_seconds(int calls, const std::function<void()>& work);
// The breakdown alone (estimate_memory), micro_batch cycling through 1..8.
double breakdowns_per_second(Config config, double seconds);

}  // namespace vramcalc
