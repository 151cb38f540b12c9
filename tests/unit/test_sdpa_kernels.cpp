// Which scaled_dot_product_attention kernel runs on CUDA, against PyTorch's selection rules
// (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, sdp_utils_cpp.h, torch 2.5-2.14: flash and cuDNN take fp16
// and bf16 on sm80 and newer, the memory-efficient kernel fp32 too but no grouped heads; pytorch/pytorch#191085 and
// facebookresearch/sapiens2#3 describe fp32 with enable_gqa falling to the math path) and what each saves for backward
// (the math path: the scaled q, k and v repeated to every head, the fp32 probabilities; the fused kernels: q, k, v,
// the output and the fp32 log-sum-exp). PyTorch's CPU flash kernel takes fp32 and grouped heads: the CPU estimate,
// measured on real steps, is the flash side of each difference.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "memory/estimate.hpp"
#include "parsed_config.hpp"

using namespace vramcalc;

namespace {

double forward_activations(nlohmann::json j) {
    const MemoryEstimate m = estimate_memory(parsed(j));
    return m.phases[0].terms.activations;
}

}  // namespace

TEST_CASE("SDPA on CUDA: fp32 with grouped heads runs the math path, whose probabilities are saved") {
    // Llama-3.2-1B: 16 layers, 32 query heads and 8 kv heads of 64; transformers passes enable_gqa (no mask).
    const nlohmann::json run = {{"model", "meta-llama/Llama-3.2-1B"}, {"precision", "32-true"}, {"seq_len", 2048},
                                {"micro_batch", 2}};
    nlohmann::json cpu = run;
    cpu["device"] = "cpu";
    const double L = 16, H = 32, B = 2, S = 2048, n = B * S, q = 32 * 64, kv = 8 * 64;
    const double math = 4 * n * q + 2 * 4 * n * q + 4 * B * H * S * S + 4 * n * q;  // scaled q, k and v, probabilities, o_proj's input
    const double flash = 4 * n * (q + 2 * kv) + 4 * n * q + 4 * n * H;              // q, k, v, output, log-sum-exp
    CHECK(forward_activations(run) - forward_activations(cpu) == Approx(L * (math - flash)));
}

TEST_CASE("SDPA on CUDA: the fused kernels where a dtype and the heads allow one") {
    for (const nlohmann::json& run : {
             // bf16 under autocast: flash (sm80+), with grouped heads.
             nlohmann::json{{"model", "meta-llama/Llama-3.2-1B"}, {"precision", "bf16-mixed"}, {"seq_len", 2048}},
             // fp32 without grouped heads: the memory-efficient kernel.
             nlohmann::json{{"model", "llama-2-7b"}, {"precision", "32-true"}, {"seq_len", 1024}},
         }) {
        INFO(run.dump());
        nlohmann::json cpu = run;
        cpu["device"] = "cpu";
        CHECK(forward_activations(run) == Approx(forward_activations(cpu)));
    }
}

TEST_CASE("SDPA on CUDA: bf16 on a GPU without bf16 kernels (T4) runs the math path in every layer") {
    const nlohmann::json t4 = {{"model", "llama-2-7b"}, {"precision", "bf16-mixed"}, {"gpu", "t4"}, {"seq_len", 1024}};
    nlohmann::json a100 = t4;
    a100["gpu"] = "a100-40gb";
    // 32 layers of 32 heads of 128: the math path upcasts to fp32 (torch 2.5+, allow_fp16_bf16_reduction_math_sdp
    // off) and saves the fp32 scaled q, k and v and probabilities, o_proj its bf16 input; flash the bf16 q, k, v and
    // output and the log-sum-exp.
    const double L = 32, H = 32, S = 1024, n = S, q = 32 * 128;
    const double math = 3 * 4 * n * q + 4 * H * S * S + 2 * n * q, flash = 3 * 2 * n * q + 2 * n * q + 4 * n * H;
    CHECK(forward_activations(t4) - forward_activations(a100) == Approx(L * (math - flash)));
}

TEST_CASE("SDPA on CUDA: fp16 with grouped heads below sm80 (T4) runs the math path, fp16 without them does not") {
    // A T4's default: the profile's recipe in fp16. Llama-3.2-1B's grouped heads reach SDPA: flash and cuDNN need
    // sm80, the memory-efficient kernel takes fp16 there but no grouped heads.
    const nlohmann::json t4 = {{"model", "meta-llama/Llama-3.2-1B"}, {"gpu", "t4"}, {"seq_len", 1024}};
    nlohmann::json a100 = t4;
    a100["gpu"] = "a100-40gb";
    a100["precision"] = "16-mixed";
    const double L = 16, H = 32, S = 1024, n = S, q = 32 * 64, kv = 8 * 64;
    const double math = 3 * 4 * n * q + 4 * H * S * S + 2 * n * q, flash = 2 * n * (q + 2 * kv) + 2 * n * q + 4 * n * H;
    CHECK(forward_activations(t4) - forward_activations(a100) == Approx(L * (math - flash)));
    nlohmann::json mha = {{"model", "llama-2-7b"}, {"gpu", "t4"}, {"seq_len", 1024}};
    nlohmann::json mha_a100 = mha;
    mha_a100["gpu"] = "a100-40gb";
    mha_a100["precision"] = "16-mixed";
    CHECK(forward_activations(mha) == Approx(forward_activations(mha_a100)));
}
