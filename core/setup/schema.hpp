// The configuration's keys, one row each: its JSON name and share-link parameter, its type and bounds or choices,
// its default rule, when it applies, where the page shows it and a one-line doc. The reader and writer
// (config_json.cpp), `vramcalc schema`, the page and the README's configuration table all read these rows.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/model_json.hpp"
#include "setup/config.hpp"

namespace vramcalc {


// How a key's JSON value is read and written: by its type through a binding, or by a codec of its own (a value that
// is a string or an object, a catalog lookup, a validated release string).
enum class Codec {
    typed, framework, framework_version, model, precision, finetune, checkpointing, gpu, gpu_name, inference_engine,
    release, targets, optional_dtype, fp8_recipe, price, plan, strategies, alloc_conf
};

// When config_to_json echoes a key (an object's members: inside their object): always, when it applies, or when it
// applies and is set to something other than nothing (an empty string, 0, an unset optional).
enum class Echo { always, when_applies, when_set };

// The page's sections in the order it shows them; `basics` is the short path every user fills in.
enum class KeyGroup { basics, model, finetune, method, batch, precision, savers, parallelism, gpu, stack, run, none };

// When a key means something: any of the alternatives, each all of its atoms. An atom is a key of the rows above
// whose value is one of `in`, or, when `in` is empty, a number above `above`.
struct Atom {
    const char* key;
    std::vector<std::string> in;
    double above = 0;
};
struct Condition {
    std::vector<std::vector<Atom>> any;  // empty: always
    bool always() const { return any.empty(); }
};

// Where a typed key's value lives in a Config (a member, or a member of a member).
struct Binding {
    enum class Kind { none, u64, i32, f64, flag, text, enumeration, architecture };
    Kind kind = Kind::none;
    void* (*at)(Config&) = nullptr;
    const void* (*at_const)(const Config&) = nullptr;
    int (*get_enum)(const void*) = nullptr;
    void (*set_enum)(void*, int) = nullptr;
    // The bound value of `from` into `to` (nothing for an unbound key).
    void copy(const Config& from, Config& to) const;
};

template <auto... Path>
Binding member() {
    using T = std::remove_cv_t<std::remove_reference_t<decltype((std::declval<Config&>().*....*Path))>>;
    Binding b;
    b.at = [](Config& c) -> void* { return &(c.*....*Path); };
    b.at_const = [](const Config& c) -> const void* { return &(c.*....*Path); };
    using K = Binding::Kind;
    if constexpr (std::is_same_v<T, std::uint64_t>) b.kind = K::u64;
    else if constexpr (std::is_same_v<T, int>) b.kind = K::i32;
    else if constexpr (std::is_same_v<T, double>) b.kind = K::f64;
    else if constexpr (std::is_same_v<T, bool>) b.kind = K::flag;
    else if constexpr (std::is_same_v<T, std::string>) b.kind = K::text;
    else if constexpr (std::is_same_v<T, Architecture>) b.kind = K::architecture;
    else if constexpr (std::is_enum_v<T>) {
        b.kind = K::enumeration;
        b.get_enum = [](const void* p) { return int(*static_cast<const T*>(p)); };
        b.set_enum = [](void* p, int v) { *static_cast<T*>(p) = T(v); };
    }
    return b;
}

struct Key {
    const char* name;        // the JSON key, dotted for an object's members ("finetune.rank")
    const char* link;        // the share link's parameter ("": not in links)
    KeyType type;
    Codec codec = Codec::typed;
    Binding value;
    double lo = 0, hi = 0;   // integer and number bounds
    bool hi_open = false;    // number: hi itself excluded
    std::vector<ChoiceView> choices;
    Condition applies;
    bool strict = false;     // given where it does not apply: an error ("goes with ...")
    bool required = false;   // missing where it applies: an error ("is required with ...")
    Echo echo = Echo::always;
    void (*before)(Config&) = nullptr;  // sets the default before the key is read (from the keys above it)
    void (*late)(Config&) = nullptr;    // sets the default after every key, when the key was not given
    std::string default_rule;           // the default in words
    std::vector<const char*> follows;   // the keys its default depends on (besides the framework's profile)
    bool from_profile = false;          // its default is the framework profile's
    const char* label = "";
    const char* doc = "";
    KeyGroup group = KeyGroup::none;
    std::size_t parent = 0;  // for an object's members: 1 + the object's row; 0 at the top level
};

// Every key in reading order (a key's `before`, `late` and `applies` read only keys above it).
const std::vector<Key>& config_keys();
const Key* find_key(std::string_view name);
// The page's groups in its order. The basics are the short path a first-time user answers; every other group stays
// folded until `opens` holds (a choice that needs it) or one of its keys is set or wrong.
struct GroupRow {
    KeyGroup group;
    const char* title;
    std::vector<const char*> order;  // its keys in the page's order, where that is not the reading order
    bool open = false;               // never folded
    Condition opens;                 // when it opens itself (none: only when opened, or one of its keys is set)
};
const std::vector<GroupRow>& key_groups();

const ChoiceView* choice_of(const Key&, int value);  // nullptr when the key has no such choice
// Whether a key applies to a configuration, and its condition in the JSON format's words
// ("\"method\": \"grpo\" or \"rloo\"").
bool key_applies(const Key&, const Config&);
std::string condition_text(const Condition&);
const char* to_string(KeyType);
// The schema as JSON: {"groups": [...], "keys": [...], "architecture": [...]} (`vramcalc schema`, the WASM API).
nlohmann::json schema_json();
// The README's configuration tables, generated from the rows (a test checks the README against it).
std::string schema_markdown();

}  // namespace vramcalc
