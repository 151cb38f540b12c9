// Model search: the spellings people type find the model they mean (model/model_search.hpp), a configuration's
// "model" resolves an unambiguous spelling to its canonical id, and anything else is an error naming the field
// with the closest ids.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "json/api.hpp"
#include "model/model_catalog.hpp"
#include "model/model_search.hpp"
#include "model/presets.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

std::string first(const std::string& query) {
    const std::vector<ModelMatch> r = search_models(query, 10);
    return r.empty() ? "" : r[0].id;
}

// The model a configuration's "model" text reads as, or its first error.
std::string resolved(const std::string& text) {
    const ParsedConfig p = parse_config(json{{"model", text}});
    return p.ok() ? p.config.model.id : "error: " + p.errors[0].field + ": " + p.errors[0].message;
}

}  // namespace

TEST_CASE("spellings people type find the model first, as an exact match") {
    const std::pair<const char*, const char*> cases[] = {
        {"Qwen3-8B", "Qwen/Qwen3-8B"},
        {"qwen/qwen3-8b", "Qwen/Qwen3-8B"},
        {"qwen3 8b", "Qwen/Qwen3-8B"},
        {"QWEN_3_8B", "Qwen/Qwen3-8B"},
        {"https://huggingface.co/Qwen/Qwen3-8B/tree/main", "Qwen/Qwen3-8B"},
        {"llama 3.1 8b", "meta-llama/Llama-3.1-8B"},
        {"llama3.1-8b", "meta-llama/Llama-3.1-8B"},
        {"8b llama 3.1", "meta-llama/Llama-3.1-8B"},
        {"llama-3.1-8b", "llama-3.1-8b"},  // a preset's own id
        {"Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"},
        {"llama 3.1 8b instruct", "meta-llama/Llama-3.1-8B-Instruct"},
        {"Qwen3 30B A3B", "Qwen/Qwen3-30B-A3B"},
        {"phi-4", "microsoft/phi-4"},
        {"gemma 2 9b", "google/gemma-2-9b"},
        {"stablelm 2 zephyr 1_6b", "stabilityai/stablelm-2-zephyr-1_6b"},
        {"mistral 7b", "mistral-7b"},  // the preset: the catalog's is Mistral-7B-v0.1
        {"deepseek r1 distill qwen 14b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"},
    };
    for (auto [query, id] : cases) {
        INFO(query);
        const std::vector<ModelMatch> r = search_models(query, 10);
        REQUIRE(!r.empty());
        CHECK(r[0].id == id);
        CHECK(r[0].match == MatchKind::exact);
    }
}

TEST_CASE("partial text and small typos still find the model") {
    CHECK(first("qwen3 8") == "Qwen/Qwen3-8B");  // typing in progress
    CHECK(search_models("qwen3 8", 10)[0].match == MatchKind::prefix);
    CHECK(first("gemma 3 12b") == "google/gemma-3-12b-it");
    CHECK(first("mistral small") == "mistralai/Mistral-Small-24B-Instruct-2501");
    CHECK(first("qwne3 8b") == "Qwen/Qwen3-8B");  // a transposition
    CHECK(search_models("qwne3 8b", 10)[0].match == MatchKind::fuzzy);
    CHECK(first("lama 3.1 8b") == "meta-llama/Llama-3.1-8B");  // a letter missing
    CHECK(first("smollm2 1.7") == "HuggingFaceTB/SmolLM2-1.7B");
    CHECK(search_models("zzzz qqqq", 10).empty());
    // Another organisation's upload: the model of that name, never as an exact match.
    CHECK(first("https://huggingface.co/unsloth/Qwen3-8B") == "Qwen/Qwen3-8B");
    CHECK(search_models("unsloth/Qwen3-8B", 10)[0].match == MatchKind::fuzzy);
    CHECK(search_models("", 10).empty());
    CHECK(search_models("  / - . _ ", 10).empty());
    CHECK(search_models(std::string(100000, 'a'), 10).empty());
}

TEST_CASE("results carry the id, the name and the parameter count, in a deterministic order") {
    const std::vector<ModelMatch> r = search_models("qwen3", 100);
    REQUIRE(r.size() > 10);
    CHECK(search_models("qwen3", 5).size() == 5);
    for (std::size_t i = 0; i < r.size(); ++i) {
        INFO(r[i].id);
        CHECK(r[i].parameters > 0);
        CHECK(!r[i].name.empty());
        if (i) CHECK(int(r[i - 1].match) <= int(r[i].match));
    }
    const std::vector<ModelMatch> again = search_models("qwen3", 100);
    for (std::size_t i = 0; i < r.size(); ++i) CHECK(again[i].id == r[i].id);
    // The preset's published name, the catalog id's own name; the count as the estimate reads it.
    const std::vector<ModelMatch> llama = search_models("llama-3.1-8b", 2);
    CHECK(llama[0].name == "Llama 3.1 8B");
    CHECK(llama[1].id == "meta-llama/Llama-3.1-8B");
    CHECK(llama[1].name == "Llama-3.1-8B");
    // transformers' count of meta-llama/Llama-3.1-8B's config.json (tests/data/hf_configs/expected.json)
    CHECK(llama[0].parameters == 8030261248u);
    CHECK(llama[1].parameters == 8030261248u);
}

TEST_CASE("every preset and catalog id finds itself first; each catalog id's name names it alone") {
    for (const ModelPreset& p : model_presets()) CHECK(first(p.arch.id) == p.arch.id);
    for (const CatalogModel& m : model_catalog()) {
        INFO(m.id);
        const std::string id = m.id;
        CHECK(first(id) == id);
        CHECK(exact_models(id.substr(id.find('/') + 1)) == std::vector<std::string>{id});
    }
}

TEST_CASE("a configuration's model: an unambiguous spelling reads as its canonical id, else an error with the closest") {
    CHECK(resolved("llama-2-7b") == "llama-2-7b");  // exact ids as before
    CHECK(resolved("QWEN/qwen3-8B") == "Qwen/Qwen3-8B");
    CHECK(resolved("Qwen3-8B") == "Qwen/Qwen3-8B");
    CHECK(resolved("llama 3.1 8b") == "meta-llama/Llama-3.1-8B");
    CHECK(resolved("GPT2") == "openai-community/gpt2");
    // Presets only by their ids, as before: the catalog's meta-llama/Llama-2-7b-hf is not "llama 2 7b".
    CHECK(resolved("LLAMA-2-7B").rfind("error: model: unknown model \"LLAMA-2-7B\" (did you mean llama-2-7b", 0) == 0);
    CHECK(resolved("Meta-Llama-3.1-8B-Instruct") == "meta-llama/Llama-3.1-8B-Instruct");
    CHECK(resolved("https://huggingface.co/microsoft/phi-4/tree/main") == "microsoft/phi-4");
    // The echo is the canonical id.
    const ApiResult r = answer_json(R"({"model":"qwen3 8b"})");
    REQUIRE(r.ok);
    CHECK(json::parse(r.json)["config"]["model"] == "Qwen/Qwen3-8B");
    // A typo, a missing suffix, a number that is not there: never guessed, the closest ids named.
    CHECK(resolved("qwne3-8b").rfind("error: model: unknown model \"qwne3-8b\" (did you mean Qwen/Qwen3-8B, "
                                     "Qwen/Qwen3-8B-Base or Qwen/Qwen3-4B?); presets: gpt2, ", 0) == 0);
    CHECK(resolved("gemma-3-12b").rfind("error: model: unknown model \"gemma-3-12b\" (did you mean google/gemma-3-12b-it", 0) == 0);
    CHECK(resolved("Qwen/Qwen3-9B").find("Qwen/Qwen3-8B") != std::string::npos);
    CHECK(resolved("3.1 8b").rfind("error: model: unknown model", 0) == 0);  // numbers alone name no model
    CHECK(resolved("unsloth/Qwen3-8B").rfind("error: model: unknown model \"unsloth/Qwen3-8B\" (did you mean Qwen/Qwen3-8B", 0) == 0);
    // The teacher and the other model keys read the same way.
    const ParsedConfig p = parse_config(json{{"method", "distill"}, {"model", "qwen3 0.6b"}, {"teacher", "Qwen3-8B"},
                                             {"prompt_len", 64}, {"completion_len", 64}});
    REQUIRE(p.ok());
    CHECK(p.config.teacher.id == "Qwen/Qwen3-8B");
}

TEST_CASE("searchModels: JSON results, bad arguments named") {
    const ApiResult r = search_models_json("Qwen3-8B", 3);
    REQUIRE(r.ok);
    const json j = json::parse(r.json);
    REQUIRE(j["results"].size() == 3);
    // 8190735360: transformers' count of Qwen/Qwen3-8B's config.json (tests/data/hf_configs/expected.json)
    CHECK(j["results"][0] == json{{"id", "Qwen/Qwen3-8B"}, {"name", "Qwen3-8B"}, {"parameters", 8190735360u}, {"match", "exact"}});
    CHECK(j["results"][1]["match"] == "prefix");
    CHECK(j["resolves"] == "Qwen/Qwen3-8B");
    CHECK(json::parse(search_models_json("nothing like it", 10).json) == json{{"results", json::array()}, {"resolves", nullptr}});
    // What a name resolves to, as the issue asks (the one catalog model a spelling names; a preset by its exact id
    // only; a typo, a missing suffix or several candidates never), in the search and in a configuration's model.
    const std::vector<std::pair<const char*, const char*>> names = {
        {"Qwen3-8B", "Qwen/Qwen3-8B"}, {"qwen/qwen3-8b", "Qwen/Qwen3-8B"}, {"llama-2-7b", "llama-2-7b"},
        {"LLAMA-2-7B", nullptr}, {"llama 3.1 8b", "meta-llama/Llama-3.1-8B"}, {"qwne3-8b", nullptr},
        {"https://huggingface.co/Qwen/Qwen3-8B/tree/main", "Qwen/Qwen3-8B"}, {"gemma-3-12b", nullptr},
        {"mistral 7b", nullptr}};
    for (const auto& [text, id] : names) {
        INFO(text);
        const json resolves = json::parse(search_models_json(text, 5).json)["resolves"];
        const ParsedConfig p = parse_config(json{{"model", text}});
        CHECK(resolves == (id ? json(id) : json(nullptr)));
        CHECK(p.ok() == (id != nullptr));
        if (id && p.ok()) CHECK(p.config.model.id == id);
    }
    const ApiResult bad = search_models_json("qwen", 0);
    CHECK(!bad.ok);
    CHECK(json::parse(bad.json)["errors"][0]["field"] == "limit");
    CHECK(json::parse(search_models_json(std::string(513, 'q'), 10).json)["errors"][0]["field"] == "query");
}

TEST_CASE("models(): each catalog model's type as its config.json says") {
    const json list = json::parse(models_json());
    REQUIRE(list["catalog"].size() == model_catalog().size());
    for (std::size_t i = 0; i < model_catalog().size(); ++i) {
        INFO(model_catalog()[i].id);
        CHECK(list["catalog"][i]["model_type"] == json::parse(model_catalog()[i].config).value("model_type", ""));
    }
}
