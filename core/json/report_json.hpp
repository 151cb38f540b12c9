// The estimate's JSON shape (the CLI's and the WASM module's output).
#pragma once
#include <nlohmann/json.hpp>

#include "advice/report.hpp"

namespace vramcalc {

nlohmann::json terms_to_json(const Terms&);
nlohmann::json report_to_json(const Report&);

}  // namespace vramcalc
