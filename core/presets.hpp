// The one table of model presets, the one GPU catalog, and the worked scenarios.
#pragma once
#include <string>
#include <vector>

#include "architecture.hpp"
#include "config.hpp"

namespace vramcalc {

struct ModelPreset {
    std::string name;        // as published
    std::string source;      // the config.json it mirrors
    Architecture arch;       // arch.id is the preset id
};

struct Scenario {
    std::string id;
    std::string description;
    std::string config_json;  // a vramcalc configuration
};

const std::vector<ModelPreset>& model_presets();
const std::vector<Gpu>& gpu_catalog();
const std::vector<Scenario>& scenarios();

const ModelPreset* find_model_preset(const std::string& id);
const Gpu* find_gpu(const std::string& id);
// FP8 tensor cores (torch._scaled_mm): compute capability 8.9 or newer (Ada, Hopper, Blackwell), or AMD's MI300.
bool supports_fp8(const Gpu&);

}  // namespace vramcalc
