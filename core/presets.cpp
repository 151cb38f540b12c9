#include "presets.hpp"

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

// Memory as nvidia-smi reports the board's total (MiB; rocm-smi for the MI300X): what the driver, the
// CUDA context and PyTorch share. Bandwidth in GB/s and dense (non-sparse) bf16 tensor TFLOP/s with fp32
// accumulation from the vendors' data sheets; 0 TFLOP/s where the chip has no bf16 tensor cores.
// Figures from each vendor's datasheet: memory as the driver reports it; HBM GB/s; dense (not sparse) tensor-core
// TFLOP/s in bf16 and fp16 (GeForce: with fp32 accumulation), fp32 without tensor cores; links per direction
// (datasheets give both directions: NVLink 600 GB/s is 300 each way; "PCIe Gen4 64 GB/s" 32); the network per
// GPU of the vendor's reference system (DGX A100: 8x 200 Gb/s HDR; DGX H100/H200/B200: 8x 400 Gb/s NDR), 0 where
// there is none.
const std::vector<Gpu>& gpu_catalog() {
    constexpr double MiB = 1.0 / 1024;  // in GiB
    static const std::vector<Gpu> table = {
        // NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TF bf16/fp16, 19.5 fp32, NVLink 600 GB/s, PCIe Gen4 64 GB/s
        {"a100-40gb", "NVIDIA A100 40GB SXM", 40960 * MiB, 1555, 312, 312, 19.5, 300, 32, 25},
        {"a100-80gb", "NVIDIA A100 80GB SXM", 81920 * MiB, 2039, 312, 312, 19.5, 300, 32, 25},
        {"a100-40gb-pcie", "NVIDIA A100 40GB PCIe", 40960 * MiB, 1555, 312, 312, 19.5, 32, 32, 0},
        {"a100-80gb-pcie", "NVIDIA A100 80GB PCIe", 81920 * MiB, 1935, 312, 312, 19.5, 32, 32, 0},
        // NVIDIA H100 Tensor Core GPU datasheet: SXM 989 TF bf16 dense (1979 sparse), 67 fp32, NVLink 900 GB/s,
        // PCIe Gen5 128 GB/s; PCIe card 756 TF, 51 fp32
        {"h100-80gb", "NVIDIA H100 80GB SXM", 81559 * MiB, 3350, 989, 989, 67, 450, 64, 50},
        {"h100-80gb-pcie", "NVIDIA H100 80GB PCIe", 81559 * MiB, 2000, 756, 756, 51, 64, 64, 0},
        // NVIDIA H200 datasheet: H100's compute, 4.8 TB/s
        {"h200", "NVIDIA H200 141GB SXM", 143771 * MiB, 4800, 989, 989, 67, 450, 64, 50},
        // NVIDIA HGX B200 datasheet: 2.25 PF bf16 dense per GPU, NVLink 1.8 TB/s
        {"b200", "NVIDIA B200 180GB", 183359 * MiB, 8000, 2250, 2250, 0, 900, 64, 50},
        // NVIDIA L40S, L4 and A10 datasheets (PCIe Gen4 x16)
        {"l40s", "NVIDIA L40S 48GB", 46068 * MiB, 864, 362, 362, 91.6, 32, 32, 0},
        {"l4", "NVIDIA L4 24GB", 23034 * MiB, 300, 121, 121, 30.3, 32, 32, 0},
        {"a10", "NVIDIA A10 24GB", 23028 * MiB, 600, 125, 125, 31.2, 32, 32, 0},
        {"a10g", "NVIDIA A10G 24GB", 23028 * MiB, 600, 70, 70, 0, 32, 32, 0},
        // NVIDIA Ampere GA102 and Ada AD102 whitepapers: tensor TFLOPS with fp32 accumulation
        {"rtx-3090", "NVIDIA GeForce RTX 3090 24GB", 24576 * MiB, 936, 35.6, 35.6, 35.6, 32, 32, 0},
        {"rtx-4090", "NVIDIA GeForce RTX 4090 24GB", 24564 * MiB, 1008, 82.6, 82.6, 82.6, 32, 32, 0},
        // NVIDIA V100 datasheet (SXM2: 125 TF fp16, 15.7 fp32, NVLink 300 GB/s); T4 datasheet (65 TF fp16, PCIe Gen3)
        {"v100-16gb", "NVIDIA V100 16GB", 16384 * MiB, 900, 0, 125, 15.7, 150, 16, 0},
        {"v100-32gb", "NVIDIA V100 32GB", 32768 * MiB, 900, 0, 125, 15.7, 150, 16, 0},
        {"t4", "NVIDIA T4 16GB", 15360 * MiB, 320, 0, 65, 8.1, 16, 16, 0},
        // AMD Instinct MI300X datasheet: 1307.4 TF bf16 dense, 163.4 fp32, Infinity Fabric 896 GB/s, PCIe Gen5
        {"mi300x", "AMD Instinct MI300X 192GB", 196592 * MiB, 5300, 1307, 1307, 163.4, 448, 64, 0},
    };
    return table;
}

const std::vector<Scenario>& scenarios() {
    static const std::vector<Scenario> table = {
        {"7b-zero2-offload-a100-80gb", "Llama 2 7B full fine-tune on one A100 80GB: ZeRO-2, optimizer on CPU, checkpointing",
         R"({"model":"llama-2-7b","gpu":"a100-80gb","precision":"bf16-mixed","strategy":"deepspeed","zero":2,)"
         R"("offload":"optimizer","checkpointing":"full","seq_len":2048,"micro_batch":4})"},
        {"13b-zero3-offload-2xa100", "Llama 2 13B on 2x A100 80GB: ZeRO-3 with optimizer and parameters on CPU",
         R"({"model":"llama-2-13b","gpu":"a100-80gb","gpus":2,"precision":"bf16-mixed","strategy":"deepspeed",)"
         R"("zero":3,"offload":"optimizer+params","checkpointing":"full","seq_len":2048,"micro_batch":4})"},
        {"30b-fsdp-4xa100", "LLaMA 33B on 4x A100 80GB, fully sharded (FSDP FULL_SHARD) with CPU offload and checkpointing",
         R"({"model":"llama-30b","gpu":"a100-80gb","gpus":4,"precision":"bf16-mixed","strategy":"fsdp","zero":3,)"
         R"("offload":"optimizer+params","checkpointing":"full","seq_len":2048,"micro_batch":1})"},
    };
    return table;
}

const ModelPreset* find_model_preset(const std::string& id) {
    for (const ModelPreset& p : model_presets())
        if (p.arch.id == id) return &p;
    return nullptr;
}

bool supports_fp8(const Gpu& g) {
    for (const char* id : {"h100-80gb", "h100-80gb-pcie", "h200", "b200", "l40s", "l4", "rtx-4090", "mi300x"})
        if (g.id == id) return true;
    return false;
}

const Gpu* find_gpu(const std::string& id) {
    for (const Gpu& g : gpu_catalog())
        if (g.id == id) return &g;
    return nullptr;
}

}  // namespace vramcalc
