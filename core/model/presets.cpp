#include "model/presets.hpp"

namespace vramcalc {

namespace {

Architecture llama(const char* id, std::uint64_t layers, std::uint64_t hidden, std::uint64_t heads,
                   std::uint64_t kv_heads, std::uint64_t ffn, std::uint64_t vocab, std::uint64_t max_positions,
                   bool tied = false) {
    Architecture a;
    a.id = id;
    a.layers = layers, a.hidden = hidden, a.heads = heads, a.kv_heads = kv_heads, a.ffn = ffn, a.vocab = vocab;
    a.max_positions = max_positions, a.tied_embeddings = tied;
    return a;  // RMSNorm, SwiGLU, RoPE, no biases
}

Architecture gpt2(const char* id, std::uint64_t layers, std::uint64_t hidden, std::uint64_t heads) {
    Architecture a;
    a.id = id;
    a.layers = layers, a.hidden = hidden, a.heads = heads, a.kv_heads = heads, a.ffn = 4 * hidden;
    a.family = find_family_row("gpt2"), a.vocab = 50257, a.max_positions = 1024, a.mlp = Mlp::gelu, a.activation = Activation::gelu_new;
    a.norm = Norm::layernorm, a.attention_bias = a.mlp_bias = true;
    a.tied_embeddings = true, a.position = Position::learned;
    a.set_dropout(0.1);
    return a;
}

Architecture with(Architecture a, void (*edit)(Architecture&)) {
    edit(a);
    return a;
}

}  // namespace

// Shapes from each model's config.json on the Hugging Face Hub (the `source` column).
const std::vector<ModelPreset>& model_presets() {
    static const std::vector<ModelPreset> table = {
        {"GPT-2 (124M)", "openai-community/gpt2", gpt2("gpt2", 12, 768, 12)},
        {"GPT-2 Medium (355M)", "openai-community/gpt2-medium", gpt2("gpt2-medium", 24, 1024, 16)},
        {"GPT-2 Large (774M)", "openai-community/gpt2-large", gpt2("gpt2-large", 36, 1280, 20)},
        {"GPT-2 XL (1.5B)", "openai-community/gpt2-xl", gpt2("gpt2-xl", 48, 1600, 25)},
        {"Llama 2 7B", "meta-llama/Llama-2-7b-hf", llama("llama-2-7b", 32, 4096, 32, 32, 11008, 32000, 4096)},
        {"Llama 2 13B", "meta-llama/Llama-2-13b-hf", llama("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, 4096)},
        {"Llama 2 70B", "meta-llama/Llama-2-70b-hf", llama("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, 4096)},
        {"LLaMA 33B", "huggyllama/llama-30b", llama("llama-30b", 60, 6656, 52, 52, 17920, 32000, 2048)},
        {"Llama 3 8B", "meta-llama/Meta-Llama-3-8B", llama("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192)},
        {"Llama 3 70B", "meta-llama/Meta-Llama-3-70B", llama("llama-3-70b", 80, 8192, 64, 8, 28672, 128256, 8192)},
        {"Llama 3.1 8B", "meta-llama/Llama-3.1-8B", llama("llama-3.1-8b", 32, 4096, 32, 8, 14336, 128256, 131072)},
        {"Llama 3.1 70B", "meta-llama/Llama-3.1-70B",
         llama("llama-3.1-70b", 80, 8192, 64, 8, 28672, 128256, 131072)},
        {"Llama 3.2 1B", "meta-llama/Llama-3.2-1B", llama("llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, true)},
        {"Llama 3.2 3B", "meta-llama/Llama-3.2-3B", llama("llama-3.2-3b", 28, 3072, 24, 8, 8192, 128256, 131072, true)},
        {"Mistral 7B", "mistralai/Mistral-7B-v0.1", llama("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768)},
        {"Mixtral 8x7B", "mistralai/Mixtral-8x7B-v0.1",
         with(llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768),
              [](Architecture& a) { a.experts = 8, a.experts_per_token = 2; })},
        {"Qwen2.5 7B", "Qwen/Qwen2.5-7B",
         with(llama("qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064, 131072), [](Architecture& a) { a.qkv_bias = true; })},
        {"Qwen2.5 14B", "Qwen/Qwen2.5-14B",
         with(llama("qwen2.5-14b", 48, 5120, 40, 8, 13824, 152064, 131072), [](Architecture& a) { a.qkv_bias = true; })},
        {"Qwen2.5 72B", "Qwen/Qwen2.5-72B",
         with(llama("qwen2.5-72b", 80, 8192, 64, 8, 29568, 152064, 131072), [](Architecture& a) { a.qkv_bias = true; })},
        {"Gemma 2B", "google/gemma-2b",
         with(llama("gemma-2b", 18, 2048, 8, 1, 16384, 256000, 8192, true),
              [](Architecture& a) { a.head_dim = 256, a.mlp = Mlp::geglu, a.activation = Activation::gelu_tanh; })},
        {"Gemma 7B", "google/gemma-7b",
         with(llama("gemma-7b", 28, 3072, 16, 16, 24576, 256000, 8192, true),
              [](Architecture& a) { a.head_dim = 256, a.mlp = Mlp::geglu, a.activation = Activation::gelu_tanh; })},
        {"Phi-3 mini (3.8B)", "microsoft/Phi-3-mini-4k-instruct",
         with(llama("phi-3-mini", 32, 3072, 32, 32, 8192, 32064, 4096), [](Architecture& a) { a.family = find_family_row("phi3"); })},
    };
    return table;
}

const ModelPreset* find_model_preset(const std::string& id) {
    for (const ModelPreset& p : model_presets())
        if (p.arch.id == id) return &p;
    return nullptr;
}

}  // namespace vramcalc
