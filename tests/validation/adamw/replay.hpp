// Replays the torch trajectories recorded by make_trajectories.py through core/reference/adamw.hpp and measures the
// distance, per case, in ulps (NaN matches NaN; +0 and -0 are 0 ulp apart but counted as a bit difference).
// Shared by tests/unit/test_adamw.cpp and tests/cuda/adamw_replay.cpp. Host only; needs nlohmann::json.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/adamw.hpp"

namespace vramcalc {
namespace adamw_replay {

inline float hex_float(const std::string& h) {
    return adamw::bits_float(static_cast<std::uint32_t>(std::strtoul(h.c_str(), nullptr, 16)));
}
inline std::uint16_t hex_u16(const std::string& h) {
    return static_cast<std::uint16_t>(std::strtoul(h.c_str(), nullptr, 16));
}
inline std::vector<float> hex_floats(const nlohmann::json& a) {
    std::vector<float> v;
    for (const auto& h : a) v.push_back(hex_float(h.get<std::string>()));
    return v;
}

// Distance in units in the last place; NaN vs NaN is 0, NaN vs a number is "infinite" (UINT32_MAX).
inline std::uint32_t ulp_distance(float a, float b) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na && nb ? 0u : 0xFFFFFFFFu;
    auto ordered = [](float f) -> std::int64_t {
        const std::uint32_t u = adamw::float_bits(f);
        return (u & 0x80000000u) ? -static_cast<std::int64_t>(u & 0x7FFFFFFFu) : static_cast<std::int64_t>(u);
    };
    const std::int64_t d = ordered(a) - ordered(b);
    return static_cast<std::uint32_t>(d < 0 ? -d : d);
}
inline bool same_bits(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || adamw::float_bits(a) == adamw::float_bits(b);
}

struct CaseResult {
    std::string name, variant, source;
    std::uint32_t max_ulp = 0;   // over every element of every array at every step
    long bit_differences = 0;    // elements not bit-identical (NaN payloads excepted)
    long compared = 0;
    std::vector<std::string> mismatches;  // the first few, readable
};

struct Overrides {
    int addcmul_fma = -1;       // -1: the variant's default
    int bc2_sqrt_via_pow = -1;  // -1: math.sqrt
};

inline adamw::Options case_options(const nlohmann::json& c, const Overrides& ov = {}) {
    adamw::Options o;
    o.lr = c.at("lr").get<double>();
    o.beta1 = c.at("betas").at(0).get<double>();
    o.beta2 = c.at("betas").at(1).get<double>();
    o.eps = c.at("eps").get<double>();
    o.weight_decay = c.at("weight_decay").get<double>();
    o.amsgrad = c.at("amsgrad").get<bool>();
    o.maximize = c.at("maximize").get<bool>();
    o.variant = c.at("variant").get<std::string>() == "torch-2" ? adamw::Variant::torch_2 : adamw::Variant::torch_1_13;
    if (ov.addcmul_fma >= 0) o.addcmul_fma = ov.addcmul_fma != 0;
    if (ov.bc2_sqrt_via_pow >= 0) o.bc2_sqrt_via_pow = ov.bc2_sqrt_via_pow != 0;
    return o;
}

inline std::string show_float(float f) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(f), adamw::float_bits(f));
    return buf;
}

inline CaseResult replay_case(const nlohmann::json& c, const Overrides& ov = {}) {
    CaseResult r;
    r.name = c.at("name").get<std::string>();
    r.variant = c.at("variant").get<std::string>();
    r.source = c.value("source", "");
    const adamw::Options o = case_options(c, ov);
    std::vector<float> p = hex_floats(c.at("param0"));
    const std::size_t n = p.size();
    std::vector<float> m(n, 0.0f), v(n, 0.0f), vmax(n, 0.0f);
    const auto& grads = c.at("grads");
    const auto& traj = c.at("trajectory");
    for (std::size_t s = 0; s < grads.size(); ++s) {
        const std::vector<float> g = hex_floats(grads[s]);
        const adamw::StepScalars sc = adamw::step_scalars(o, static_cast<std::int64_t>(s + 1));
        for (std::size_t i = 0; i < n; ++i) adamw::step(p[i], m[i], v[i], vmax[i], g[i], sc);
        const std::pair<const char*, const std::vector<float>*> arrays[] = {
            {"param", &p}, {"exp_avg", &m}, {"exp_avg_sq", &v}, {"max_exp_avg_sq", &vmax}};
        for (const auto& [key, ours] : arrays) {
            if (!traj[s].contains(key)) continue;
            const std::vector<float> want = hex_floats(traj[s].at(key));
            for (std::size_t i = 0; i < n; ++i) {
                const float a = (*ours)[i], b = want[i];
                const std::uint32_t d = ulp_distance(a, b);
                ++r.compared;
                if (d > r.max_ulp) r.max_ulp = d;
                if (!same_bits(a, b)) {
                    ++r.bit_differences;
                    if (r.mismatches.size() < 5)
                        r.mismatches.push_back("case " + r.name + ", step " + std::to_string(s + 1) + ", " + key +
                                               "[" + std::to_string(i) + "]: reference " + show_float(a) +
                                               ", torch " + show_float(b) + " (" + std::to_string(d) + " ulp)");
                }
            }
        }
    }
    return r;
}

}  // namespace adamw_replay
}  // namespace vramcalc
