// Activation memory against Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Table 2, where its assumptions hold (Megatron GPT layer: 4h GELU MLP, dropout,
// 16-bit activations, kv_heads == heads).
#include <catch2/catch.hpp>

#include "memory/memory_terms.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;

namespace {
Config gpt(const std::string& extra) {
    ParsedConfig p = parse_config(
        R"({"model":{"layers":24,"hidden":2048,"heads":16,"ffn":8192,"vocab":50304,"mlp":"gelu","norm":"layernorm",)"
        R"("bias":true,"position":"learned","max_positions":4096,"dropout":0.1},"precision":"bf16-mixed",)"
        R"("strategy":"megatron","attention":"eager","seq_len":2048,"micro_batch":4)" + extra + "}");
    INFO(extra);
    REQUIRE(p.ok());
    return p.config;
}
const double s = 2048, b = 4, h = 2048, a = 16;
}  // namespace

TEST_CASE("no parallelism: sbh(34 + 5as/h) per layer") {
    CHECK(layer_activation_bytes(gpt("")) == Approx(s * b * h * (34 + 5 * a * s / h)));
}

TEST_CASE("tensor parallel: sbh(10 + 24/t + 5as/(ht))") {
    const double t = 4;
    CHECK(layer_activation_bytes(gpt(R"(,"gpus":4,"tp":4)")) == Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))));
}

TEST_CASE("tensor + sequence parallel: sbh/t (34 + 5as/h)") {
    const double t = 4;
    CHECK(layer_activation_bytes(gpt(R"(,"gpus":4,"tp":4,"sequence_parallel":true)")) ==
          Approx(s * b * h / t * (34 + 5 * a * s / h)));
}

TEST_CASE("selective recomputation with sequence parallel: 34 sbh/t") {
    const double t = 4;
    CHECK(layer_activation_bytes(gpt(R"(,"gpus":4,"tp":4,"sequence_parallel":true,"checkpointing":"selective")")) ==
          Approx(34 * s * b * h / t));
}

TEST_CASE("full recomputation keeps 2sbh per layer") {
    CHECK(layer_activation_bytes(gpt(R"(,"checkpointing":"full")")) == Approx(2 * s * b * h));
}

TEST_CASE("pipeline: the first stage holds min(pp, grad_accum) micro-batches of L/pp layers") {
    // Korthikanti §4.2.3: 24/4 layers of sbh(34 + 5as/h) each, for 4 micro-batches in flight, plus the
    // embedding's 1-byte dropout mask per micro-batch; the final norm and lm_head sit on the last stage.
    const Config piped = gpt(R"(,"gpus":4,"pp":4,"grad_accum":8)");
    CHECK(activations_bytes(piped) == Approx(4 * ((24.0 / 4) * s * b * h * (34 + 5 * a * s / h) + s * b * h)));
}
