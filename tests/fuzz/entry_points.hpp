// The fuzz corpus's entry points, picked by a request's first byte (shared by the fuzz harness and the unit test
// that replays the corpus): 'S' sweep_json, 'D' deepspeed_json, 'A' adamw_json, 'M' search_models_json (limit 10),
// 'P' plan_json, each with the rest of the input; anything else is a configuration for estimate_json, whole.
#pragma once
#include <string>

#include "json/api.hpp"

namespace vramcalc::fuzz {

inline char entry_mode(const std::string& data) {
    const char m = data.empty() ? '{' : data[0];
    return m == 'S' || m == 'D' || m == 'A' || m == 'M' || m == 'P' ? m : '{';
}

inline std::string entry_input(const std::string& data) { return entry_mode(data) == '{' ? data : data.substr(1); }

inline ApiResult call_entry(const std::string& data) {
    const std::string input = entry_input(data);
    switch (entry_mode(data)) {
        case 'S': return sweep_json(input);
        case 'D': return deepspeed_json(input);
        case 'A': return adamw_json(input);
        case 'M': return search_models_json(input, 10);
        case 'P': return plan_json(input);
        default: return estimate_json(input);
    }
}

}  // namespace vramcalc::fuzz
