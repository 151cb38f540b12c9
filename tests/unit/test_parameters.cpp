// Parameter counts against the figures the model publishers state (model cards / safetensors metadata).
#include <catch2/catch.hpp>

#include "model/architecture.hpp"
#include "model/presets.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;

TEST_CASE("preset parameter counts equal the published ones") {
    const std::pair<const char*, std::uint64_t> published[] = {
        {"gpt2", 124439808},          {"gpt2-medium", 354823168},     {"gpt2-large", 774030080},
        {"gpt2-xl", 1557611200},      {"llama-2-7b", 6738415616},     {"llama-2-13b", 13015864320},
        {"llama-2-70b", 68976648192}, {"llama-30b", 32528943616},     {"llama-3-8b", 8030261248},
        {"llama-3-70b", 70553706496}, {"llama-3.1-8b", 8030261248},   {"llama-3.1-70b", 70553706496},
        {"llama-3.2-1b", 1235814400}, {"llama-3.2-3b", 3212749824},   {"mistral-7b", 7241732096},
        {"mixtral-8x7b", 46702792704}, {"qwen2.5-7b", 7615616512},    {"qwen2.5-14b", 14770033664},
        {"qwen2.5-72b", 72706203648}, {"gemma-2b", 2506172416},       {"gemma-7b", 8537680896},
        {"phi-3-mini", 3821079552},
    };
    for (auto [id, count] : published) {
        INFO(id);
        const ModelPreset* p = find_model_preset(id);
        REQUIRE(p != nullptr);
        CHECK(total_params(p->arch) == count);
    }
    CHECK(model_presets().size() == std::size(published));
}

TEST_CASE("parameter tensors add up to the parameter count") {
    for (const ModelPreset& p : model_presets()) {
        INFO(p.arch.id);
        std::uint64_t n = 0;
        for (const Tensor& t : parameter_tensors(p.arch)) n += t.numel() * t.count;
        CHECK(n == total_params(p.arch));
    }
}

TEST_CASE("Hugging Face configs give the published counts") {
    struct Case {
        const char* config;
        std::uint64_t published;
    };
    const Case cases[] = {
        // EleutherAI/pythia-160m
        {R"({"model_type":"gpt_neox","num_hidden_layers":12,"hidden_size":768,"num_attention_heads":12,
             "intermediate_size":3072,"vocab_size":50304,"max_position_embeddings":2048,"tie_word_embeddings":false})",
         162322944},
        // microsoft/phi-2
        {R"({"model_type":"phi","num_hidden_layers":32,"hidden_size":2560,"num_attention_heads":32,
             "intermediate_size":10240,"vocab_size":51200,"max_position_embeddings":2048})",
         2779683840},
        // meta-llama/Llama-2-7b-hf
        {R"({"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
             "num_key_value_heads":32,"intermediate_size":11008,"vocab_size":32000,"tie_word_embeddings":false})",
         6738415616},
        // Qwen/Qwen2.5-7B (qkv biases implied by model_type)
        {R"({"model_type":"qwen2","num_hidden_layers":28,"hidden_size":3584,"num_attention_heads":28,
             "num_key_value_heads":4,"intermediate_size":18944,"vocab_size":152064,"tie_word_embeddings":false})",
         7615616512},
        // google/gemma-2b (tied by default, head_dim 256)
        {R"({"model_type":"gemma","num_hidden_layers":18,"hidden_size":2048,"num_attention_heads":8,
             "num_key_value_heads":1,"head_dim":256,"intermediate_size":16384,"vocab_size":256000})",
         2506172416},
        // openai-community/gpt2
        {R"({"model_type":"gpt2","n_layer":12,"n_embd":768,"n_head":12,"vocab_size":50257,"n_positions":1024})",
         124439808},
        // mistralai/Mixtral-8x7B-v0.1
        {R"({"model_type":"mixtral","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
             "num_key_value_heads":8,"intermediate_size":14336,"vocab_size":32000,"num_local_experts":8,
             "num_experts_per_tok":2})",
         46702792704},
    };
    for (const Case& c : cases) {
        INFO(c.config);
        ParsedConfig p = parse_config(std::string(R"({"seq_len":512,"model":{"hf_config":)") + c.config + "}}");
        REQUIRE(p.ok());
        CHECK(total_params(p.config.model) == c.published);
    }
}

TEST_CASE("LoRA adapter counts follow r x (in + out) per adapted projection") {
    // PEFT's print_trainable_parameters for Llama-2-7B, r=8 on q_proj and v_proj: 4,194,304.
    const Architecture& a = find_model_preset("llama-2-7b")->arch;
    CHECK(lora_params(a, 8, {"q_proj", "v_proj"}) == 4194304);
    // Llama-3-8B, r=16 on q,k,v,o: q 16*(4096+4096), k,v 16*(4096+1024), o 16*(4096+4096), 32 layers.
    const Architecture& b = find_model_preset("llama-3-8b")->arch;
    CHECK(lora_params(b, 16, {"q_proj", "k_proj", "v_proj", "o_proj"}) == 13631488);
}
