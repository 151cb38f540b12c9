// The estimate's JSON shape (the CLI's and the WASM module's output).
#pragma once
#include <nlohmann/json.hpp>

#include "advice/report.hpp"

namespace vramcalc {

nlohmann::json terms_to_json(const Terms&);
// with_evidence: the committed measurements behind it too (evidence.cpp: the first of a kind parses its cases).
nlohmann::json report_to_json(const Report&, bool with_evidence = true);
// A plan: {"changes": [{"change", "config", "changes_training"}], "config", "fits", "total_bytes", "step_time_s", ...}.
nlohmann::json plan_to_json(const Plan&);
// {"options": [{"gpu", "gpu_name", "gpus", "fits", "plan", "hours", "gpu_hours", "cost", "pareto"}]}.
nlohmann::json sizing_to_json(const Sizing&);

}  // namespace vramcalc
