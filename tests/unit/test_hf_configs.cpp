// Real config.json files and transformers-built variants of every supported model_type: vramcalc reads each
// to exactly the parameter count transformers builds (counted on the meta device, tests/data/hf_configs/),
// and to the publisher's figure within its rounding. The catalog's ids resolve to their configs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/architecture.hpp"
#include "model/hf_config.hpp"
#include "model/model_catalog.hpp"
#include "model/model_json.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

json read_json(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::stringstream s;
    s << in.rdbuf();
    return json::parse(s.str());
}

std::uint64_t count(const json& hf) {
    const ParsedConfig p = parse_config(json{{"model", {{"hf_config", hf}}}, {"seq_len", 64}});
    INFO((p.ok() ? std::string() : p.errors[0].field + ": " + p.errors[0].message));
    REQUIRE(p.ok());
    return total_params(p.config.model);
}

const std::string kDir = std::string(VRAMCALC_SOURCE_DIR) + "/tests/data/";

}  // namespace

TEST_CASE("real config.json files count as transformers builds them and as published") {
    const json expected = read_json(kDir + "hf_configs/expected.json");
    REQUIRE(expected.size() >= 29);
    for (auto it = expected.begin(); it != expected.end(); ++it) {
        INFO(it.key());
        const json& e = it.value();
        const std::uint64_t n = count(read_json(kDir + "hf_configs/" + it.key()));
        const json& want = e["transformers_params"].is_null() ? e["manual_params"] : e["transformers_params"];
        CHECK(n == want.get<std::uint64_t>());
        const double published = e["published"]["value"].get<double>(), tolerance = e["published"]["tolerance"].get<double>();
        if (!e.contains("published_differs")) CHECK(std::fabs(double(n) - published) <= tolerance);
    }
}

TEST_CASE("every family's layout variants count as transformers builds them") {
    std::ifstream in(kDir + "hf_configs/variants.jsonl");
    REQUIRE(in.good());
    std::size_t cases = 0;
    for (std::string line; std::getline(in, line);) {
        const json r = json::parse(line);
        INFO(r["name"].get<std::string>());
        CHECK(count(r["hf_config"]) == r["transformers_params"].get<std::uint64_t>());
        // The closed-form sum of the projections' weights equals the sum over the named projections, and
        // the parameter tensors add up to the count.
        const Architecture a = parse_config(json{{"model", {{"hf_config", r["hf_config"]}}}, {"seq_len", 64}}).config.model;
        std::uint64_t linear = 0, tensors = 0;
        for (const Linear& l : layer_linears(a)) linear += l.in * l.out * l.count * (l.layers ? l.layers : a.layers);
        for (const Tensor& t : parameter_tensors(a)) tensors += t.numel() * t.count;
        CHECK(linear_weight_params(a) == linear);
        CHECK(tensors == total_params(a));
        ++cases;
    }
    CHECK(cases >= 56);
}

TEST_CASE("every catalog id resolves, to its published count where one is known") {
    REQUIRE(model_catalog().size() >= 150);
    for (const CatalogModel& m : model_catalog()) {
        INFO(m.id);
        const ParsedConfig p = parse_config(json{{"model", m.id}});
        REQUIRE(p.ok());
        CHECK(p.config.model.id == m.id);
    }
    std::ifstream in(kDir + "model_catalog/sources.jsonl");
    REQUIRE(in.good());
    std::size_t checked = 0;
    for (std::string line; std::getline(in, line);) {
        const json r = json::parse(line);
        const std::string id = r["id"].get<std::string>();
        INFO(id);
        const CatalogModel* m = find_catalog_model(id);
        REQUIRE(m != nullptr);
        // The compact entry reads to the same architecture as the full config it was made from.
        const ParsedConfig full = parse_config(json{{"model", {{"hf_config", r["config"]}}}});
        const ParsedConfig compact = parse_config(json{{"model", id}});
        REQUIRE(full.ok());
        json a = architecture_to_json(full.config.model), b = architecture_to_json(compact.config.model);
        CHECK(a == b);
        if (r["published_params"].is_object()) {
            const json& pub = r["published_params"];
            CHECK(std::fabs(double(total_params(compact.config.model)) - pub["value"].get<double>()) <=
                  pub["tolerance"].get<double>());
            ++checked;
        }
    }
    CHECK(checked >= 50);
}

TEST_CASE("catalog ids are found case-insensitively and from hub URLs") {
    CHECK(find_catalog_model("Qwen/Qwen3-8B") != nullptr);
    CHECK(find_catalog_model("qwen/qwen3-8b") != nullptr);
    CHECK(find_catalog_model("https://huggingface.co/Qwen/Qwen3-8B") != nullptr);
    CHECK(find_catalog_model("https://huggingface.co/Qwen/Qwen3-8B/tree/main") != nullptr);
    CHECK(find_catalog_model("hf.co/Qwen/Qwen3-8B/") != nullptr);
    CHECK(find_catalog_model("Qwen/Qwen3-8") == nullptr);
    CHECK(find_catalog_model(std::string(10000, 'a')) == nullptr);
}

TEST_CASE("an unknown model_type: a generic decoder with a warning, or a clear refusal") {
    const json usual = {{"model_type", "mystery"}, {"num_hidden_layers", 2}, {"hidden_size", 64},
                        {"num_attention_heads", 4}, {"intermediate_size", 128}, {"vocab_size", 100}};
    const ParsedConfig p = parse_config(json{{"model", {{"hf_config", usual}}}});
    REQUIRE(p.ok());
    REQUIRE(p.config.notes.size() == 1);
    CHECK(p.config.notes[0].find("generic") != std::string::npos);
    const ParsedConfig q = parse_config(json{{"model", {{"hf_config", {{"model_type", "mystery"}, {"foo", 1}}}}}});
    REQUIRE_FALSE(q.ok());
    CHECK(q.errors[0].field == "model.hf_config.model_type");
    CHECK(q.errors[0].message.find("qwen3") != std::string::npos);
    CHECK(q.errors[0].message.find("explicit") != std::string::npos);
}

TEST_CASE("activation functions are read by name, not guessed from the layout") {
    // A GPT-2-shaped model with a fused GELU, and phi-2 (learned positions absent) with gelu_new.
    json gpt2 = {{"model_type", "gpt2"}, {"n_layer", 2}, {"n_embd", 64}, {"n_head", 4}, {"vocab_size", 100},
                 {"n_positions", 128}, {"activation_function", "gelu_pytorch_tanh"}};
    ParsedConfig p = parse_config(json{{"model", {{"hf_config", gpt2}}}, {"seq_len", 128}});
    REQUIRE(p.ok());
    CHECK(p.config.model.activation == Activation::gelu_tanh);
    const json phi = read_json(kDir + "hf_configs/phi__phi-2.json");
    p = parse_config(json{{"model", {{"hf_config", phi}}}});
    REQUIRE(p.ok());
    CHECK(p.config.model.activation == Activation::gelu_new);
    // The explicit form names it too, and refuses an unknown one.
    p = parse_config(json::parse(R"({"model":{"layers":2,"hidden":64,"heads":4,"ffn":128,"vocab":100,"mlp":"gelu",)"
                                 R"("position":"learned","max_positions":128,"activation":"gelu_pytorch_tanh"},"seq_len":128})"));
    REQUIRE(p.ok());
    CHECK(p.config.model.activation == Activation::gelu_tanh);
    p = parse_config(json::parse(R"({"model":{"layers":2,"hidden":64,"heads":4,"ffn":128,"vocab":100,"activation":"gelu2"}})"));
    REQUIRE_FALSE(p.ok());
    CHECK(p.errors[0].field == "model.activation");
}

TEST_CASE("configs nested in text_config and quantized checkpoints") {
    const json v3 = read_json(kDir + "hf_configs/deepseek_v3__DeepSeek-V3.json");
    const ParsedConfig p = parse_config(json{{"model", {{"hf_config", v3}}}});
    REQUIRE(p.ok());
    bool fp8 = false;
    for (const std::string& n : p.config.notes) fp8 = fp8 || n.find("FP8") != std::string::npos;
    CHECK(fp8);
    CHECK(p.config.model.kv_lora_rank == 512);
    CHECK(p.config.model.dense_layers == 3);
    const json gemma3 = read_json(kDir + "hf_configs/gemma3__gemma-3-12b-it.json");
    const ParsedConfig g = parse_config(json{{"model", {{"hf_config", gemma3}}}});
    REQUIRE(g.ok());
    CHECK(g.config.model.qk_norm == QkNorm::per_head);
    CHECK(g.config.model.norms_per_layer == 4);
}

TEST_CASE("sizes a config.json leaves out take the configuration class's defaults") {
    // Gemma3TextConfig: vocab_size 262208 and head_dim 256 unless given.
    const json gemma3 = {{"model_type", "gemma3"},
                         {"text_config", {{"hidden_size", 1152}, {"num_hidden_layers", 26}, {"num_attention_heads", 4},
                                          {"num_key_value_heads", 1}, {"intermediate_size", 6912}}}};
    const ParsedConfig p = parse_config(json{{"model", {{"hf_config", gemma3}}}});
    REQUIRE(p.ok());
    CHECK(p.config.model.vocab == 262208);
    CHECK(head_dim(p.config.model) == 256);
    // EXAONE 4 spells its local/global pattern as letters.
    json exaone = json::parse(R"({"model_type":"exaone4","num_hidden_layers":8,"hidden_size":64,"num_attention_heads":4,)"
                              R"("intermediate_size":128,"vocab_size":100,"sliding_window":16,"sliding_window_pattern":"LLLG"})");
    const ParsedConfig e = parse_config(json{{"model", {{"hf_config", exaone}}}});
    REQUIRE(e.ok());
    CHECK(e.config.model.sliding_layers == 6);
}

TEST_CASE("what each activation function saves equals what PyTorch saved for it") {
    // tests/validation/measured_activations.json: saved-for-backward bytes of transformers' ACT2FN modules
    // (torch 2.13), in units of the input, deduplicated by storage, output included when saved.
    const json measured = read_json(std::string(VRAMCALC_SOURCE_DIR) + "/tests/validation/measured_activations.json");
    std::size_t checked = 0;
    for (auto it = measured["activations"].begin(); it != measured["activations"].end(); ++it) {
        const ActivationCost* a = find_activation(it.key());
        if (!a || a->id == Activation::gelu_glu_oss || a->id == Activation::bloom_gelu) continue;
        INFO(it.key());
        for (const char* dtype : {"fp32", "bf16"}) {
            const json& m = it.value()[dtype];
            CHECK(a->saved + (a->saves_output ? 1 : 0) == m["saved"].get<double>());
        }
        ++checked;
    }
    CHECK(checked >= 16);
}

TEST_CASE("a stack's own MLP runs any GELU form as one F.gelu kernel; transformers runs the config's") {
    // microsoft/phi-2's config.json says gelu_new. LitGPT's GptNeoxMLP runs F.gelu(x, approximate=...) and
    // torchtune's Gemma nn.GELU(approximate="tanh"): one fused kernel, saving its input (measured_activations.json's
    // gelu_pytorch_tanh), where transformers' NewGELUActivation saves its intermediates.
    const json phi2 = {{"model_type", "phi"}, {"vocab_size", 51200}, {"hidden_size", 2560}, {"intermediate_size", 10240},
                       {"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"partial_rotary_factor", 0.4},
                       {"hidden_act", "gelu_new"}, {"max_position_embeddings", 2048}};
    const json measured = read_json(std::string(VRAMCALC_SOURCE_DIR) + "/tests/validation/measured_activations.json");
    const double fused = measured["activations"]["gelu_pytorch_tanh"]["bf16"]["saved"].get<double>();
    const double composite = measured["activations"]["gelu_new"]["bf16"]["saved"].get<double>();
    REQUIRE(composite > fused);
    for (const char* framework : {"hf", "litgpt", "torchtune"}) {
        INFO(framework);
        const ParsedConfig p = parse_config(json{{"framework", framework}, {"model", {{"hf_config", phi2}}}});
        REQUIRE(p.ok());
        CHECK(p.config.model.activation == Activation::gelu_new);  // the echo keeps the model's own config
        const ActivationCost& runs = activation_run(p.config.model);
        CHECK(runs.saved + (runs.saves_output ? 1 : 0) == (std::string(framework) == "hf" ? composite : fused));
        const bool noted = std::any_of(p.config.notes.begin(), p.config.notes.end(),
                                       [](const std::string& n) { return n.find("torch.nn.functional.gelu") != std::string::npos; });
        CHECK(noted == (std::string(framework) != "hf"));
    }
}

TEST_CASE("LitGPT holds its own lm_head whatever the checkpoint ties; transformers and torchtune keep it tied") {
    // Llama-3.2-1B's config.json ties the embeddings; LitGPT's GPT has its own lm_head (convert_hf_checkpoint copies
    // wte into it), torchtune's TiedLinear and transformers' tie_weights share one.
    const json tied = {{"model_type", "llama"}, {"vocab_size", 1000}, {"hidden_size", 64}, {"intermediate_size", 128},
                       {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"tie_word_embeddings", true}};
    for (const char* framework : {"hf", "torchtune", "litgpt"}) {
        INFO(framework);
        const ParsedConfig p = parse_config(json{{"framework", framework}, {"model", {{"hf_config", tied}}}});
        REQUIRE(p.ok());
        const bool own = std::string(framework) == "litgpt";
        CHECK(p.config.model.tied_embeddings == !own);
        CHECK(lm_head_params(p.config.model) == (own ? 1000u * 64u : 0u));
    }
}
