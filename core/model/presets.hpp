// The one table of model presets.
#pragma once
#include <string>
#include <vector>

#include "model/architecture.hpp"

namespace vramcalc {

struct ModelPreset {
    std::string name;        // as published
    std::string source;      // the config.json it mirrors
    Architecture arch;       // arch.id is the preset id
};

const std::vector<ModelPreset>& model_presets();
const ModelPreset* find_model_preset(const std::string& id);

}  // namespace vramcalc
