// The estimate's JSON shape (the CLI's and the WASM module's output).
#pragma once
#include <nlohmann/json.hpp>

#include "advice/report.hpp"

namespace vramcalc {

nlohmann::json terms_to_json(const Terms&);
// with_evidence: the committed measurements behind it too (evidence.cpp: the first of a kind parses its cases).
nlohmann::json report_to_json(const Report&, bool with_evidence = true);

}  // namespace vramcalc
