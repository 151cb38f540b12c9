// Literals as the exports write them (exports.cpp, trl_exports.cpp).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/architecture.hpp"

namespace vramcalc {

inline std::string num(double v) { return nlohmann::json(v).dump(); }              // 1e-05, 0.05, 1.0
inline std::string str(const std::string& s) { return nlohmann::json(s).dump(); }  // a JSON, Python or OmegaConf string literal
inline const char* py(bool b) { return b ? "True" : "False"; }
inline const char* lower(bool b) { return b ? "true" : "false"; }
inline std::string n(std::uint64_t v) { return std::to_string(v); }
// The Hugging Face id of a model (presets: the config.json they mirror), "" for an explicit architecture.
std::string model_id(const Architecture&);

}  // namespace vramcalc
