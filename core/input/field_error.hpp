// One problem with the input, named by its key.
#pragma once
#include <string>

namespace vramcalc {

struct FieldError {
    std::string field;    // the key, dotted for nested ones ("finetune.rank")
    std::string message;  // what is wrong and what is allowed
};

}  // namespace vramcalc
