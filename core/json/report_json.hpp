// The estimate's JSON shape (the CLI's and the WASM module's output).
#pragma once
#include <nlohmann/json.hpp>

#include "advice/report.hpp"

namespace vramcalc {

nlohmann::json terms_to_json(const Terms&);
// The step's moments in order (step_timeline) with the estimate's peaks: what --timeline writes.
nlohmann::json timeline_to_json(const std::vector<Moment>&, const MemoryEstimate&);
// The report without its evidence (api.cpp adds it where asked: evidence.cpp parses its cases on first use).
nlohmann::json report_to_json(const Report&);
// A plan: {"changes": [{"change", "config", "changes_training"}], "config", "fits", "total_bytes", "step_time_s", ...}.
nlohmann::json plan_to_json(const Plan&);
// {"options": [{"gpu", "gpu_name", "gpus", "fits", "plan", "hours", "gpu_hours", "cost", "pareto"}]}.
nlohmann::json sizing_to_json(const Sizing&);

}  // namespace vramcalc
