// Embind bindings of the page's module: the core's text-in/text-out API, unchanged. Nothing but type translation
// lives here. Every call returns the core's JSON text; a bad request returns {"errors":[{"field","message"}]} and the
// module keeps working (the core never throws or aborts). The evidence, the exports and the AdamW step are in the
// details' module (details_bindings.cpp), the planner in its own (plan_bindings.cpp): each fetched when the page needs it.
#include <emscripten/bind.h>

#include <string>

#include "js_text.hpp"
#include "json/api.hpp"
#include "json/benchmark.hpp"
#include "setup/config_json.hpp"

namespace {

// The report without its evidence (the details' module's `evidence` and `estimate` have it).
emscripten::val answer(const std::string& config_json) { return js_text(vramcalc::answer_json(config_json).json); }
// The same with "suggestions": null: the page's first paint, its suggestions estimated in the task after it.
emscripten::val answer_without_suggestions(const std::string& config_json) {
    return js_text(vramcalc::answer_json(config_json, vramcalc::Advice::later).json);
}
emscripten::val sweep(const std::string& request_json) { return js_text(vramcalc::sweep_json(request_json).json); }
emscripten::val models() { return js_text(vramcalc::models_json()); }
emscripten::val search_models(const std::string& query, int limit) {
    return js_text(vramcalc::search_models_json(query, limit).json);
}
emscripten::val presets() { return js_text(vramcalc::presets_json()); }
emscripten::val schema() { return js_text(vramcalc::schema_text()); }
emscripten::val describe(const std::string& config_json) { return js_text(vramcalc::describe_json(config_json).json); }

// Estimates per second of the breakdown alone (no JSON), for the benchmark; -1 for a bad configuration.
double bench_estimates(const std::string& config_json, double seconds) {
    const vramcalc::ParsedConfig p = vramcalc::parse_config(config_json);
    return p.ok() ? vramcalc::breakdowns_per_second(p.config, seconds) : -1;
}

}  // namespace

EMSCRIPTEN_BINDINGS(vramcalc) {
    emscripten::function("answer", &answer);
    emscripten::function("answerWithoutSuggestions", &answer_without_suggestions);
    emscripten::function("sweep", &sweep);
    emscripten::function("models", &models);
    emscripten::function("searchModels", &search_models);
    emscripten::function("presets", &presets);
    emscripten::function("schema", &schema);
    emscripten::function("describe", &describe);
    emscripten::function("benchEstimates", &bench_estimates);
}
