// Reading untrusted JSON objects field by field, every problem recorded with its key (never throws).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "input/field_error.hpp"
#include "input/json_text.hpp"

namespace vramcalc {

using nlohmann::json;

// Bounds that keep every product of sizes exact in 64 bits and every byte count exact in a double.
inline constexpr std::uint64_t kMaxLayers = 100000;
inline constexpr std::uint64_t kMaxWidth = std::uint64_t(1) << 20;   // hidden, ffn, heads, head_dim
inline constexpr std::uint64_t kMaxVocab = std::uint64_t(1) << 24;
inline constexpr std::uint64_t kMaxTokens = std::uint64_t(1) << 24;  // seq_len, max_positions
inline constexpr std::uint64_t kMaxBatch = std::uint64_t(1) << 20;
inline constexpr std::uint64_t kMaxGpus = std::uint64_t(1) << 20;

inline std::string show(const json& v) { return describe_json(v); }

// A user's key as it can be echoed safely: JSON-escaped, invalid UTF-8 replaced, at most 60 characters.
inline std::string printable_key(const std::string& key) {
    std::string s = json(key).dump(-1, ' ', false, json::error_handler_t::replace);
    s = s.substr(1, s.size() - 2);
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// One value of an enumeration as the JSON format spells it, with a short label for people.
template <class E>
struct Choice {
    E value;
    const char* name;
    const char* label;
};

// An enumeration's names, declared once: what the reader accepts, the writer prints and the schema lists.
template <class E, std::size_t N>
struct Names {
    Choice<E> items[N];
    const char* name(E e) const {
        for (const Choice<E>& c : items)
            if (c.value == e) return c.name;
        return "?";
    }
    std::string list() const {
        std::string s;
        for (const Choice<E>& c : items) s += (s.empty() ? "" : ", ") + std::string("\"") + c.name + "\"";
        return s;
    }
};

// Reads the fields of one JSON object, recording every problem instead of stopping at the first.
class Reader {
public:
    Reader(const json& obj, std::string prefix, std::vector<FieldError>& errors)
        : obj_(obj), prefix_(std::move(prefix)), errors_(errors) {}

    void fail(const std::string& key, const std::string& message) { errors_.push_back({prefix_ + key, message}); }

    const json* find(const std::string& key) {
        seen_.push_back(key);
        auto it = obj_.find(key);
        return it == obj_.end() ? nullptr : &*it;
    }

    bool has(const std::string& key) { return obj_.contains(key); }

    void integer(const std::string& key, std::uint64_t& out, std::uint64_t lo, std::uint64_t hi) {
        const json* v = find(key);
        if (!v) return;
        double d = v->is_number() ? v->get<double>() : NAN;
        if (!v->is_number() || v->is_boolean() || !std::isfinite(d) || d != std::floor(d)) {
            fail(key, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                          show(*v));
        } else if (d < double(lo) || d > double(hi)) {
            fail(key, "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + show(*v));
        } else {
            out = v->is_number_unsigned() ? v->get<std::uint64_t>()
                  : v->is_number_integer() ? std::uint64_t(v->get<std::int64_t>())
                                           : std::uint64_t(d);
        }
    }

    void number(const std::string& key, double& out, double lo, double hi, bool hi_open) {
        const json* v = find(key);
        if (!v) return;
        if (!v->is_number()) return fail(key, "must be a number, got " + show(*v));
        double d = v->get<double>();
        if (!(d >= lo && (hi_open ? d < hi : d <= hi)))
            return fail(key, "must be in [" + fmt(lo) + ", " + fmt(hi) + (hi_open ? ")" : "]") + ", got " + show(*v));
        out = d;
    }

    void boolean(const std::string& key, bool& out) {
        const json* v = find(key);
        if (!v) return;
        if (!v->is_boolean()) return fail(key, "must be true or false, got " + show(*v));
        out = v->get<bool>();
    }

    template <class E, std::size_t N>
    void choice(const std::string& key, E& out, const Names<E, N>& names) {
        const json* v = find(key);
        if (!v) return;
        if (v->is_string())
            for (const Choice<E>& c : names.items)
                if (v->get_ref<const std::string&>() == c.name) {
                    out = c.value;
                    return;
                }
        fail(key, "must be one of " + names.list() + ", got " + show(*v));
    }

    // Keys present in the object that no read asked for.
    void reject_unknown(const std::string& allowed) {
        for (auto it = obj_.begin(); it != obj_.end(); ++it)
            if (std::find(seen_.begin(), seen_.end(), it.key()) == seen_.end())
                fail(printable_key(it.key()), "unknown key; allowed keys: " + allowed);
    }

private:
    static std::string fmt(double d) {
        std::string s = std::to_string(d);
        s.erase(s.find_last_not_of('0') + 1);
        if (s.back() == '.') s.pop_back();
        return s;
    }
    const json& obj_;
    std::string prefix_;
    std::vector<FieldError>& errors_;
    std::vector<std::string> seen_;
};

inline std::string key_list(std::initializer_list<const char*> keys) {
    std::string s;
    for (const char* k : keys) s += (s.empty() ? "" : ", ") + std::string(k);
    return s;
}

}  // namespace vramcalc
