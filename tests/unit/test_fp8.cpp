// FP8 training against closed forms from what the libraries save and keep: Transformer Engine v2.18 read from its
// source (tests/validation/stacks/fp8 Part A), torchao's Float8Linear under autocast (Part B).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "memory/estimate.hpp"
#include "memory/memory_terms.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"
#include "time/step_time.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {
// A small Llama (RMSNorm, SwiGLU, GQA) whose tokens outnumber its width: N = 2 x 512.
const double L = 2, h = 256, q = 256, kv = 128, f = 768, V = 2048, N = 1024;
const double P_layer = h * (q + 2 * kv) + q * h + 3 * h * f;  // q, k, v, o, gate, up, down
const double P_lin = L * P_layer, P_head = V * h;

json small(json extra) {
    json j = {{"model", {{"layers", L}, {"hidden", h}, {"heads", 4}, {"kv_heads", 2}, {"ffn", f}, {"vocab", V},
                         {"max_positions", 4096}}},
              {"gpu", "h100-80gb"}, {"seq_len", 512}, {"micro_batch", 2}};
    for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
    return j;
}
json fp8(const char* recipe, json extra = json::object()) {
    extra["precision"] = "fp8", extra["fp8_recipe"] = recipe;
    return small(extra);
}
double phase_bytes(const json& j, const char* name, double Terms::*term) {
    for (const Phase& p : estimate_memory(parsed(j)).phases)
        if (p.name == name) return p.terms.*term;
    return -1;
}
double delta(const json& a, const json& b, const char* phase, double Terms::*term) {
    return phase_bytes(a, phase, term) - phase_bytes(b, phase, term);
}
}  // namespace

TEST_CASE("Transformer Engine: each te.Linear saves its input as a 1-byte fp8 copy (stacks/fp8 A.3, A.6, A.9)") {
    // linear.py _linear_forward: inputmat.update_usage(rowwise_usage=False, columnwise_usage=True), then saved: one
    // byte an element (Hopper's transpose, Blackwell's data; TE issue #1764: "we cache the FP8 data (on Blackwell)
    // or the FP8 transpose data (on Hopper)").
    // accelerate under autocast: q, k, v each saved their own bf16 cast of the norm's fp32 output (2 B), te.Linear
    // its own fp8 copy (1 B); gate and up likewise; down's input 2 B -> 1 B; SDPA keeps its bf16 output, which
    // o_proj saved as a view, and o_proj's te.Linear adds its fp8 copy; lm_head's input 2 B -> 1 B.
    const double single = L * (-3 * N * h - 2 * N * h + N * q - N * f) - N * h;
    CHECK(delta(fp8("te-delayed"), small({}), "forward", &Terms::activations) == Approx(single));
    CHECK(delta(fp8("te-current"), small({}), "forward", &Terms::activations) == Approx(single));
    // Eager attention: o_proj saved its own bf16 copy of the reshaped output, now an fp8 one.
    CHECK(delta(fp8("te-delayed", {{"attention", "eager"}}), small({{"attention", "eager"}}), "forward", &Terms::activations) ==
          Approx(L * (-3 * N * h - 2 * N * h - N * q - N * f) - N * h));
    // Without autocast (FSDP 2's bf16 parameters) the norm's bf16 output was one tensor q, k and v shared (2a);
    // each te.Linear keeps its own copy (3 x 1a), gate and up 2a -> 2 x 1a (A.9's HF Llama table).
    const json fsdp = {{"strategy", "fsdp"}, {"fsdp_version", 2}, {"zero", 3}, {"gpus", 8}};
    CHECK(delta(fp8("te-delayed", fsdp), small(fsdp), "forward", &Terms::activations) ==
          Approx(L * (N * h + 0 + N * q - N * f) - N * h));
    // Megatron-LM's layer (LayerNormLinear qkv and fc1, Linear proj and fc2; A.9): the two norm outputs 2 -> 1 B
    // (sequence-parallel shards), proj's fp8 copy beside attention's bf16 output, fc2's input 2 -> 1 B.
    const json megatron = {{"strategy", "megatron"}, {"gpus", 2}, {"tp", 2}, {"sequence_parallel", true}};
    const double t = 2;
    CHECK(delta(fp8("te-delayed", megatron), small(megatron), "forward", &Terms::activations) ==
          Approx(L * (-2 * N * h / t + N * q / t - N * f / t)));
}

TEST_CASE("Transformer Engine's fp8 weights: saved to backward (accelerate), cached (Megatron-LM), re-made (FSDP 2)") {
    // Hopper keeps data + transpose (2 B a weight), Blackwell one copy (1 B): csrc/quantizer.cpp with_transpose.
    // accelerate under autocast: autocast's bf16 copies of every linear and lm_head (2 B) are replaced by te.Linear's
    // saved fp8 weights (2 B on Hopper), and the largest linear's forward drops its input's row-wise copy (down: N f).
    const double autocast_copies = 2 * (P_lin + P_head);
    CHECK(delta(fp8("te-delayed"), small({}), "forward", &Terms::temporaries) ==
          Approx(2 * (P_lin + P_head) + N * f - autocast_copies));
    CHECK(delta(fp8("te-delayed", {{"gpu", "b200"}}), small({{"gpu", "b200"}}), "forward", &Terms::temporaries) ==
          Approx(1 * (P_lin + P_head) - autocast_copies));
    // Nothing of it is left at the optimizer step.
    CHECK(delta(fp8("te-delayed"), small({}), "optimizer_step", &Terms::temporaries) == Approx(0));
    // ZeRO-3 gathers each layer for its forward, and te.Linear saves an fp8 copy of the whole weight.
    const json zero3 = {{"strategy", "deepspeed"}, {"zero", 3}, {"gpus", 8}};
    CHECK(delta(fp8("te-current", zero3), small(zero3), "forward", &Terms::temporaries) == Approx(2 * (P_lin + P_head) + N * f));
    // FSDP 2 saves none ("Issue #2681"): one linear's row-wise input and weight in forward (down: N f + f h).
    const json fsdp = {{"strategy", "fsdp"}, {"fsdp_version", 2}, {"zero", 3}, {"gpus", 8}};
    CHECK(delta(fp8("te-current", fsdp), small(fsdp), "forward", &Terms::temporaries) == Approx(N * f + f * h));
    // Megatron-LM passes is_first_microbatch: the layers' fp8 weights stay in _fp8_workspaces (tp shards), lm_head
    // is its own bf16 ColumnParallelLinear; current scaling keeps no amax history.
    const json megatron = {{"strategy", "megatron"}, {"gpus", 2}, {"tp", 2}};
    CHECK(delta(fp8("te-current", megatron), small(megatron), "forward", &Terms::weights) == Approx(P_lin / 2 * 2));
    CHECK(delta(fp8("te-current", megatron), small(megatron), "optimizer_step", &Terms::weights) == Approx(P_lin / 2 * 2));
    CHECK(delta(fp8("te-current", {{"strategy", "megatron"}, {"gpus", 2}, {"tp", 2}, {"gpu", "b200"}}),
                small({{"strategy", "megatron"}, {"gpus", 2}, {"tp", 2}, {"gpu", "b200"}}), "forward", &Terms::weights) ==
          Approx(P_lin / 2 * 1));
    // A recomputed layer's te.Linears save their fp8 weights again.
    Config c = parsed(fp8("te-delayed", {{"checkpointing", "full"}}));
    CHECK(recast_layer_weight_bytes(c) == Approx(2 * P_layer));
    CHECK(te_saved_weight_bytes(c) == Approx(2 * P_head));  // only lm_head's is saved in forward
    c.strategy = Strategy::megatron;
    CHECK(recast_layer_weight_bytes(c) == 0);
}

TEST_CASE("Transformer Engine's delayed scaling keeps (L_h + 1) x 5 x 4 B of amax history and scales per GEMM") {
    // quantization.py DelayedScalingRecipeState: scale [n] and amax_history [L_h, n] in fp32, n = 3 quantizers a
    // GEMM in forward and 2 in backward (module/base.py set_meta_tensor). accelerate's TERecipeKwargs: L_h = 1024,
    // one te.Linear per nn.Linear (7 a layer) and lm_head; Megatron-LM: L_h = 1, 4 GEMMs a layer.
    CHECK(delta(fp8("te-delayed"), small({}), "forward", &Terms::weights) == Approx((L * 7 + 1) * (1024 + 1) * 5 * 4));
    CHECK(delta(fp8("te-current"), small({}), "forward", &Terms::weights) == Approx(0));
    const json megatron = {{"strategy", "megatron"}, {"gpus", 2}, {"tp", 2}};
    CHECK(delta(fp8("te-delayed", megatron), fp8("te-current", megatron), "forward", &Terms::weights) ==
          Approx(L * 4 * (1 + 1) * 5 * 4));
}

TEST_CASE("torchao's Float8Linear under CUDA autocast makes no bf16 weight copies (stacks/fp8 Part B)") {
    // Float8Linear casts its input to the autocast dtype and its fp32 weight straight to float8, saving the fp32
    // parameter: the projections' 2 B a weight of autocast copies are gone (measured on the CPU: -2,097,152 B for
    // 8 x 256 x 512 weights); lm_head stays an nn.Linear. The largest cast (down's input, eager) peaks at 9 B an
    // element beside its weight's float8 copy.
    CHECK(delta(fp8("torchao-tensorwise"), small({}), "forward", &Terms::temporaries) == Approx(-2 * P_lin + 9 * N * f + f * h));
    const Config c = parsed(fp8("torchao-tensorwise", {{"checkpointing", "full"}}));
    CHECK(recast_layer_weight_bytes(c) == 0);
    CHECK(recast_layer_weight_bytes(parsed(small({{"checkpointing", "full"}}))) == Approx(2 * P_layer));
}

TEST_CASE("Transformer Engine FP8 on FP8 tensor cores: A100 refused, H100, H200 and B200 estimated") {
    for (const char* recipe : {"te-delayed", "te-current"}) {
        for (const char* gpu : {"h100-80gb", "h100-80gb-pcie", "h200", "b200"}) {
            const json j = {{"model", "llama-3-8b"}, {"gpu", gpu}, {"precision", "fp8"}, {"fp8_recipe", recipe}};
            const Config c = parsed(j);
            CHECK(config_to_json(c)["fp8_recipe"] == recipe);
            CHECK(estimate_memory(c).total > 0);
        }
        auto refused = [&](json patch) {
            json j = {{"model", "llama-3-8b"}, {"gpu", "h100-80gb"}, {"precision", "fp8"}, {"fp8_recipe", recipe}};
            for (auto it = patch.begin(); it != patch.end(); ++it) j[it.key()] = it.value();
            const ParsedConfig p = parse_config(j);
            INFO(j.dump());
            REQUIRE_FALSE(p.ok());
            return p.errors[0].field;
        };
        CHECK(refused({{"gpu", "a100-80gb"}}) == "precision");
        CHECK(refused({{"gpu", "mi300x"}}) == "fp8_recipe");  // NVIDIA's library
        CHECK(refused({{"finetune", {{"method", "lora"}}}}) == "fp8_recipe");
        CHECK(refused({{"strategy", "fsdp"}, {"fsdp_version", 2}, {"gpus", 8}, {"tp", 2}}) == "fp8_recipe");
        CHECK(refused({{"model", "gpt2"}}) == "fp8_recipe");  // HF GPT-2's Conv1D are not nn.Linear
        CHECK(parse_config(json{{"model", "gpt2"}, {"precision", "fp8"}, {"fp8_recipe", recipe}, {"strategy", "megatron"},
                                {"gpus", 2}, {"gpu", "h100-80gb"}}).ok());
    }
}

TEST_CASE("Transformer Engine's step time: accelerate's converted lm_head runs at the float8 peak too") {
    const StepTime torchao = estimate_step_time(parsed(fp8("torchao-tensorwise")));
    const StepTime te = estimate_step_time(parsed(fp8("te-delayed")));
    CHECK(te.matmul < torchao.matmul);
    CHECK(te.attention == Approx(torchao.attention));
    // Megatron-LM's lm_head stays bf16: the same float8 GEMMs as torchao's layers.
    const json megatron = {{"strategy", "megatron"}, {"gpus", 2}, {"tp", 2}};
    CHECK(estimate_step_time(parsed(fp8("te-delayed", megatron))).matmul ==
          Approx(estimate_step_time(parsed(fp8("torchao-tensorwise", megatron))).matmul));
}
