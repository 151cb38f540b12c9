// Model-state bytes against the closed forms of the ZeRO paper, DeepSpeed's estimators and Megatron-LM.
#include <catch2/catch.hpp>

#include "advice/report.hpp"
#include "memory/memory_terms.hpp"
#include "model/architecture.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;

namespace {
Config parse(const std::string& json) {
    ParsedConfig p = parse_config(json);
    INFO(json);
    REQUIRE(p.ok());
    return p.config;
}
double model_states(const Config& c) {
    return weights_bytes(c) + gradients_bytes(c) + optimizer_states_bytes(c) + master_weights_bytes(c);
}
const double psi = 6738415616.0;  // Llama-2-7B
}  // namespace

TEST_CASE("mixed-precision AdamW keeps the ZeRO paper's 16 bytes per parameter, 20 during DeepSpeed's step") {
    // Rajbhandari et al. 2020, §3.1: 2Ψ fp16 weights + 2Ψ fp16 gradients + 12Ψ fp32 optimizer states
    // (master weights, momentum, variance). DeepSpeed also builds an fp32 gradient for the step: its
    // estimator counts 4Ψ + 16Ψ/N for ZeRO-1/2 (estimate_zero2_model_states_mem_needs).
    const Config c = parse(R"({"model":"llama-2-7b","precision":"bf16-mixed","strategy":"deepspeed"})");
    CHECK(model_states(c) == Approx(16 * psi));
    CHECK(weights_bytes(c) == Approx(2 * psi));
    CHECK(master_weights_bytes(c) == Approx(4 * psi));
    CHECK(optimizer_states_bytes(c) == Approx(8 * psi));
    CHECK(fp32_gradient_partition_bytes(c) == Approx(4 * psi));
    const MemoryEstimate m = estimate_memory(c);
    const Terms& step = m.phases.back().terms;
    CHECK(step.weights + step.gradients + step.optimizer_states + step.master_weights == Approx(20 * psi));
}

TEST_CASE("ZeRO stages shard as the paper's Figure 1; the fp32 gradient partition shards from stage 1") {
    const double n = 8;
    auto config = [&](int stage) {
        return parse(R"({"model":"llama-2-7b","precision":"bf16-mixed","strategy":"deepspeed","gpus":8,"zero":)" +
                     std::to_string(stage) + "}");
    };
    CHECK(model_states(config(0)) == Approx(16 * psi));
    CHECK(model_states(config(1)) == Approx(4 * psi + 12 * psi / n));  // P_os: 4Ψ + KΨ/Nd
    CHECK(model_states(config(2)) == Approx(2 * psi + 14 * psi / n));  // P_os+g: 2Ψ + 14Ψ/Nd
    CHECK(model_states(config(3)) == Approx(16 * psi / n));            // P_os+g+p: 16Ψ/Nd
    CHECK(fp32_gradient_partition_bytes(config(0)) == Approx(4 * psi));
    for (int stage = 1; stage <= 3; ++stage) CHECK(fp32_gradient_partition_bytes(config(stage)) == Approx(4 * psi / n));
}

TEST_CASE("Megatron-LM keeps 18 bytes per parameter, 6 + 12/DP with the distributed optimizer") {
    // megatron/training/theoretical_memory_usage.py
    const Config plain = parse(R"({"model":"llama-2-7b","precision":"bf16-mixed","strategy":"megatron","gpus":8})");
    CHECK(model_states(plain) == Approx(18 * psi));
    const Config dist = parse(R"({"model":"llama-2-7b","precision":"bf16-mixed","strategy":"megatron","gpus":8,"zero":1})");
    CHECK(model_states(dist) == Approx((6 + 12.0 / 8) * psi));
}

TEST_CASE("optimizer states per optimizer") {
    auto states = [](const char* opt) {
        return optimizer_states_bytes(parse(std::string(R"({"model":"llama-2-7b","precision":"32-true","optimizer":")") + opt + "\"}"));
    };
    CHECK(states("adamw") == Approx(8 * psi));
    CHECK(states("sgd") == 0);
    CHECK(states("sgd-momentum") == Approx(4 * psi));
    CHECK(states("lion") == Approx(4 * psi));
    // bitsandbytes 8-bit: 2 bytes + 2 fp32 absmax per 256 elements; <4096-element tensors stay fp32.
    // Llama-2-7B has 65 norm vectors of 4096 (= 4096, so 8-bit too): every tensor is 8-bit here.
    CHECK(states("adamw-8bit") == Approx(2 * psi + 2 * 4 * psi / 256).epsilon(1e-6));
    // Adafactor's factored second moment: rows + columns per matrix, in fp32.
    const Architecture& a = parse(R"({"model":"llama-2-7b"})").model;
    double factored = 0;
    for (const Tensor& t : parameter_tensors(a)) factored += double(t.count) * (t.cols > 1 ? t.rows + t.cols : t.rows) * 4;
    CHECK(states("adafactor") == Approx(factored));
    CHECK(states("adafactor") < 0.01 * psi);  // sublinear: under 0.04 bytes per parameter
}

TEST_CASE("precisions: 32-true 16 bytes, bf16-true 8 bytes, autocast 16 bytes per parameter for AdamW") {
    CHECK(model_states(parse(R"({"model":"llama-2-7b","precision":"32-true"})")) == Approx(16 * psi));
    CHECK(model_states(parse(R"({"model":"llama-2-7b","precision":"bf16-true"})")) == Approx(8 * psi));
    CHECK(model_states(parse(R"({"model":"llama-2-7b","precision":"bf16-mixed"})")) == Approx(16 * psi));
}

TEST_CASE("QLoRA stores NF4 weights at 4 bits plus double-quantised constants") {
    // QLoRA §2: 0.5 bytes per weight + 8/64 + 32/(64*256) bits of constants (0.127 bits).
    const Config c = parse(R"({"model":"llama-2-7b","precision":"bf16-mixed","finetune":{"method":"qlora","rank":8,"targets":["q_proj","v_proj"]}})");
    const Architecture& a = c.model;
    const double linear = double(linear_weight_params(a));
    const double other = psi - linear;
    const double adapters = double(lora_params(a, 8, {"q_proj", "v_proj"}));
    CHECK(weights_bytes(c) == Approx(linear * (0.5 + (8.0 / 64 + 32.0 / (64 * 256)) / 8) + other * 4 + adapters * 4));
    CHECK(gradients_bytes(c) == Approx(adapters * 4));
}

TEST_CASE("the issue's example: Llama-2-7B, bf16-mixed, DeepSpeed on one A100 80GB does not fit") {
    const Report r = make_report(parse(R"({"model":"llama-2-7b","gpu":"a100-80gb","precision":"bf16-mixed","strategy":"deepspeed"})"));
    CHECK_FALSE(r.memory.fits);
    CHECK(r.memory.at_peak().weights + r.memory.at_peak().gradients + r.memory.at_peak().optimizer_states +
              r.memory.at_peak().master_weights >= 16 * psi);
    CHECK_FALSE(r.suggestions.empty());
}

TEST_CASE("none fits: the sequence is named as the cause only where the model states fit") {
    // Full fine-tuning of Llama-2-7B with AdamW holds at least 16 bytes a parameter (ZeRO paper, Rajbhandari et al.
    // 2020, section 3.1): 108 GB of states, over the 80 GB card whatever the sequence.
    const Report full = make_report(parse(R"({"model":"llama-2-7b","gpu":"a100-80gb"})"));
    REQUIRE(full.max_micro_batch == 0);
    CHECK(16 * psi > 80e9);
    CHECK_FALSE(full.sequence_too_long);
    // LoRA keeps the 2-byte base (13.5 GB) and a few MB of adapters: at 262,144 tokens the activations are the cause.
    const Report lora = make_report(parse(R"({"model":"llama-2-7b","gpu":"a100-80gb","finetune":{"method":"lora"},"seq_len":262144})"));
    REQUIRE(lora.max_micro_batch == 0);
    CHECK(lora.sequence_too_long);
}
