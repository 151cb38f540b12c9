#pragma once
#include <string>

namespace vramcalc::cli {
std::string format_table(const std::string& report_json);  // a readable breakdown for people
int bench(double seconds);
}  // namespace vramcalc::cli
