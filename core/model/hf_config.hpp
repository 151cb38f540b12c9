// Hugging Face config.json -> Architecture: one reader for every supported model_type (hf_config.cpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/architecture.hpp"

namespace vramcalc {

struct FieldError;

// Reads a config.json object (a nested "text_config" is used when present). Problems go to `errors` under
// `prefix`; assumptions made (an unknown model_type read as a generic decoder, weights stored quantized)
// go to `notes`.
void read_hf_config(const nlohmann::json& hf, Architecture& a, const std::string& prefix,
                    std::vector<FieldError>& errors, std::vector<std::string>& notes);

// The supported model_type values, for messages and the explicit form's "family" key.
const std::vector<std::string>& hf_model_types();

}  // namespace vramcalc
