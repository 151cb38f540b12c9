// Embind bindings of the details' module (vramcalc-details.js): the estimate's evidence and timeline, the exports, the
// AdamW step and the full report (the answer with its evidence), fetched when the evidence, the export or the AdamW
// card comes near the view, so that their code never weighs on the first estimate. Type translation only.
#include <emscripten/bind.h>

#include <string>

#include "js_text.hpp"
#include "json/api.hpp"

namespace {

emscripten::val estimate(const std::string& config_json) { return js_text(vramcalc::estimate_json(config_json).json); }
emscripten::val evidence(const std::string& config_json) { return js_text(vramcalc::evidence_json(config_json).json); }
emscripten::val timeline(const std::string& config_json) { return js_text(vramcalc::timeline_json(config_json).json); }
emscripten::val deepspeed_config(const std::string& config_json) {
    return js_text(vramcalc::deepspeed_json(config_json).json);
}
emscripten::val exports(const std::string& config_json) { return js_text(vramcalc::exports_json(config_json).json); }
emscripten::val adamw_step(const std::string& request_json) { return js_text(vramcalc::adamw_json(request_json).json); }

}  // namespace

EMSCRIPTEN_BINDINGS(vramcalc_details) {
    emscripten::function("estimate", &estimate);
    emscripten::function("evidence", &evidence);
    emscripten::function("timeline", &timeline);
    emscripten::function("deepspeedConfig", &deepspeed_config);
    emscripten::function("exports", &exports);
    emscripten::function("adamwStep", &adamw_step);
}
