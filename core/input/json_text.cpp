#include "input/json_text.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {
// Deepest nesting of [ and { outside strings.
int nesting_depth(const std::string& text) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char ch : text) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (ch == '\\') escaped = true;
            else if (ch == '"') in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (ch == ']' || ch == '}') {
            --depth;
        }
    }
    return deepest;
}
}  // namespace

json parse_json_text(const std::string& text, std::string& problem) {
    if (text.size() > kMaxJsonTextBytes) problem = "the input is larger than 1 MiB";
    else if (text.find('\0') != std::string::npos) problem = "the input contains a NUL byte";
    else if (nesting_depth(text) > kMaxJsonDepth) problem = "the input is nested more than 32 levels deep";
    if (!problem.empty()) return json(json::value_t::discarded);
    json value = json::parse(text, nullptr, false);
    if (value.is_discarded()) problem = "malformed JSON";
    return value;
}

std::string describe_json(const json& value, std::size_t limit) {
    if (value.is_array()) return "an array";
    if (value.is_object()) return "an object";
    std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
    return s.size() > limit ? s.substr(0, limit - 3) + "..." : s;
}

}  // namespace vramcalc
