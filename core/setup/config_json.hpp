// The JSON configuration format (the public contract of the CLI, the WASM API and share links).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "input/field_error.hpp"
#include "setup/config.hpp"

namespace vramcalc {

struct ParsedConfig {
    Config config;
    std::vector<FieldError> errors;  // empty when the configuration is valid
    bool ok() const { return errors.empty(); }
};

// Parses and validates; never throws, never aborts, whatever the text.
ParsedConfig parse_config(const std::string& json_text);
ParsedConfig parse_config(const nlohmann::json& value);

// Every key with its value, defaults filled in: parse_config(config_to_json(c)) gives c back.
nlohmann::json config_to_json(const Config&);
nlohmann::json errors_to_json(const std::vector<FieldError>&);
// Every key's default given the others' values: what it would hold were it not given (dotted names; the page's
// followers and share links read it).
nlohmann::json key_defaults(const Config&);

}  // namespace vramcalc
