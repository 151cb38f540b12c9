// The semantic check of the exports: each exported text read back, as the library that consumes it reads it, into
// the configuration keys it fixes. Keys are config_to_json's, flattened with dots ("finetune.rank"); a value is what
// the file runs, or {"one_of": [...]} where the file leaves a choice to something it does not hold (accelerate's
// mixed_precision "bf16" runs "bf16-mixed" or "bf16-base-mixed" by how train.py loads the weights).
// "finetune.targets" is the sorted list of the model's modules that get an adapter, "all-linear" resolved as the
// consumer resolves it. tests/unit/test_export_readback.cpp checks them against the estimate's configuration.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exports/exports.hpp"
#include "model/architecture.hpp"

namespace vramcalc {

struct Readback {
    nlohmann::json keys = nlohmann::json::object();
    std::vector<std::string> errors;  // what the consumer would refuse, or the reader could not read
};

// `all`: the exports written beside it (a TrainingArguments or accelerate file names ds_config.json); `model`: the
// model the consumer loads (its module names resolve the LoRA targets).
Readback read_back(const Export&, const std::vector<Export>& all, const Architecture& model);

}  // namespace vramcalc
