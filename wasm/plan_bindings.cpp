// Embind bindings of the planner's module (vramcalc-plan.js): the plans that fit and which GPUs to rent, fetched by
// the page only when asked ("Make it fit"), so that the first estimate never waits for it. Type translation only.
#include <emscripten/bind.h>

#include <string>

#include "js_text.hpp"
#include "json/api.hpp"

namespace {

emscripten::val plan(const std::string& config_json) { return js_text(vramcalc::plan_json(config_json).json); }
emscripten::val sizing(const std::string& config_json) { return js_text(vramcalc::sizing_json(config_json).json); }

}  // namespace

EMSCRIPTEN_BINDINGS(vramcalc_plan) {
    emscripten::function("plan", &plan);
    emscripten::function("sizing", &sizing);
}
