// The TRL trainer's config class for a TRL method (training_methods.hpp), as the training-arguments export writes it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "setup/config.hpp"

namespace vramcalc {

struct TrlConfigExport {
    std::string module, name;       // from <module> import <name>
    std::vector<std::string> args;  // the method's keyword arguments, after TrainingArguments' own
};

std::optional<TrlConfigExport> trl_config_export(const Config&);  // nothing for supervised training

}  // namespace vramcalc
