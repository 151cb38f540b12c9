// Text in, text out: the one entry point the CLI and the WASM bindings share.
// Every call returns {ok, json}; on failure json is {"errors":[{"field","message"}...]}.
// No call throws or aborts, whatever the input.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "advice/report.hpp"
#include "input/field_error.hpp"

namespace vramcalc {

struct ApiResult {
    bool ok = false;
    std::string json;
};
// Every entry point's output: compact JSON text (invalid UTF-8 replaced); a failure's {"errors": [...]}.
std::string dump(const nlohmann::json&);
ApiResult failure(const std::vector<FieldError>&);

// The report with its evidence; with "plan" on, its plans from `plans` (make_plans), an error naming "plan" without one.
ApiResult estimate_json(const std::string& config_json, PlanMaker plans = nullptr);
// The report without its evidence nor plans: what the page paints first (its module links no evidence code); with
// Advice::later its "suggestions" are null, for a second call to fill in.
ApiResult answer_json(const std::string& config_json, Advice advice = Advice::now);
// In json/plan_api.cpp, with the planner: the report with its plans, as with "plan": true whatever the configuration
// says of `plan`; and which GPUs to rent, {"options": [...]} over the catalog (size_run).
ApiResult plan_json(const std::string& config_json);
ApiResult sizing_json(const std::string& config_json);
// {"timeline": {...}}: the step's moments in order with their live bytes by category (report_json.hpp).
ApiResult timeline_json(const std::string& config_json);
// The evidence of an estimate alone ({"evidence": {...}}), for a page that paints the estimate first.
ApiResult evidence_json(const std::string& config_json);
// {"config":{...},"micro_batch":[1,2,...],"seq_len":[512,...]} → peak and total bytes over the grid.
ApiResult sweep_json(const std::string& request_json);
// A DeepSpeed config for the run (strategy "deepspeed" only; anything else is an error).
ApiResult deepspeed_json(const std::string& config_json);
// {"exports":[{"id","title","filename","language","text"}, ...]}: every export that applies to the run (exports.hpp);
// ids: deepspeed, accelerate, training-arguments, torchrun, litgpt, torchtune, megatron.
ApiResult exports_json(const std::string& config_json);
std::string presets_json();
// What a page lists at start, cheaply: the presets (with their shapes), the catalog's ids and model types, the GPUs.
std::string models_json();
// {"results":[{"id","name","parameters","match"}...]}: the presets and catalog models `query` finds, best first
// (model/model_search.hpp); `limit` from 1 to 100.
ApiResult search_models_json(const std::string& query, int limit);
// The configuration's keys (core/setup/schema.cpp): {"groups", "keys", "architecture"}; as Markdown tables for the README.
std::string schema_text();
std::string schema_markdown_text();
// What the page needs beside the estimate: every key's default given the others ({"defaults": {name: value}}), the
// model's LoRA targets ({"modules"}), and the configuration's problems ({"errors"}, empty when valid); even for an
// invalid configuration, from the keys that did read.
ApiResult describe_json(const std::string& config_json);
// One or more steps of the scalar AdamW reference (core/reference/adamw.hpp); see adamw_json.cpp for the format.
ApiResult adamw_json(const std::string& request_json);

}  // namespace vramcalc
