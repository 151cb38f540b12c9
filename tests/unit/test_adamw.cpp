// The scalar AdamW reference (core/reference/adamw.hpp) against real torch.optim.AdamW trajectories
// (tests/validation/adamw/trajectories.json, made by make_trajectories.py), its 16-bit conversions, and
// the JSON entry point adamw_json.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "../validation/adamw/replay.hpp"
#include "json/api.hpp"
#include "reference/adamw.hpp"

using nlohmann::json;
using namespace vramcalc;

namespace {

#define VRAMCALC_ADAMW_STR2(x) #x
#define VRAMCALC_ADAMW_STR(x) VRAMCALC_ADAMW_STR2(x)

// VRAMCALC_SOURCE_DIR may be defined quoted or not: stringize it and drop the quotes if it had them.
std::string source_dir() {
#ifdef VRAMCALC_SOURCE_DIR
    std::string s = VRAMCALC_ADAMW_STR(VRAMCALC_SOURCE_DIR);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
#else
    return ".";
#endif
}

const json& trajectories() {
    static const json doc = [] {
        const char* env = std::getenv("VRAMCALC_ADAMW_TRAJECTORIES");
        const std::string path =
            env && *env ? std::string(env) : source_dir() + "/tests/validation/adamw/trajectories.json";
        std::ifstream f(path);
        if (!f) FAIL("cannot open " << path);
        std::stringstream ss;
        ss << f.rdbuf();
        return json::parse(ss.str());
    }();
    return doc;
}

const json* find_case(const std::string& name) {
    for (const auto& c : trajectories().at("cases"))
        if (c.at("name") == name) return &c;
    return nullptr;
}

constexpr std::uint32_t kMaxUlp = 1;  // the requirement; measured: 0 everywhere

json api(const std::string& request, bool expect_ok) {
    const ApiResult r = adamw_json(request);
    INFO(request.substr(0, 300) << "\n -> " << r.json.substr(0, 600));
    REQUIRE(r.ok == expect_ok);
    const json j = json::parse(r.json, nullptr, false);
    REQUIRE(!j.is_discarded());
    return j;
}

float json_float(const json& v) {
    if (v.is_string()) {
        if (v == "NaN") return std::numeric_limits<float>::quiet_NaN();
        if (v == "Infinity") return std::numeric_limits<float>::infinity();
        if (v == "-Infinity") return -std::numeric_limits<float>::infinity();
        FAIL("unexpected string " << v);
    }
    return static_cast<float>(v.get<double>());
}

json float_to_json(float f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    return static_cast<double>(f);
}

bool has_error(const json& j, const std::string& field, const std::string& fragment = "") {
    for (const auto& e : j.at("errors"))
        if (e.at("field") == field && e.at("message").get<std::string>().find(fragment) != std::string::npos)
            return true;
    return false;
}

}  // namespace

TEST_CASE("adamw: the scalar reference replays torch.optim.AdamW within 1 ulp", "[adamw]") {
    const json& doc = trajectories();
    std::cout << "adamw: trajectories from torch " << doc.at("torch_version").get<std::string>() << "\n";
    std::uint32_t worst = 0;
    int cases = 0;
    for (const auto& c : doc.at("cases")) {
        const adamw_replay::CaseResult r = adamw_replay::replay_case(c);
        ++cases;
        worst = std::max(worst, r.max_ulp);
        std::cout << "  " << r.name << " [" << r.variant << ", " << r.source << "]: " << r.compared
                  << " values, max " << r.max_ulp << " ulp, " << r.bit_differences << " not bit-identical\n";
        INFO("case " << r.name << " (" << r.variant << ")");
        for (const auto& m : r.mismatches) UNSCOPED_INFO(m);
        CHECK(r.max_ulp <= kMaxUlp);
        CHECK(r.compared > 0);
    }
    std::cout << "adamw: " << cases << " cases, max " << worst << " ulp\n";
    CHECK(cases >= 20);
}

TEST_CASE("adamw: without the FMA torch's kernels use, the reference drifts from torch", "[adamw]") {
    // Guards the claim in adamw.hpp: addcmul_ is contracted in torch 1.13's CPU build.
    const json* c = find_case("default");
    REQUIRE(c);
    adamw_replay::Overrides ov;
    ov.addcmul_fma = 0;
    CHECK(adamw_replay::replay_case(*c, ov).bit_differences > 0);
}

TEST_CASE("adamw: bf16/fp16 rounding matches torch's .to(dtype)", "[adamw]") {
    const json& doc = trajectories();
    const auto& conv = doc.at("conversions");
    const auto& in = conv.at("input");
    REQUIRE(in.size() == conv.at("bf16").size());
    REQUIRE(in.size() == conv.at("fp16").size());
    int checked = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const float f = adamw_replay::hex_float(in[i].get<std::string>());
        const std::uint16_t bf = adamw_replay::hex_u16(conv.at("bf16")[i].get<std::string>());
        const std::uint16_t hf = adamw_replay::hex_u16(conv.at("fp16")[i].get<std::string>());
        INFO("input 0x" << in[i].get<std::string>());
        if (std::isnan(f)) {
            CHECK(std::isnan(adamw::bf16_to_float(adamw::to_bf16_bits(f))));
            CHECK(std::isnan(adamw::fp16_to_float(adamw::to_fp16_bits(f))));
        } else {
            CHECK(adamw::to_bf16_bits(f) == bf);
            CHECK(adamw::to_fp16_bits(f) == hf);
        }
        ++checked;
    }
    // The final parameter of every case, as torch converted it.
    for (const auto& c : doc.at("cases")) {
        const auto& last = c.at("trajectory").back().at("param");
        for (std::size_t i = 0; i < last.size(); ++i) {
            const float f = adamw_replay::hex_float(last[i].get<std::string>());
            if (std::isnan(f)) continue;
            INFO("case " << c.at("name").get<std::string>() << " element " << i);
            CHECK(adamw::to_bf16_bits(f) == adamw_replay::hex_u16(c.at("param_bf16")[i].get<std::string>()));
            CHECK(adamw::to_fp16_bits(f) == adamw_replay::hex_u16(c.at("param_fp16")[i].get<std::string>()));
            ++checked;
        }
    }
    CHECK(checked > 1000);
}

TEST_CASE("adamw: 16-bit conversions round-trip and agree with the compiler's _Float16", "[adamw]") {
    for (std::uint32_t h = 0; h < 0x10000u; ++h) {
        const auto b = static_cast<std::uint16_t>(h);
        const float fb = adamw::bf16_to_float(b);
        const float fh = adamw::fp16_to_float(b);
        if (!std::isnan(fb)) REQUIRE(adamw::to_bf16_bits(fb) == b);
        if (!std::isnan(fh)) REQUIRE(adamw::to_fp16_bits(fh) == b);
        else REQUIRE(std::isnan(adamw::fp16_to_float(adamw::to_fp16_bits(fh))));
    }
#if defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__aarch64__))
    // A stride through every float32 bit pattern (plus the neighbours of each) against the compiler's conversion.
    long n = 0;
    for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093) {
        for (std::uint32_t d = 0; d < 3; ++d) {
            const float f = adamw::bits_float(static_cast<std::uint32_t>(u + d));
            if (std::isnan(f)) continue;
            const _Float16 ref = static_cast<_Float16>(f);
            std::uint16_t rb;
            std::memcpy(&rb, &ref, 2);
            if (adamw::to_fp16_bits(f) != rb) {
                INFO("float 0x" << std::hex << adamw::float_bits(f));
                REQUIRE(adamw::to_fp16_bits(f) == rb);
            }
            ++n;
        }
    }
    CHECK(n > 3000000);
#endif
}

TEST_CASE("adamw_json: reproduces the torch trajectory end to end, non-finite values included", "[adamw]") {
    for (const char* name : {"default", "amsgrad_decreasing", "special_grads", "huge_grads_1e30@torch-2",
                             "maximize_amsgrad_wd0.5_lr0.1"}) {
        const json* c = find_case(name);
        if (!c) continue;  // "@torch-2" cases exist only in data made under torch 1.x
        INFO("case " << name);
        json req = {{"lr", (*c)["lr"]},           {"betas", (*c)["betas"]},       {"eps", (*c)["eps"]},
                    {"weight_decay", (*c)["weight_decay"]}, {"amsgrad", (*c)["amsgrad"]},
                    {"maximize", (*c)["maximize"]}, {"variant", (*c)["variant"]}, {"precision", "bf16"}};
        json p = json::array(), grads = json::array();
        for (float f : adamw_replay::hex_floats(c->at("param0"))) p.push_back(float_to_json(f));
        for (const auto& g : c->at("grads")) {
            json step = json::array();
            for (float f : adamw_replay::hex_floats(g)) step.push_back(float_to_json(f));
            grads.push_back(step);
        }
        req["param"] = p;
        req["grads"] = grads;
        const json out = api(req.dump(), true);
        CHECK(out.at("steps") == c->at("steps"));
        const auto& last = c->at("trajectory").back();
        for (const char* key : {"param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
            if (!last.contains(key)) {
                CHECK(!out.contains(key));
                continue;
            }
            const auto want = adamw_replay::hex_floats(last.at(key));
            REQUIRE(out.at(key).size() == want.size());
            for (std::size_t i = 0; i < want.size(); ++i) {
                INFO(key << "[" << i << "]");
                CHECK(adamw_replay::ulp_distance(json_float(out.at(key)[i]), want[i]) <= kMaxUlp);
            }
        }
        const auto& bf = c->at("param_bf16");
        for (std::size_t i = 0; i < bf.size(); ++i) {
            const float got = json_float(out.at("param_16bit")[i]);
            const float want = adamw::bf16_to_float(adamw_replay::hex_u16(bf[i].get<std::string>()));
            CHECK(adamw_replay::same_bits(got, want));
        }
    }
}

TEST_CASE("adamw_json: defaults are torch's, floats round-trip exactly", "[adamw]") {
    const json out = api(R"({"param":[1.0, -0.5, 3e-39], "grads":[[0.1, 0.2, -0.3], [1e-30, 0, -0.0]]})", true);
    adamw::Options o;  // lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2
    float p[3] = {1.0f, -0.5f, 3e-39f}, m[3] = {}, v[3] = {}, vm[3] = {};
    const float g[2][3] = {{0.1f, 0.2f, -0.3f}, {1e-30f, 0.0f, -0.0f}};
    for (int s = 0; s < 2; ++s) {
        const auto sc = adamw::step_scalars(o, s + 1);
        for (int i = 0; i < 3; ++i) adamw::step(p[i], m[i], v[i], vm[i], g[s][i], sc);
    }
    for (int i = 0; i < 3; ++i) {
        CHECK(adamw::float_bits(json_float(out["param"][i])) == adamw::float_bits(p[i]));
        CHECK(adamw::float_bits(json_float(out["exp_avg"][i])) == adamw::float_bits(m[i]));
        CHECK(adamw::float_bits(json_float(out["exp_avg_sq"][i])) == adamw::float_bits(v[i]));
    }
    CHECK(!out.contains("max_exp_avg_sq"));
    CHECK(!out.contains("param_16bit"));

    const json nan = api(R"({"eps":0, "param":[1, "Infinity"], "grads":[[0, "NaN"]], "amsgrad":true,
                             "precision":"fp16"})", true);
    CHECK(nan["param"][0] == "NaN");  // 0/0 with eps 0: torch gives NaN too (see zero_grads_eps0)
    CHECK(nan["exp_avg"][1] == "NaN");
    CHECK(nan["param_16bit"][1] == "NaN");
    CHECK(nan["max_exp_avg_sq"].size() == 2);
    const json empty = api(R"({"param":[], "grads":[]})", true);
    CHECK(empty["param"].empty());
    CHECK(empty["steps"] == 0);
}

TEST_CASE("adamw_json: names every problem and never throws", "[adamw]") {
    CHECK(has_error(api("{", false), "", "JSON"));
    CHECK(has_error(api("[1,2]", false), "", "object"));
    CHECK(has_error(api("{}", false), "param", "missing"));
    CHECK(has_error(api("{}", false), "grads", "missing"));

    const json j = api(R"({"lr":-1, "eps":-1e-8, "weight_decay":-0.1, "betas":[1.0, -0.5], "amsgrad":"yes",
                           "maximize":1, "variant":"torch-3", "precision":"fp8", "momentum":0.9,
                           "param":[1, 2, "x"], "grads":[[1, 2], [1, 2, 3], "oops", [null, 1, 2]]})", false);
    CHECK(has_error(j, "lr", ">= 0"));
    CHECK(has_error(j, "eps", ">= 0"));
    CHECK(has_error(j, "weight_decay", ">= 0"));
    CHECK(has_error(j, "betas[0]", "[0, 1)"));
    CHECK(has_error(j, "betas[1]", "[0, 1)"));
    CHECK(has_error(j, "amsgrad"));
    CHECK(has_error(j, "maximize"));
    CHECK(has_error(j, "variant"));
    CHECK(has_error(j, "precision"));
    CHECK(has_error(j, "momentum", "unknown"));
    CHECK(has_error(j, "param[2]"));
    CHECK(has_error(j, "grads[0]", "has 2 elements"));
    CHECK(has_error(j, "grads[2]", "array"));
    CHECK(has_error(j, "grads[3][0]"));

    CHECK(has_error(api(R"({"betas":[0.9], "param":[1], "grads":[[1]]})", false), "betas", "two numbers"));
    CHECK(has_error(api(R"({"lr":"0.1", "param":[1], "grads":[[1]]})", false), "lr", "number"));
    CHECK(has_error(api(R"({"lr":1e400, "param":[1], "grads":[[1]]})", false), "", "JSON"));  // beyond double
    CHECK(has_error(api(R"({"param":{"a":1}, "grads":[[1]]})", false), "param", "array"));
    CHECK(has_error(api(R"({"param":[1], "grads":[1]})", false), "grads[0]", "array"));
    CHECK(has_error(api(R"({"param":[1], "grads":{"0":[1]}})", false), "grads", "array"));
    // torch's addcdiv_ refuses a step size beyond the float range
    CHECK(has_error(api(R"({"lr":1e38, "betas":[0.999999, 0.999], "param":[1], "grads":[[1]]})", false), "lr",
                    "float"));

    // Size limit: the request's text is at most 1 MiB.
    {
        std::string big = R"({"param":[0], "grads":[)";
        for (int i = 0; i < 300000; ++i) big += i ? ",[0]" : "[0]";
        big += "]}";
        CHECK(has_error(api(big, false), "", "1 MiB"));
    }
    // Many bad elements: the list is capped and says so.
    {
        std::string bad = R"({"param":[1], "grads":[)";
        for (int i = 0; i < 40; ++i) bad += std::string(i ? "," : "") + "[true]";
        bad += "]}";
        const json e = api(bad, false);
        CHECK(e["errors"].size() == 21);
        CHECK(has_error(e, "", "more errors"));
    }
    // Invalid UTF-8 in a key still gives valid JSON back.
    const ApiResult r = adamw_json("{\"\xff\xfe\":1, \"param\":[1], \"grads\":[[1]]}");
    CHECK(!r.ok);
    CHECK(!json::parse(r.json, nullptr, false).is_discarded());
}
