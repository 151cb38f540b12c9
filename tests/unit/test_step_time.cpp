// The time model against closed forms from the papers it follows; its calibration is tested against published
// runs in tests/validation/throughput.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "advice/report.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"
#include "time/step_time.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {
// A GPT layer as Narayanan et al. (2021) §5.1 count it: h x 3h qkv, h x h output, h x 4h and 4h x h MLP.
json gpt(double l, double h, double v) {
    return {{"layers", l}, {"hidden", h}, {"heads", h / 64}, {"ffn", 4 * h}, {"vocab", v}, {"mlp", "gelu"},
            {"norm", "layernorm"}, {"position", "learned"}, {"max_positions", 4096}, {"tied_embeddings", true}};
}
}  // namespace

TEST_CASE("FLOPs per token follow Narayanan et al. 2021 §5.1") {
    const double l = 24, h = 2048, v = 51200, s = 2048;
    json j = {{"model", gpt(l, h, v)}, {"seq_len", s}, {"gpu", "a100-80gb"}, {"attention", "eager"}};
    // Without recomputation: 72 l h^2 (1 + s/6h) per token for the layers, 6 h V for the logits.
    const StepTime plain = estimate_step_time(parsed(j));
    CHECK(plain.model_flops_per_token == Approx(72 * l * h * h * (1 + s / (6 * h)) + 6 * h * v));
    CHECK(plain.executed_flops_per_token == Approx(plain.model_flops_per_token));
    // Full recomputation: F = 96 B s l h^2 (1 + s/6h + V/16lh) per iteration, i.e. per token.
    j["checkpointing"] = "full";
    const StepTime full = estimate_step_time(parsed(j));
    CHECK(full.executed_flops_per_token == Approx(96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))));
    CHECK(full.model_flops_per_token == Approx(plain.model_flops_per_token));  // MFU counts no recomputation
    // Megatron's selective recomputation adds back only the attention scores (Korthikanti et al. 2022 §5).
    j["checkpointing"] = "selective";
    j["strategy"] = "megatron", j["gpus"] = 2, j["tp"] = 2;
    CHECK(estimate_step_time(parsed(j)).executed_flops_per_token ==
          Approx(plain.model_flops_per_token + 4 * l * h * s));
    // A causal flash kernel skips the masked half of the scores it executes.
    j = {{"model", gpt(l, h, v)}, {"seq_len", s}, {"gpu", "a100-80gb"}, {"attention", "flash"}};
    CHECK(estimate_step_time(parsed(j)).executed_flops_per_token ==
          Approx(plain.model_flops_per_token - 0.5 * 3 * 4 * l * h * s));
    // A frozen base computes no weight gradients: 2/3 of the matmuls' FLOPs, plus its adapters' 3 passes.
    j["finetune"] = {{"method", "lora"}, {"rank", 8}, {"targets", {"c_attn"}}};
    j["model"]["family"] = "gpt2";
    const StepTime lora = estimate_step_time(parsed(j));
    const double matmuls = 24 * l * h * h + 2 * h * v, attention = 4 * l * h * s;
    const double adapters = 2 * l * 8 * (h + 3 * h);
    CHECK(lora.model_flops_per_token == Approx(2 * matmuls + 3 * attention + 3 * adapters));
}

TEST_CASE("the step: throughput, MFU, the pipeline bubble, communication and the run's cost") {
    json j = {{"model", "llama-2-7b"}, {"gpu", "a100-80gb"}, {"gpus", 8}, {"strategy", "fsdp"}, {"seq_len", 4096},
              {"micro_batch", 2}, {"grad_accum", 4}, {"checkpointing", "full"}};
    const StepTime t = estimate_step_time(parsed(j));
    REQUIRE(t.known);
    // Every sequence of the global batch goes through one step.
    CHECK(t.tokens_per_s * t.step == Approx(2 * 4096 * 4 * 8));
    CHECK(t.tokens_per_s_per_gpu * 8 == Approx(t.tokens_per_s));
    CHECK(t.mfu == Approx(t.tokens_per_s_per_gpu * t.model_flops_per_token / 312e12));
    CHECK(t.forward + t.loss + t.backward + t.optimizer_step == Approx(t.step));
    // 1F1B's bubble is (p - 1)/m of the ideal time, and interleaving divides it by the stages per GPU.
    json pp = {{"model", "llama-2-70b"}, {"gpu", "h100-80gb"}, {"gpus", 64}, {"strategy", "megatron"}, {"tp", 8},
               {"pp", 4}, {"grad_accum", 16}, {"seq_len", 4096}, {"checkpointing", "selective"}};
    const StepTime p1 = estimate_step_time(parsed(pp));
    pp["pp_schedule"] = "interleaved-1f1b", pp["pp_stages_per_rank"] = 4;
    const StepTime p4 = estimate_step_time(parsed(pp));
    CHECK(p4.pipeline_bubble == Approx(p1.pipeline_bubble / 4));
    const double compute = p1.forward + p1.loss + p1.backward - p1.pipeline_bubble - p1.exposed_communication;
    CHECK(p1.pipeline_bubble == Approx(compute * 3.0 / 16));
    // Leaving the node puts the data-parallel traffic on the network: never faster.
    json ddp = {{"model", "llama-3.2-1b"}, {"gpu", "h100-80gb"}, {"strategy", "ddp"}, {"gpus", 8}};
    const double inside = estimate_step_time(parsed(ddp)).step;
    ddp["gpus_per_node"] = 4;
    CHECK(estimate_step_time(parsed(ddp)).step >= inside);
    ddp["inter_node_gbps"] = 0.1;  // a slow network exposes the all-reduce: 2 (n-1)/n of the gradients
    const StepTime slow = estimate_step_time(parsed(ddp));
    CHECK(slow.exposed_communication > 0);
    // The run: tokens over throughput, GPU-hours times the price the user gives.
    j["train_tokens"] = 1e9, j["price_per_gpu_hour"] = 2.5;
    const Config c = parsed(j);
    const RunCost run = estimate_run_cost(c, estimate_step_time(c));
    CHECK(run.hours == Approx(1e9 / t.tokens_per_s / 3600));
    CHECK(run.gpu_hours == Approx(8 * run.hours));
    CHECK(run.cost == Approx(2.5 * run.gpu_hours));
    j.erase("train_tokens"), j["epochs"] = 2, j["dataset_tokens"] = 5e8;
    const Config c2 = parsed(j);
    CHECK(estimate_run_cost(c2, estimate_step_time(c2)).hours == Approx(run.hours));
    // No peak, no time: a custom GPU without figures.
    json custom = {{"model", "llama-2-7b"}, {"gpu", {{"name", "x"}, {"memory_gib", 80}}}};
    CHECK_FALSE(estimate_step_time(parsed(custom)).known);
    custom["gpu"]["bf16_tflops"] = 312;
    CHECK(estimate_step_time(parsed(custom)).known);
}

TEST_CASE("suggestions that fit come first, the fastest first") {
    const json j = {{"model", "llama-2-13b"}, {"gpu", "a100-80gb"}, {"seq_len", 4096}};
    const Report r = make_report(parsed(j));
    REQUIRE(r.suggestions.size() > 2);
    bool seen_misfit = false;
    double last = 0;
    for (const Suggestion& s : r.suggestions) {
        if (!s.fits) seen_misfit = true;
        else {
            CHECK_FALSE(seen_misfit);
            CHECK(s.step_time >= last);
            last = s.step_time;
        }
    }
}

TEST_CASE("fp8: the layers' projections at the float8 peak; attention and the loss stay 16-bit") {
    json j = {{"model", "llama-3-8b"}, {"gpu", "h100-80gb"}, {"strategy", "fsdp"}, {"gpus", 8}, {"fsdp_version", 2},
              {"seq_len", 8192}};
    const StepTime bf16 = estimate_step_time(parsed(j));
    j["precision"] = "fp8";
    const StepTime fp8 = estimate_step_time(parsed(j));
    CHECK(fp8.matmul < bf16.matmul);
    CHECK(fp8.matmul > 0.5 * bf16.matmul);  // lm_head's matmuls keep the bf16 rate
    CHECK(fp8.attention == Approx(bf16.attention));
    CHECK(fp8.loss == Approx(bf16.loss));
    CHECK(fp8.model_flops_per_token == Approx(bf16.model_flops_per_token));  // MFU keeps the bf16 convention
}

TEST_CASE("FSDP's gradient reduce-scatter runs once per step under no_sync, once per micro-batch without it") {
    // FULL_SHARD all-gathers the parameters in every micro-batch's forward and backward (2 x grad_accum volumes) and
    // reduce-scatters the gradients (Rajbhandari et al. 2020 §7): once where the stack accumulates unsharded
    // (transformers' Trainer), grad_accum times where each backward reduces (Composer, torchtune, torchtitan).
    const double ga = 8;
    json j = {{"model", "llama-2-7b"}, {"strategy", "fsdp"}, {"gpus", 16}, {"gpus_per_node", 8}, {"grad_accum", ga},
              {"fsdp_version", 1}, {"precision", "bf16-mixed"}};
    const StepTime no_sync = estimate_step_time(parsed(j));
    j["framework"] = "llm-foundry";
    const StepTime each = estimate_step_time(parsed(j));
    CHECK(each.data_parallel / no_sync.data_parallel == Approx((2 * ga + ga) / (2 * ga + 1)).epsilon(1e-3));
}

TEST_CASE("a custom GPU that states its compute capability runs as the catalog GPU of that capability") {
    // The H100 SXM's own figures (the catalog's datasheet row), as a user would type them for a custom GPU.
    const json h100 = {{"name", "H100 as typed"}, {"memory_gib", 81559.0 / 1024}, {"bandwidth_gbps", 3350},
                       {"bf16_tflops", 989}, {"fp16_tflops", 989}, {"fp32_tflops", 67}, {"link_gbps", 450},
                       {"pcie_gbps", 64}};
    json j = {{"model", "llama-3-8b"}, {"finetune", {{"method", "lora"}}}, {"seq_len", 8192}, {"gpu", "h100-80gb"}};
    const Report catalog = make_report(parsed(j));
    j["gpu"] = h100, j["gpu"]["compute_capability"] = 9.0;
    const Report stated = make_report(parsed(j));
    CHECK(stated.time.step == Approx(catalog.time.step).epsilon(1e-12));
    CHECK(stated.memory.total == Approx(catalog.memory.total).epsilon(1e-12));  // Hopper's 32 MiB cuBLAS workspace
    j["gpu"].erase("compute_capability");  // unstated: FlashAttention-2's Ampere share of the peak, 8 MiB cuBLAS
    const Report unstated = make_report(parsed(j));
    CHECK(unstated.time.attention < catalog.time.attention);
    CHECK(catalog.memory.peak_allocated - unstated.memory.peak_allocated == Approx(32.0 * 1024 * 1024 - 8519680));
    // FP8 needs compute capability 8.9: a custom Ampere part is told so, an unstated one is not checked.
    j["precision"] = "fp8", j["fp8_recipe"] = "torchao-tensorwise", j["finetune"] = "full";
    CHECK(parse_config(j).ok());
    j["gpu"]["compute_capability"] = 8.0;
    const ParsedConfig ampere = parse_config(j);
    REQUIRE_FALSE(ampere.ok());
    CHECK(ampere.errors[0].field == "precision");
    j["gpu"]["compute_capability"] = 8.9;
    CHECK(parse_config(j).ok());
}

TEST_CASE("the FlashAttention-2 fallback is told for pre-Ampere NVIDIA parts only") {
    auto warns = [](const json& gpu) {
        const Report r = make_report(parsed({{"model", "llama-2-7b"}, {"precision", "16-mixed"}, {"gpu", gpu}}));
        for (const std::string& w : r.warnings)
            if (w.find("FlashAttention-2 needs") != std::string::npos) return true;
        return false;
    };
    CHECK(warns("v100-32gb"));
    CHECK(warns("t4"));
    CHECK_FALSE(warns("a100-80gb"));
    CHECK_FALSE(warns("mi300x"));  // AMD's: no compute capability, not an old NVIDIA part
    CHECK(warns({{"name", "x"}, {"memory_gib", 32}, {"compute_capability", 7.0}}));
    CHECK_FALSE(warns({{"name", "x"}, {"memory_gib", 32}}));
}
