// Exports (core/exports/exports.cpp): which apply to which configuration, and every key, flag and enum value they emit
// checked against tests/data/exports/schema.json, extracted from the pinned libraries' own source by
// tests/data/exports/extract_schema.py (the libraries' parsers themselves: validate_with_libraries.py).
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "exports/exports.hpp"
#include "json/api.hpp"
#include "model/model_catalog.hpp"
#include "model/presets.hpp"
#include "setup/config_json.hpp"

using nlohmann::json;
using namespace vramcalc;

namespace {

json read_json(const std::string& relative) {
    std::ifstream f(std::string(VRAMCALC_SOURCE_DIR) + "/tests/data/exports/" + relative);
    REQUIRE(f.good());
    return json::parse(f);
}

const json& schema() {
    static const json s = read_json("schema.json");
    return s;
}

bool in(const json& list, const std::string& value) {
    for (const json& v : list)
        if (v.is_string() && v.get<std::string>() == value) return true;
    return false;
}

std::string trim(const std::string& s) {
    const std::size_t first = s.find_first_not_of(" \n"), last = s.find_last_not_of(" \n");
    return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// The keyword arguments of every call `name(...)` in Python text: key -> value text (nested brackets kept).
std::vector<std::map<std::string, std::string>> calls(const std::string& text, const std::string& name) {
    std::vector<std::map<std::string, std::string>> out;
    for (std::size_t at = text.find(name + "("); at != std::string::npos; at = text.find(name + "(", at + 1)) {
        if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) continue;
        std::map<std::string, std::string> kwargs;
        std::size_t i = at + name.size() + 1;
        int depth = 0;
        bool quoted = false;
        std::string item;
        auto flush = [&] {
            const std::string s = trim(item);
            const std::size_t eq = s.find('=');
            if (eq != std::string::npos && s.find_first_of("\"'({[") > eq) kwargs[trim(s.substr(0, eq))] = trim(s.substr(eq + 1));
            item.clear();
        };
        for (; i < text.size(); ++i) {
            const char ch = text[i];
            if (ch == '"') quoted = !quoted;
            if (!quoted && (ch == '(' || ch == '[' || ch == '{')) ++depth;
            if (!quoted && (ch == ')' || ch == ']' || ch == '}') && depth-- == 0) break;
            if (!quoted && ch == ',' && depth == 0) flush();
            else item += ch;
        }
        flush();
        out.push_back(kwargs);
    }
    return out;
}

std::string unquote(std::string s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) return s.substr(1, s.size() - 2);
    return s;
}

// ---------------------------------------------------------------- one checker per export
void check_deepspeed(const Config& c, const std::string& text) {
    const json ds = json::parse(text);  // round trip: the file is the function's JSON
    CHECK(ds == deepspeed_config(c));
    CHECK(ds["train_micro_batch_size_per_gpu"].is_number_unsigned());
    CHECK(ds["zero_optimization"]["stage"].get<int>() == c.zero);
    const ApiResult api = deepspeed_json(config_to_json(c).dump());
    CHECK((api.ok && json::parse(api.json) == ds));
}

void check_accelerate(const std::string& text) {
    const json& a = schema()["accelerate"];
    std::string block;
    std::map<std::string, std::string> top, nested;
    for (const std::string& l : lines(text)) {
        if (l.empty() || l[0] == '#') continue;
        const std::size_t colon = l.find(": ");
        const bool indented = l.rfind("  ", 0) == 0;
        const std::string key = trim(l.substr(0, colon == std::string::npos ? l.size() - 1 : colon));
        const std::string value = colon == std::string::npos ? "" : trim(l.substr(colon + 2));
        INFO(l);
        if (!indented) {
            CHECK(in(a["top_level_keys"], key));
            block = value.empty() ? key : "";
            top[key] = value;
        } else {
            REQUIRE(!block.empty());
            CHECK(in(a[block + "_keys"], key));
            nested[key] = value;
        }
        // YAML 1.1 reads unquoted no/yes/on/off as booleans: such strings must be quoted.
        for (const char* word : {"no", "NO", "No", "yes", "on", "off"}) CHECK(value != word);
        if (key == "num_processes" || key == "zero_stage" || key == "gradient_accumulation_steps" || key == "fsdp_version")
            CHECK(value.find_first_not_of("0123456789") == std::string::npos);
    }
    CHECK(in(a["compute_environment"], top["compute_environment"]));
    CHECK(in(a["distributed_type"], unquote(top["distributed_type"])));
    // Under DeepSpeed the precision is ds_config.json's, which the file names.
    if (top.count("mixed_precision")) CHECK(in(a["mixed_precision"], unquote(top["mixed_precision"])));
    else CHECK(nested["deepspeed_config_file"] == "ds_config.json");
    if (top.count("fsdp_config")) {
        const bool v1 = nested["fsdp_version"] == "1";
        CHECK(in(a["fsdp_auto_wrap_policy"], nested["fsdp_auto_wrap_policy"]));
        CHECK(in(a[v1 ? "fsdp_state_dict_type" : "fsdp2_state_dict_type"], nested["fsdp_state_dict_type"]));
        if (v1) CHECK(in(a["fsdp_sharding_strategy"], nested["fsdp_reshard_after_forward"]));
        if (v1) CHECK(nested["fsdp_sharding_strategy"] == nested["fsdp_reshard_after_forward"]);
        if (!v1) CHECK((nested["fsdp_reshard_after_forward"] == "true" || nested["fsdp_reshard_after_forward"] == "false"));
    }
    if (top.count("dynamo_config")) CHECK(in(a["dynamo_backend"], nested["dynamo_backend"]));
}

void check_kwargs(const std::string& text, const std::string& call, const json& allowed) {
    for (const auto& kwargs : calls(text, call))
        for (const auto& [key, value] : kwargs) {
            INFO(call << "(" << key << "=" << value << ")");
            CHECK(in(allowed, key));
        }
}

void check_training_arguments(const std::string& text) {
    const json& t = schema()["transformers"];
    // TrainingArguments, or the TRL trainer's config class imported from its module ("from trl import DPOConfig").
    std::string cls = "TrainingArguments";
    json allowed = t["training_arguments"];
    for (auto it = schema()["trl"]["configs"].begin(); it != schema()["trl"]["configs"].end(); ++it) {
        const std::string path = it.key(), module = path.substr(0, path.rfind('.')), name = path.substr(path.rfind('.') + 1);
        if (text.find("from " + module + " import " + name + "\n") != std::string::npos) cls = name, allowed = it.value();
    }
    REQUIRE(calls(text, cls).size() == 1);
    check_kwargs(text, cls, allowed);
    check_kwargs(text, "BitsAndBytesConfig", t["bits_and_bytes_config"]);
    check_kwargs(text, "LoraConfig", schema()["peft"]["lora_config"]);
    check_kwargs(text, "model_kwargs = dict", t["from_pretrained_kwargs"]);
    const auto args = calls(text, cls)[0];
    CHECK(in(t["optim"], unquote(args.at("optim"))));
    for (const auto& model : calls(text, "model_kwargs = dict")) CHECK(in(t["attn_implementation"], unquote(model.at("attn_implementation"))));
    for (const auto& bnb : calls(text, "BitsAndBytesConfig")) CHECK(in(t["bnb_4bit_quant_type"], unquote(bnb.at("bnb_4bit_quant_type"))));
    for (const auto& lora : calls(text, "LoraConfig")) CHECK(in(schema()["peft"]["task_type"], unquote(lora.at("task_type"))));
    if (args.count("fsdp_config")) {
        // A Python dict of JSON-compatible literals once True/False are spelled the JSON way.
        std::string dict = args.at("fsdp_config");
        for (auto [from, to] : {std::pair<std::string, std::string>{"True", "true"}, {"False", "false"}})
            for (std::size_t p = dict.find(from); p != std::string::npos; p = dict.find(from)) dict.replace(p, from.size(), to);
        const json fsdp = json::parse(dict);
        for (auto it = fsdp.begin(); it != fsdp.end(); ++it) CHECK(in(t["fsdp_config_keys"], it.key()));
        CHECK(in(schema()["accelerate"]["fsdp_auto_wrap_policy"], fsdp["auto_wrap_policy"].get<std::string>()));
        CHECK(fsdp["version"].is_number_integer());
    }
}

void check_torchrun(const std::string& text) {
    const json& sig = schema()["torch"]["signatures"];
    for (const char* call : {"FullyShardedDataParallel", "fully_shard", "MixedPrecision", "MixedPrecisionPolicy", "CPUOffload",
                             "DistributedDataParallel", "checkpoint_wrapper"})
        check_kwargs(text, call, sig[call]);
    check_kwargs(text, "torch.optim.AdamW", sig["AdamW"]);
    check_kwargs(text, "torch.optim.SGD", sig["SGD"]);
    check_kwargs(text, "torch.optim.Adafactor", sig["Adafactor"]);
    check_kwargs(text, "LoraConfig", schema()["peft"]["lora_config"]);
    for (const auto& fsdp : calls(text, "FullyShardedDataParallel")) {
        const std::string strategy = fsdp.at("sharding_strategy");
        CHECK(in(schema()["torch"]["ShardingStrategy"], strategy.substr(strategy.find('.') + 1)));
    }
}

std::vector<std::string> shell_words(const std::string& text) {
    std::vector<std::string> words;
    for (const std::string& l : lines(text)) {
        if (l.empty() || l[0] == '#') continue;
        std::string word;
        bool quoted = false;
        for (char ch : l + " ") {
            if (ch == '\'') quoted = !quoted;
            else if (ch == ' ' && !quoted) {
                if (!word.empty() && word != "\\") words.push_back(word);
                word.clear();
            } else word += ch;
        }
    }
    return words;
}

void check_litgpt(const std::string& text) {
    const json& l = schema()["litgpt"];
    const std::vector<std::string> w = shell_words(text);
    REQUIRE(w.size() > 2);
    CHECK(w[0] == "litgpt");
    REQUIRE(l["commands"].contains(w[1]));
    for (std::size_t i = 2; i < w.size(); ++i) {
        if (w[i].rfind("--", 0) != 0) continue;
        INFO(w[i]);
        CHECK(in(l["commands"][w[1]]["flags"], w[i].substr(2)));
        if (w[i] == "--quantize") CHECK(in(l["choices"]["quantize"], w[i + 1]));
        if (w[i] == "--optimizer" && w[i + 1].front() == '{') CHECK(json::parse(w[i + 1]).contains("class_path"));
    }
}

void check_torchtune(const std::string& text) {
    const json& t = schema()["torchtune"];
    std::vector<std::string> w = shell_words(text);
    REQUIRE(w.size() > 5);
    CHECK((w[0] == "tune" && w[1] == "run"));
    std::size_t i = 2;
    if (w[i] == "--nproc_per_node") i += 2;
    const std::string recipe = w[i], config = w[i + 2];
    REQUIRE(w[i + 1] == "--config");
    REQUIRE(t["recipes"].contains(recipe));
    CHECK(in(t["recipes"][recipe]["configs"], config));
    const json& keys = t["configs"][config];
    std::map<std::string, std::string> overrides;
    for (std::size_t k = i + 3; k < w.size(); ++k) overrides[w[k].substr(0, w[k].find('='))] = w[k].substr(w[k].find('=') + 1);
    for (const auto& [key, value] : overrides) {
        INFO(config << ": " << key << "=" << value);
        const std::string node = key.substr(0, key.find('.')), leaf = key.substr(key.find('.') + 1);
        if (key.find('.') == std::string::npos) {
            CHECK((in(keys, key) || in(t["recipes"][recipe]["reads"], key)));
        } else {
            // A key new to the config must be an argument of the node's component (as the overrides name it).
            const auto given = overrides.find(node + "._component_");
            const std::string component = given != overrides.end() ? given->second : t["components"][config].value(node, "");
            REQUIRE(t["signatures"].contains(component));
            CHECK((leaf == "_component_" || in(keys, key) || in(t["signatures"][component], leaf)));
        }
    }
}

void check_megatron(const std::string& text) {
    const json& m = schema()["megatron"];
    const std::vector<std::string> w = shell_words(text);
    for (std::size_t i = 0; i < w.size(); ++i) {
        if (w[i].rfind("--", 0) != 0 || w[i] == "--nproc_per_node") continue;
        INFO(w[i]);
        CHECK(in(m["flags"], w[i]));
        if (m["choices"].contains(w[i])) CHECK(in(m["choices"][w[i]], w[i + 1]));
    }
}

void check_export(const Config& c, const Export& e) {
    INFO(e.id << ":\n" << e.text);
    REQUIRE(!e.text.empty());
    CHECK(e.text.back() == '\n');
    if (e.id == "deepspeed") check_deepspeed(c, e.text);
    else if (e.id == "accelerate") check_accelerate(e.text);
    else if (e.id == "training-arguments") check_training_arguments(e.text);
    else if (e.id == "torchrun") check_torchrun(e.text);
    else if (e.id == "litgpt") check_litgpt(e.text);
    else if (e.id == "torchtune") check_torchtune(e.text);
    else if (e.id == "megatron") check_megatron(e.text);
    else FAIL("unknown export id " << e.id);
}

Config parsed(const json& config) {
    const ParsedConfig p = parse_config(config);
    INFO(config.dump() << (p.ok() ? "" : " -> " + p.errors[0].field + ": " + p.errors[0].message));
    REQUIRE(p.ok());
    return p.config;
}

}  // namespace

TEST_CASE("schema.json records the pinned releases it was extracted from") {
    const json& s = schema();
    CHECK(s["accelerate"]["version"] == "1.15.0");
    CHECK(s["transformers"]["version"] == "5.18.0");
    CHECK(s["peft"]["version"] == "0.21.2");
    CHECK(s["litgpt"]["version"] == "v0.5.13");
    CHECK(s["torchtune"]["version"] == "v0.6.1");
    CHECK(s["megatron"]["version"] == "core_v0.15.3");
    CHECK(s["trl"]["version"] == "1.16.0");
    CHECK(s["trl"]["ppo_version"] == "1.12.0");
    for (const char* lib : {"litgpt", "torchtune", "megatron"}) CHECK(s[lib]["commit"].get<std::string>().size() == 40);
}

TEST_CASE("each test configuration offers exactly its exports, each with real keys only") {
    const json cases = read_json("configs.json")["cases"];
    REQUIRE(cases.size() > 20);
    for (const json& c : cases) {
        INFO(c["name"].get<std::string>());
        const Config config = parsed(c["config"]);
        std::vector<std::string> ids;
        for (const Export& e : exports_for(config)) {
            ids.push_back(e.id);
            check_export(config, e);
        }
        CHECK(ids == c["offers"].get<std::vector<std::string>>());
    }
}

TEST_CASE("exports over a grid of configurations: every one emitted uses real keys") {
    std::set<std::string> seen;
    const char* frameworks[] = {"hf", "litgpt", "torchtune", "torchtitan"};
    const char* precisions[] = {"32-true", "bf16-mixed", "16-mixed", "bf16-true"};
    const json finetunes[] = {"full", {{"method", "lora"}, {"targets", {"all-linear"}}},
                              {{"method", "qlora"}, {"targets", {"all-linear"}}, {"quantize_lm_head", true}}};
    const json strategies[] = {{{"strategy", "single"}}, {{"strategy", "ddp"}, {"gpus", 2}},
                               {{"strategy", "fsdp"}, {"gpus", 4}, {"zero", 2}},
                               {{"strategy", "fsdp"}, {"gpus", 4}, {"fsdp_version", 2}, {"offload", "optimizer+params"}},
                               {{"strategy", "deepspeed"}, {"gpus", 2}, {"zero", 3}, {"offload", "optimizer+params"}},
                               {{"strategy", "megatron"}, {"gpus", 8}, {"tp", 2}, {"pp", 2}, {"zero", 1}}};
    for (const char* framework : frameworks)
        for (const char* precision : precisions)
            for (const json& finetune : finetunes)
                for (const json& strategy : strategies)
                    for (const char* checkpointing : {"none", "full", "selective"}) {
                        json config = strategy;
                        config["framework"] = framework, config["precision"] = precision, config["checkpointing"] = checkpointing;
                        config["model"] = "llama-3.2-1b", config["finetune"] = finetune;
                        const ParsedConfig p = parse_config(config);
                        if (!p.ok()) continue;  // combinations the configuration itself refuses
                        INFO(config.dump());
                        for (const Export& e : exports_for(p.config)) {
                            seen.insert(e.id);
                            check_export(p.config, e);
                        }
                    }
    CHECK(seen.size() == 7);
}

TEST_CASE("every torchtune config named for a model is one of its recipe's configs in torchtune 0.6.1") {
    std::vector<std::string> models;
    for (const ModelPreset& m : model_presets()) models.push_back(m.arch.id);
    for (const CatalogModel& m : model_catalog()) models.push_back(m.id);
    int offered = 0;
    for (const std::string& model : models)
        for (const json& finetune : {json("full"), json{{"method", "lora"}, {"targets", {"q_proj", "v_proj"}}},
                                     json{{"method", "qlora"}, {"targets", {"q_proj", "v_proj"}}, {"backend", "torchao"}}})
            for (int gpus : {1, 2}) {
                json config = {{"framework", "torchtune"}, {"model", model}, {"finetune", finetune}, {"precision", "bf16-true"}};
                if (gpus > 1) config["strategy"] = "fsdp", config["gpus"] = gpus;
                const ParsedConfig p = parse_config(config);
                if (!p.ok()) continue;
                if (const auto text = torchtune_command(p.config)) {
                    INFO(model << " " << *text);
                    check_torchtune(*text);
                    ++offered;
                }
            }
    CHECK(offered > 40);
}

TEST_CASE("exports_json lists the exports; a bad configuration gives errors, never an export") {
    const ApiResult r = exports_json(R"({"strategy":"deepspeed","zero":2,"gpus":2})");
    REQUIRE(r.ok);
    const json j = json::parse(r.json);
    REQUIRE(j["exports"].size() == 3);
    for (const json& e : j["exports"])
        for (const char* key : {"id", "title", "filename", "language", "text"}) CHECK(e[key].is_string());
    CHECK(j["exports"][0]["id"] == "deepspeed");
    CHECK(j["exports"][0]["filename"] == "ds_config.json");
    CHECK(json::parse(j["exports"][0]["text"].get<std::string>()) == json::parse(deepspeed_json(R"({"strategy":"deepspeed","zero":2,"gpus":2})").json));

    const ApiResult bad = exports_json(R"({"strategy":"nope"})");
    CHECK(!bad.ok);
    CHECK(json::parse(bad.json).contains("errors"));
    CHECK(!exports_json("{").ok);
    // Nothing applies: an empty list, not an error.
    const ApiResult none = exports_json(R"({"strategy":"fsdp","gpus":2,"checkpointing":"selective"})");
    CHECK((none.ok && json::parse(none.json)["exports"].empty()));
    // deepspeed_json keeps its contract: an error outside strategy "deepspeed".
    CHECK(!deepspeed_json("{}").ok);
}
