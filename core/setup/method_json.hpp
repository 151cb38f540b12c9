// The JSON keys of TRL's trainers (method, reference, prompt and completion lengths, generation, teacher): read
// and echoed for config_json.cpp.
#pragma once
#include <string>
#include <vector>

#include "input/json_reader.hpp"
#include "setup/config.hpp"

namespace vramcalc {

// A model given as a preset id, a catalog id, {"hf_config": {...}} or an architecture object (config_json.cpp);
// `field` names it in errors ("model", "teacher").
void read_model(const json* v, Architecture& a, const std::string& field, std::vector<std::string>& notes,
                std::vector<FieldError>& errors);
json model_to_json(const Architecture&);

void read_training_method(Reader& r, Config& c, std::vector<FieldError>& errors, bool seq_len_given);
void training_method_to_json(const Config& c, json& out);

}  // namespace vramcalc
