// Embind bindings: the core's text-in/text-out API, unchanged. Nothing but type translation lives here.
// Every call returns the core's JSON text; a bad request returns {"errors":[{"field","message"}]} and the module
// keeps working (the core never throws or aborts).
#include <emscripten/bind.h>
#include <emscripten/emscripten.h>

#include <string>

#include "api.hpp"
#include "config_json.hpp"
#include "estimate.hpp"

namespace {

std::string estimate(const std::string& config_json) { return vramcalc::estimate_json(config_json).json; }
std::string sweep(const std::string& request_json) { return vramcalc::sweep_json(request_json).json; }
std::string deepspeed_config(const std::string& config_json) { return vramcalc::deepspeed_json(config_json).json; }
std::string adamw_step(const std::string& request_json) { return vramcalc::adamw_json(request_json).json; }
std::string presets() { return vramcalc::presets_json(); }

// Estimates per second of the breakdown alone (no JSON), for the benchmark: the config is parsed once, then
// vramcalc::estimate_memory runs in a loop over micro-batches 1..8 for about `seconds`.
double bench_estimates(const std::string& config_json, double seconds) {
    vramcalc::ParsedConfig p = vramcalc::parse_config(config_json);
    if (!p.ok()) return -1;
    vramcalc::Config config = p.config;
    volatile double sink = 0;
    const double start = emscripten_get_now();
    double elapsed = 0;
    unsigned long long n = 0;
    do {
        for (int i = 0; i < 256; ++i) {
            config.micro_batch = 1 + (i & 7);
            sink = sink + vramcalc::estimate_memory(config).total;
        }
        n += 256;
        elapsed = (emscripten_get_now() - start) / 1000.0;
    } while (elapsed < seconds);
    return double(n) / elapsed;
}

}  // namespace

EMSCRIPTEN_BINDINGS(vramcalc) {
    emscripten::function("estimate", &estimate);
    emscripten::function("sweep", &sweep);
    emscripten::function("deepspeedConfig", &deepspeed_config);
    emscripten::function("adamwStep", &adamw_step);
    emscripten::function("presets", &presets);
    emscripten::function("benchEstimates", &bench_estimates);
}
