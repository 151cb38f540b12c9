// Worked scenarios: configurations that show the product's answers (listed by `presets`).
#pragma once
#include <string>
#include <vector>

namespace vramcalc {

struct Scenario {
    std::string id;
    std::string description;
    std::string config_json;  // a vramcalc configuration
};

const std::vector<Scenario>& scenarios();

}  // namespace vramcalc
