// A model as the configuration gives it: a preset id, a catalog id (or its hub URL), {"hf_config": {...}}, or an
// explicit architecture whose keys are rows of their own (architecture_keys, read and written from the same rows).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "input/field_error.hpp"
#include "model/architecture.hpp"

namespace vramcalc {

enum class KeyType { integer, number, boolean, choice, text, list, model, object };

// One value of an enumeration, type-erased for the schema.
struct ChoiceView {
    const char* name;
    const char* label;
    int value;
};

struct ArchitectureKey {
    const char* name = "";
    KeyType type = KeyType::integer;
    double lo = 0, hi = 0;
    bool hi_open = false;
    std::vector<ChoiceView> choices;
    std::string default_rule;
    std::string value;  // JSON: the member's value in Architecture{} (the explicit form's starting shape)
    const char* doc = "";
    bool required = false;
    bool common = false;  // in the page's form for a custom architecture
    const char* follows = "";  // the key whose value gives its default: the same value, or `by` that value
    std::map<std::string, std::string> by;
};
// In reading order, the required keys first.
const std::vector<ArchitectureKey>& architecture_keys();

// `field` names the model in errors ("model", "teacher"); `notes` collects the assumptions made reading it.
// The activation a gated or plain MLP takes when the architecture names none.
Activation default_activation(Mlp);

// The id a model name reads as: a preset id, a catalog id in any case or as its hub URL, else the one catalog model
// the spelling names exactly (model_search.hpp); "" when none or several.
std::string resolve_model_name(const std::string& text);
void read_model(const nlohmann::json* v, Architecture& a, const std::string& field, std::vector<std::string>& notes,
                std::vector<FieldError>& errors);
nlohmann::json model_to_json(const Architecture&);
nlohmann::json architecture_to_json(const Architecture&);

}  // namespace vramcalc
