// The planner's entry points, apart from json/api.cpp: what links only these carries the planner (the CLI, the
// page's planner module), what estimates alone does not (the page's first module).
#include "advice/planner.hpp"
#include "json/api.hpp"
#include <nlohmann/json.hpp>

#include "json/report_json.hpp"
#include "setup/config_json.hpp"

namespace vramcalc {

ApiResult plan_json(const std::string& config_json) {
    ParsedConfig p = parse_config(config_json);
    if (!p.ok()) return failure(p.errors);
    p.config.plan.on = true;
    return {true, dump(report_to_json(make_report(p.config, &make_plans)))};
}

ApiResult sizing_json(const std::string& config_json) {
    const ParsedConfig p = parse_config(config_json);
    if (!p.ok()) return failure(p.errors);
    const Sizing s = size_run(p.config);
    if (!s.errors.empty()) return failure(s.errors);
    return {true, dump(sizing_to_json(s))};
}

}  // namespace vramcalc
