// Untrusted JSON text in, and short safe descriptions of its values out; shared by every entry point.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace vramcalc {

constexpr std::size_t kMaxJsonTextBytes = 1 << 20;
constexpr int kMaxJsonDepth = 32;

// Parses text no larger than 1 MiB, without NUL bytes, nested at most 32 deep. On failure returns a
// discarded value and sets `problem`. Never throws, never recurses on the input's depth.
nlohmann::json parse_json_text(const std::string& text, std::string& problem);

// A value as an error message may quote it: scalars printed (invalid UTF-8 replaced), containers named,
// at most `limit` characters.
std::string describe_json(const nlohmann::json& value, std::size_t limit = 60);

}  // namespace vramcalc
