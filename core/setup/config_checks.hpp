// Checks between a configuration's fields, once each field is valid on its own (parse_config calls it).
#pragma once
#include <vector>

#include "input/field_error.hpp"
#include "setup/config.hpp"

namespace vramcalc {

void check_consistency(const Config&, std::vector<FieldError>& errors);

}  // namespace vramcalc
