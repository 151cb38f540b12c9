// `vramcalc adamw`: run the scalar AdamW reference (core/reference/adamw.hpp) over a few steps.
//
// Request (every field optional except "param" and "grads"; defaults are torch.optim.AdamW's):
//   {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 1e-2,
//    "amsgrad": false, "maximize": false,
//    "variant": "torch-1.13" | "torch-2",      first moment as mul_().add_() (1.13) or lerp_() (2.x)
//    "precision": "fp32" | "bf16" | "fp16",    the 16-bit ones keep fp32 master weights and state and add
//                                              "param_16bit": the master rounded to nearest even
//    "param": [p0, p1, ...],                   initial float32 parameter
//    "grads": [[g0, g1, ...], ...]}            one float32 gradient per step, each as long as "param"
// Numbers are rounded to the nearest float32 (as torch.tensor(..., dtype=torch.float32) does; beyond the float
// range that is an infinity). Array elements may also be the strings "NaN", "Infinity", "-Infinity".
// State starts at zero and step at 0, as in a fresh optimizer.
//
// Response: {"steps": n, "param": [...], "exp_avg": [...], "exp_avg_sq": [...]} plus "max_exp_avg_sq" with
// amsgrad and "param_16bit" with a 16-bit precision. Finite floats are printed as the shortest decimal that reads
// back as the same double, hence the same float (parse as double, round to float: exact round trip); non-finite
// ones as the strings "NaN", "Infinity", "-Infinity" (JSON has no such numbers).
//
// Errors: ok=false and {"errors":[{"field","message"}]}, one per problem (at most 20 listed). Limits:
// the request's text is at most 1 MiB (json_text.hpp), hyperparameters finite, and torch's own checks:
// lr >= 0, eps >= 0, 0 <= beta < 1, weight_decay >= 0, and lr/(1-beta1^step) must fit in a float (torch's addcdiv_
// refuses the value otherwise).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "input/json_text.hpp"
#include "json/api.hpp"
#include "reference/adamw.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxErrors = 20;

struct Errors {
    std::vector<std::pair<std::string, std::string>> list;
    std::size_t dropped = 0;
    void add(std::string field, std::string message) {
        if (list.size() < kMaxErrors)
            list.emplace_back(std::move(field), std::move(message));
        else
            ++dropped;
    }
    bool empty() const { return list.empty() && dropped == 0; }
};

std::string show(const json& v) { return describe_json(v, 40); }

std::string num(double d) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return buf;
}

// A float32 element: a JSON number, or one of the three strings.
bool read_float(const json& v, float& out) {
    if (v.is_number()) {
        out = static_cast<float>(v.get<double>());
        return true;
    }
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "NaN") return out = std::numeric_limits<float>::quiet_NaN(), true;
        if (s == "Infinity") return out = std::numeric_limits<float>::infinity(), true;
        if (s == "-Infinity") return out = -std::numeric_limits<float>::infinity(), true;
    }
    return false;
}

json write_float(float f) {
    if (std::isnan(f)) return "NaN";
    if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
    return static_cast<double>(f);
}

json write_array(const std::vector<float>& v) {
    json a = json::array();
    a.get_ref<json::array_t&>().reserve(v.size());
    for (float f : v) a.push_back(write_float(f));
    return a;
}

// A finite number hyperparameter; false (with an error) when present and wrong.
bool read_hyper(const json& req, const char* key, double& out, Errors& e) {
    auto it = req.find(key);
    if (it == req.end()) return true;
    if (!it->is_number()) return e.add(key, "must be a number, got " + show(*it)), false;
    const double d = it->get<double>();
    if (!std::isfinite(d)) return e.add(key, "must be finite"), false;
    out = d;
    return true;
}

bool read_bool(const json& req, const char* key, bool& out, Errors& e) {
    auto it = req.find(key);
    if (it == req.end()) return true;
    if (!it->is_boolean()) return e.add(key, "must be true or false, got " + show(*it)), false;
    out = it->get<bool>();
    return true;
}

// Reads a float array; names the first few bad elements.
bool read_floats(const json& v, const std::string& field, std::vector<float>& out, Errors& e) {
    if (!v.is_array()) return e.add(field, "must be an array of numbers, got " + show(v)), false;
    out.resize(v.size());
    int bad = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!read_float(v[i], out[i])) {
            if (bad++ < 3)
                e.add(field + "[" + std::to_string(i) + "]",
                      "must be a number or \"NaN\", \"Infinity\", \"-Infinity\", got " + show(v[i]));
        }
    }
    if (bad > 3) e.add(field, std::to_string(bad) + " elements are not numbers");
    return bad == 0;
}

ApiResult fail(const Errors& e) {
    json errs = json::array();
    for (const auto& [f, m] : e.list) errs.push_back({{"field", f}, {"message", m}});
    if (e.dropped) errs.push_back({{"field", ""}, {"message", std::to_string(e.dropped) + " more errors not listed"}});
    json out = {{"errors", errs}};
    return {false, out.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace

ApiResult adamw_json(const std::string& request_json) {
    Errors e;
    std::string problem;
    const json req = parse_json_text(request_json, problem);
    if (req.is_discarded()) return e.add("", problem), fail(e);
    if (!req.is_object()) return e.add("", "must be a JSON object, got " + show(req)), fail(e);

    static const char* const kKnown[] = {"lr",     "betas",   "eps",       "weight_decay", "amsgrad", "maximize",
                                         "param",  "grads",   "variant",   "precision"};
    for (auto it = req.begin(); it != req.end(); ++it) {
        bool known = false;
        for (const char* k : kKnown) known = known || it.key() == k;
        if (!known) e.add(it.key(), "unknown field (known: lr, betas, eps, weight_decay, amsgrad, maximize, param, "
                                    "grads, variant, precision)");
    }

    adamw::Options o;
    if (read_hyper(req, "lr", o.lr, e) && !(o.lr >= 0)) e.add("lr", "must be >= 0, got " + num(o.lr));
    if (read_hyper(req, "eps", o.eps, e) && !(o.eps >= 0)) e.add("eps", "must be >= 0, got " + num(o.eps));
    if (read_hyper(req, "weight_decay", o.weight_decay, e) && !(o.weight_decay >= 0))
        e.add("weight_decay", "must be >= 0, got " + num(o.weight_decay));
    if (auto it = req.find("betas"); it != req.end()) {
        if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number()) {
            e.add("betas", "must be an array of two numbers [beta1, beta2], got " + show(*it));
        } else {
            o.beta1 = (*it)[0].get<double>();
            o.beta2 = (*it)[1].get<double>();
            if (!(o.beta1 >= 0 && o.beta1 < 1)) e.add("betas[0]", "must be in [0, 1), got " + num(o.beta1));
            if (!(o.beta2 >= 0 && o.beta2 < 1)) e.add("betas[1]", "must be in [0, 1), got " + num(o.beta2));
        }
    }
    read_bool(req, "amsgrad", o.amsgrad, e);
    read_bool(req, "maximize", o.maximize, e);
    if (auto it = req.find("variant"); it != req.end()) {
        if (it->is_string() && it->get_ref<const std::string&>() == "torch-1.13")
            o.variant = adamw::Variant::torch_1_13;
        else if (it->is_string() && it->get_ref<const std::string&>() == "torch-2")
            o.variant = adamw::Variant::torch_2;
        else
            e.add("variant", "must be \"torch-1.13\" or \"torch-2\", got " + show(*it));
    }
    int precision = 0;  // 0 fp32, 1 bf16, 2 fp16
    if (auto it = req.find("precision"); it != req.end()) {
        const std::string s = it->is_string() ? it->get<std::string>() : std::string();
        if (s == "fp32")
            precision = 0;
        else if (s == "bf16")
            precision = 1;
        else if (s == "fp16")
            precision = 2;
        else
            e.add("precision", "must be \"fp32\", \"bf16\" or \"fp16\", got " + show(*it));
    }

    std::vector<float> param;
    const auto pit = req.find("param");
    if (pit == req.end())
        e.add("param", "missing: the initial parameter, an array of numbers");
    else
        read_floats(*pit, "param", param, e);

    std::vector<std::vector<float>> grads;
    const auto git = req.find("grads");
    if (git == req.end()) {
        e.add("grads", "missing: one gradient array per step, e.g. [[0.1, -0.2]]");
    } else if (!git->is_array()) {
        e.add("grads", "must be an array of gradient arrays (one per step), got " + show(*git));
    } else {
        grads.resize(git->size());
        for (std::size_t s = 0; s < git->size(); ++s) {
            const std::string field = "grads[" + std::to_string(s) + "]";
            if (!read_floats((*git)[s], field, grads[s], e)) continue;
            if (pit != req.end() && pit->is_array() && grads[s].size() != pit->size())
                e.add(field, "has " + std::to_string(grads[s].size()) + " elements, \"param\" has " +
                                 std::to_string(pit->size()));
        }
    }

    // torch's addcdiv_ converts -lr/bias_correction1 to float with an overflow check.
    if (e.empty()) {
        for (std::size_t s = 1; s <= grads.size(); ++s) {
            const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(s));
            const double step_size = o.lr / bc1;
            if (std::isfinite(step_size) && std::fabs(step_size) > std::numeric_limits<float>::max()) {
                e.add("lr", "lr / (1 - beta1^" + std::to_string(s) + ") = " + num(step_size) +
                                " does not fit in a float (torch raises here)");
                break;
            }
        }
    }
    if (!e.empty()) return fail(e);

    const std::size_t n = param.size();
    std::vector<float> m(n, 0.0f), v(n, 0.0f), vmax(n, 0.0f);
    for (std::size_t s = 0; s < grads.size(); ++s) {
        const adamw::StepScalars sc = adamw::step_scalars(o, static_cast<std::int64_t>(s + 1));
        const std::vector<float>& g = grads[s];
        for (std::size_t i = 0; i < n; ++i) adamw::step(param[i], m[i], v[i], vmax[i], g[i], sc);
    }

    json out = json::object();
    out["steps"] = grads.size();
    out["param"] = write_array(param);
    out["exp_avg"] = write_array(m);
    out["exp_avg_sq"] = write_array(v);
    if (o.amsgrad) out["max_exp_avg_sq"] = write_array(vmax);
    if (precision != 0) {
        const adamw::Half h = precision == 1 ? adamw::Half::bf16 : adamw::Half::fp16;
        std::vector<float> p16(n);
        for (std::size_t i = 0; i < n; ++i) p16[i] = adamw::half_to_float(adamw::to_half_bits(param[i], h), h);
        out["param_16bit"] = write_array(p16);
    }
    return {true, out.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace vramcalc
