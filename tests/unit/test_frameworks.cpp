// Framework profiles and the stack knobs: defaults from each stack's code, overrides, and what each knob
// moves. The numbers themselves are checked against the stacks' measured steps (accuracy_* tests).
#include <algorithm>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "advice/report.hpp"
#include "json/api.hpp"
#include "model/architecture.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"
#include "setup/strategies.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {
double phase_bytes(const MemoryEstimate& m, const char* name, double Terms::*term) {
    for (const Phase& p : m.phases)
        if (p.name == name) return p.terms.*term;
    return -1;
}
}  // namespace

TEST_CASE("each strategy's traits are its own row (strategy_traits indexes the table by the enum)") {
    for (Strategy s : {Strategy::single, Strategy::ddp, Strategy::deepspeed, Strategy::fsdp, Strategy::megatron})
        CHECK(strategy_traits(s).id == s);
    CHECK(strategy_table().size() == 5);
}

TEST_CASE("a framework profile sets the defaults of its knobs, and keys the user sets override them") {
    const json base = {{"model", "llama-3.2-1b"}};
    json j = base;
    j["framework"] = "torchtune";
    Config c = parsed(j);
    CHECK(c.precision == Precision::bf16_true);
    CHECK(c.loss == Loss::chunked);
    CHECK(c.loss_chunks == 8);
    CHECK(c.adapter_dtype == AdapterDtype::base);
    CHECK(c.fsdp_version == 2);
    CHECK(std::string(c.model.family->model_type) == "torchtune");
    j["precision"] = "bf16-mixed", j["loss"] = "full";
    c = parsed(j);
    CHECK(c.precision == Precision::bf16_mixed);
    CHECK(c.loss == Loss::full);
    // The echo carries the resolved values and reads back the same.
    const json echoed = config_to_json(c);
    CHECK(echoed["framework"] == "torchtune");
    CHECK(config_to_json(parsed(echoed)) == echoed);
    // LitGPT's LoRA script runs lm_head per chunk; its full fine-tuning script does not.
    j = base, j["framework"] = "litgpt";
    CHECK_FALSE(parsed(j).lm_head_chunks);
    j["finetune"] = {{"method", "lora"}, {"rank", 8}, {"targets", {"query", "value"}}};
    CHECK(parsed(j).lm_head_chunks);
    // Module names follow the stack: Llama's q_proj is not a LitGPT module.
    j["finetune"]["targets"] = {"q_proj"};
    CHECK_FALSE(parse_config(j).ok());
}

TEST_CASE("the knobs move the terms they name") {
    const json base = {{"model", "llama-3.2-1b"}, {"seq_len", 1024}, {"gpu", "h100-80gb"}};
    auto estimate = [&](json patch) {
        json j = base;
        for (auto it = patch.begin(); it != patch.end(); ++it) j[it.key()] = it.value();
        return estimate_memory(parsed(j));
    };
    // A chunked loss holds less at the loss's backward than the whole fp32 chain; fused-linear less still.
    const double full = phase_bytes(estimate({{"loss", "full"}}), "loss", &Terms::logits);
    const double chunked = phase_bytes(estimate({{"loss", "chunked"}}), "loss", &Terms::logits);
    CHECK(chunked < full);
    // (With lm_head trained, fused-linear computes its weight gradient already in the forward: compare with
    // a frozen head.)
    const json lora = {{"method", "lora"}, {"rank", 8}, {"targets", {"q_proj"}}};
    const double fused = phase_bytes(estimate({{"loss", "fused-linear"}, {"finetune", lora}}), "loss", &Terms::logits);
    CHECK(fused < phase_bytes(estimate({{"loss", "chunked"}, {"finetune", lora}}), "loss", &Terms::logits));
    // Optimizer in backward: no gradients at the step.
    CHECK(phase_bytes(estimate({{"optimizer_in_backward", true}}), "optimizer_step", &Terms::gradients) == 0);
    CHECK(phase_bytes(estimate({}), "optimizer_step", &Terms::gradients) > 0);
    // Checkpointing every N-th layer lies between none and every layer.
    auto acts = [&](json ck) { return phase_bytes(estimate({{"checkpointing", ck}}), "loss", &Terms::activations); };
    const double none = acts("none"), every4 = acts({{"mode", "layers"}, {"every", 4}}),
                 every2 = acts({{"mode", "layers"}, {"every", 2}}), all = acts("full");
    CHECK(none > every4);
    CHECK(every4 > every2);
    CHECK(every2 > all);
    // Activation offloading keeps about two layers' activations and moves the rest to CPU RAM.
    const MemoryEstimate off = estimate({{"activation_offload", true}}), on = estimate({});
    CHECK(phase_bytes(off, "loss", &Terms::activations) < phase_bytes(on, "loss", &Terms::activations));
    CHECK(off.cpu == Approx(phase_bytes(on, "loss", &Terms::activations) - phase_bytes(off, "loss", &Terms::activations)));
    // Paged optimizer states count toward what the GPU holds, not toward max_memory_allocated.
    const MemoryEstimate plain = estimate({{"optimizer", "adamw-8bit"}}), pagedm = estimate({{"optimizer", "paged-adamw-8bit"}});
    // The paged states are the same 8-bit states, moved out of the allocator's count, except those of tensors under
    // 100,000 elements, which bitsandbytes keeps on the device (get_state_buffer): here the norms' weights.
    const double device_part = phase_bytes(pagedm, "optimizer_step", &Terms::optimizer_states);
    CHECK(pagedm.paged_optimizer_states + device_part == Approx(phase_bytes(plain, "optimizer_step", &Terms::optimizer_states)));
    CHECK(device_part > 0);
    CHECK(device_part < 0.001 * pagedm.paged_optimizer_states);
    CHECK(pagedm.peak_allocated < plain.peak_allocated);
    // LoRA's r x h matrices are all smaller: nothing is paged (measured in tests/validation/stacks/litgpt2023).
    const MemoryEstimate paged_lora = estimate({{"optimizer", "paged-adamw"}, {"finetune", {{"method", "lora"}, {"rank", 8}}}});
    CHECK(paged_lora.paged_optimizer_states == 0);
}

TEST_CASE("FSDP 1 units mixing frozen and LoRA weights keep gradients for all of them") {
    const json base = {{"model", "llama-3-8b"}, {"strategy", "fsdp"}, {"gpus", 4}, {"grad_accum", 8}, {"fsdp_version", 1},
                       {"finetune", {{"method", "lora"}, {"rank", 16}, {"targets", {"q_proj", "v_proj"}}}}};
    json mixed = base, apart = base, v2 = base;
    mixed["fsdp_wrap"] = "layers", v2["fsdp_version"] = 2;
    const MemoryEstimate m = estimate_memory(parsed(mixed)), a = estimate_memory(parsed(apart)),
                         f2 = estimate_memory(parsed(v2));
    // no_sync keeps every layer's unsharded gradient on every rank: gigabytes instead of megabytes.
    CHECK(phase_bytes(m, "forward", &Terms::gradients) > 100 * phase_bytes(a, "forward", &Terms::gradients));
    CHECK(phase_bytes(a, "forward", &Terms::gradients) == Approx(phase_bytes(f2, "forward", &Terms::gradients)));
    CHECK(m.total > a.total);
}

TEST_CASE("FSDP accumulation: a stack without no_sync carries the sharded gradients, one with it the unsharded") {
    // Llama 3 8B's 8,030,261,248 parameters (its model card) over 8 ranks, fp32 sharded gradients (autocast over fp32
    // parameters), or bf16 unsharded ones under no_sync (the gathered parameters' dtype, accelerate's reduce dtype).
    const double params = 8030261248.0;
    json base = {{"model", "llama-3-8b"}, {"strategy", "fsdp"}, {"gpus", 8}, {"grad_accum", 4}, {"precision", "bf16-mixed"}};
    json hf = base, foundry = base, tune = base, titan = base;
    foundry["framework"] = "llm-foundry", tune["framework"] = "torchtune", titan["framework"] = "torchtitan";
    CHECK(phase_bytes(estimate_memory(parsed(hf)), "forward", &Terms::gradients) == Approx(params * 2).epsilon(0.001));
    for (const json& j : {foundry, tune, titan})
        CHECK(phase_bytes(estimate_memory(parsed(j)), "forward", &Terms::gradients) == Approx(params * 4 / 8).epsilon(0.001));
    // With one micro-batch there is nothing to carry, whichever the stack.
    base["grad_accum"] = 1, foundry["grad_accum"] = 1;
    CHECK(phase_bytes(estimate_memory(parsed(base)), "forward", &Terms::gradients) == 0);
    CHECK(phase_bytes(estimate_memory(parsed(foundry)), "forward", &Terms::gradients) == 0);
}

TEST_CASE("transformers' Trainer: FSDP 2 by default from 5.10, FSDP 1 before") {
    // training_args.py: fsdp_config.get("version", 1) through 5.9.0, get("version", 2) from 5.10.0 (the wheels).
    const json fsdp = {{"model", "llama-3-8b"}, {"strategy", "fsdp"}, {"gpus", 4}};
    CHECK(parsed(fsdp).fsdp_version == 2);
    json old = fsdp;
    old["framework_version"] = "5.9.0";
    CHECK(parsed(old).fsdp_version == 1);
    old["framework_version"] = "4.57.1";
    CHECK(parsed(old).fsdp_version == 1);
    old["framework_version"] = "5.10.0";
    CHECK(parsed(old).fsdp_version == 2);
}

TEST_CASE("bad stack keys give errors naming them") {
    for (const char* text : {R"({"framework":"axolotl9"})", R"({"loss":"partial"})", R"({"loss_chunks":0})",
                             R"({"adapter_dtype":"fp8"})", R"({"fsdp_version":3})", R"({"fsdp_wrap":"odd"})",
                             R"({"optimizer_in_backward":"yes"})", R"({"checkpointing":{"mode":"layers"}})",
                             R"({"checkpointing":{"mode":"layers","every":0}})",
                             R"({"checkpointing":{"mode":"layers","every":2,"x":1}})", R"({"optimizer":"paged-lion"})"}) {
        INFO(text);
        const ApiResult r = estimate_json(text);
        CHECK_FALSE(r.ok);
        CHECK(r.json.find("\"errors\"") != std::string::npos);
    }
}

TEST_CASE("framework_version picks the revision in force, by release or by date") {
    const json lora = {{"method", "lora"}, {"rank", 8}, {"targets", {"q_proj", "v_proj"}}};
    json j = {{"framework", "torchtune"}, {"model", "llama-2-7b"}, {"finetune", lora}};
    // torchtune 0.2.1's recipes/lora_finetune_distributed.py: FSDP 1 with lora_fsdp_wrap_policy, and
    // torch.nn.CrossEntropyLoss in the configs; 0.3.0 moved to training.shard_model (FSDP 2) and
    // CEWithChunkedOutputLoss; 0.5.0's RMSNorm calls F.rms_norm with the scale in fp32.
    for (const char* v : {"0.1.0", "0.2.1", "2024-05-09"}) {
        j["framework_version"] = v;
        const Config c = parsed(j);
        CHECK(c.loss == Loss::full);
        CHECK(c.fsdp_version == 1);
        CHECK(c.fsdp_wrap == FsdpWrap::adapters_apart);
        CHECK(c.model.family->norm_compute == NormCompute::fp32_cast_back);
    }
    j["framework_version"] = "0.4.0";
    Config c = parsed(j);
    CHECK(c.loss == Loss::chunked);
    CHECK(c.fsdp_version == 2);
    CHECK(c.model.family->norm_compute == NormCompute::fp32_cast_back);
    j.erase("framework_version");
    c = parsed(j);
    CHECK(c.model.family->norm_compute == NormCompute::fp32_weight);
    CHECK(config_to_json(c)["framework_version"] == "0.5.0");
    // lit-gpt's RMSNorm (lit_gpt/rmsnorm.py): in the input dtype before #606 (2023-10-24), fp32 with the weight
    // after it, cast back first from #1043 (2024-03-07, first released in 0.3.1) to 0.4.5, fp32 again from 0.4.6.
    j = {{"framework", "litgpt"}, {"model", "llama-2-7b"}};
    const std::pair<const char*, NormCompute> litgpt[] = {{"2023-10-16", NormCompute::input_dtype},
                                                          {"2023-11-30", NormCompute::fp32_weight},
                                                          {"0.3.1", NormCompute::fp32_cast_back},
                                                          {"2024-06-01", NormCompute::fp32_cast_back},
                                                          {"0.4.6", NormCompute::fp32_weight},
                                                          {"0.5.13", NormCompute::fp32_weight}};
    for (const auto& [v, compute] : litgpt) {
        j["framework_version"] = v;
        INFO(v);
        CHECK(parsed(j).model.family->norm_compute == compute);
    }
    // A version round-trips through the echo.
    j["framework_version"] = "2023-10-16";
    CHECK(config_to_json(parsed(j))["framework_version"] == "2023-10-16");
    // lit-gpt's finetune scripts put the longest sample first from #184 (2023-06-21) until the data refactor
    // #950 (2024-02-29) moved them to a shuffled DataLoader.
    const std::pair<const char*, bool> longest[] = {{"2023-06-20", false}, {"2023-06-21", true}, {"2023-10-16", true},
                                                    {"2024-02-28", true},  {"2024-02-29", false}, {"0.5.13", false}};
    for (const auto& [v, first] : longest) {
        j["framework_version"] = v;
        INFO(v);
        CHECK(parsed(j).longest_batch_first == first);
    }
}

TEST_CASE("longest_batch_first estimates the run's first micro-batch") {
    const json lora = {{"method", "lora"}, {"rank", 8}, {"targets", {"query", "value"}}};
    json j = {{"framework", "litgpt"}, {"model", "llama-2-7b"}, {"seq_len", 1024}, {"grad_accum", 4},
              {"precision", "bf16-true"}, {"finetune", lora}, {"longest_batch_first", false}};
    const MemoryEstimate steady = estimate_memory(parsed(j));
    j["longest_batch_first"] = true;
    const Config c = parsed(j);
    const MemoryEstimate first = estimate_memory(c);
    // No optimizer states before the first step() (torch.optim creates them lazily), no gradients of earlier
    // micro-batches, and no previous step's logits (LitGPT's loop keeps its fp32 `logits` into the next forward).
    CHECK(phase_bytes(first, "forward", &Terms::optimizer_states) == 0);
    CHECK(phase_bytes(first, "forward", &Terms::gradients) == 0);
    CHECK(phase_bytes(steady, "forward", &Terms::logits) - phase_bytes(first, "forward", &Terms::logits) ==
          Approx(4.0 * 1024 * 32000));
    // The optimizer step is the same step either way.
    CHECK(phase_bytes(first, "optimizer_step", &Terms::optimizer_states) ==
          phase_bytes(steady, "optimizer_step", &Terms::optimizer_states));
    CHECK(first.peak_allocated < steady.peak_allocated);
    // DeepSpeed's ZeRO optimizer creates its states in its constructor (initialize_optimizer_states).
    json ds = {{"model", "llama-3.2-1b"}, {"strategy", "deepspeed"}, {"zero", 2}, {"gpus", 4}, {"longest_batch_first", true}};
    CHECK(phase_bytes(estimate_memory(parsed(ds)), "forward", &Terms::optimizer_states) > 0);
    // The report says which micro-batch it describes.
    const Report r = make_report(c);
    CHECK(std::any_of(r.warnings.begin(), r.warnings.end(),
                      [](const std::string& w) { return w.rfind("longest_batch_first", 0) == 0; }));
}

TEST_CASE("FSDP composes with tp, pp and cp as FSDP 2; the checks name the field") {
    auto error_field = [](const json& j) {
        const ParsedConfig p = parse_config(j);
        return p.ok() ? std::string() : p.errors[0].field;
    };
    json j = {{"model", "llama-3.1-8b"}, {"strategy", "fsdp"}, {"fsdp_version", 2}, {"gpus", 8}, {"tp", 2}, {"cp", 2}};
    CHECK(error_field(j).empty());
    const Config c = parsed(j);
    CHECK(c.sequence_parallel);  // PyTorch TP's plan: norms on sequence shards
    CHECK(c.loss_parallel);
    j["fsdp_version"] = 1;
    CHECK(error_field(j) == "tp");
    j["fsdp_version"] = 2, j["gpus"] = 6;
    CHECK(error_field(j) == "gpus");
    j["gpus"] = 8, j["attention"] = "eager";
    CHECK(error_field(j) == "cp");
    j["attention"] = "flash", j["seq_len"] = 2047;
    CHECK(error_field(j) == "cp");
    CHECK(error_field({{"model", "llama-3.1-8b"}, {"strategy", "megatron"}, {"checkpointing", "selective-op"}}) == "checkpointing");
    CHECK(error_field({{"model", "llama-3.1-8b"}, {"pp_schedule", "1f1b"}, {"pp_stages_per_rank", 2}}) == "pp_stages_per_rank");
    // The interleaved schedule's default of two stages per GPU bounds nothing without pipeline stages.
    const json one_layer = {{"layers", 1}, {"hidden", 8}, {"heads", 1}, {"ffn", 8}, {"vocab", 8}};
    CHECK(error_field({{"model", one_layer}, {"pp_schedule", "interleaved-1f1b"}}).empty());
    CHECK(error_field({{"model", {{"layers", 3}, {"hidden", 8}, {"heads", 1}, {"ffn", 8}, {"vocab", 8}}}, {"strategy", "megatron"},
                       {"gpus", 2}, {"pp", 2}, {"pp_schedule", "interleaved-1f1b"}}) == "pp_stages_per_rank");
    CHECK(error_field({{"model", "llama-3.1-8b"}, {"finetune", {{"method", "lora"}, {"backend", "torchao"}}}}) == "finetune.backend");
    CHECK(error_field({{"model", "llama-3.1-8b"}, {"framework_version", "latest"}}) == "framework_version");
}

TEST_CASE("context parallelism splits every per-token term cp ways") {
    // Ring attention (torch.distributed.tensor.experimental.context_parallel) gives each rank seq_len / cp of
    // every sequence: with the same micro-batch, activations and logits shrink cp-fold, the model states not.
    const json base = {{"framework", "torchtitan"}, {"model", "llama-3.1-8b"}, {"seq_len", 8192}, {"strategy", "fsdp"},
                       {"gpus", 8}, {"checkpointing", "full"}};
    json j = base;
    const MemoryEstimate one = estimate_memory(parsed(j));
    j["cp"] = 4;
    const MemoryEstimate four = estimate_memory(parsed(j));
    CHECK(phase_bytes(four, "forward", &Terms::activations) == Approx(phase_bytes(one, "forward", &Terms::activations) / 4));
    CHECK(phase_bytes(four, "forward", &Terms::logits) == Approx(phase_bytes(one, "forward", &Terms::logits) / 4));
    CHECK(phase_bytes(four, "forward", &Terms::weights) == Approx(phase_bytes(one, "forward", &Terms::weights)));
}

TEST_CASE("torchtitan's per-op selective checkpointing keeps what the measured layers keep") {
    // Forward residue per layer measured in tests/validation/stacks/torchtitan (torchtitan 0.2.2, dim 256,
    // ffn 704, 4 heads / 2 kv heads, seq 128, micro-batch 2, bf16 FSDP 2): op-level SAC keeps 959,424 B and full
    // checkpointing 136,128 B per layer (both with the block output and 5,056 B of RNG state); under TP 2 with
    // sequence parallelism 678,848 B and 70,592 B. The difference is the SAC cache: wq, wv, w1, w2 outputs,
    // SDPA's output and log-sum-exp, and under TP the reduce-scatter outputs (w2's partial sum whole).
    json j = {{"framework", "torchtitan"}, {"framework_version", "0.2.2"},
              {"model", {{"hf_config", {{"model_type", "llama"}, {"vocab_size", 2000}, {"hidden_size", 256},
                                        {"intermediate_size", 704}, {"num_hidden_layers", 4},
                                        {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                                        {"tie_word_embeddings", false}}}}},
              {"seq_len", 128}, {"micro_batch", 2}, {"strategy", "fsdp"}, {"gpus", 2}, {"device", "cpu"},
              {"gpu", {{"name", "cpu"}, {"memory_gib", 1000}}}};
    auto per_layer_cache = [&](std::uint64_t tp) {
        json k = j;
        k["gpus"] = 2 * tp, k["tp"] = tp;
        k["checkpointing"] = "selective-op";
        const double op = phase_bytes(estimate_memory(parsed(k)), "forward", &Terms::activations);
        k["checkpointing"] = "full";
        const double full = phase_bytes(estimate_memory(parsed(k)), "forward", &Terms::activations);
        return (op - full) / 4;
    };
    CHECK(per_layer_cache(1) == Approx(959424.0 - 136128.0));
    CHECK(per_layer_cache(2) == Approx(678848.0 - 70592.0));
}

TEST_CASE("adapters default to the PEFT recipe: a 16-bit frozen base, fp32 adapters, autocast") {
    const json lora = {{"method", "lora"}, {"rank", 16}, {"targets", {"q_proj", "v_proj"}}};
    json j = {{"model", "llama-3-8b"}, {"gpu", "a100-40gb"}, {"finetune", lora}};
    Config c = parsed(j);
    CHECK(c.precision == Precision::bf16_base_mixed);
    CHECK(config_to_json(c)["precision"] == "bf16-base-mixed");
    // The usual recipe fits where fp32 frozen weights (bf16-mixed) do not.
    CHECK(estimate_memory(c).fits);
    j["precision"] = "bf16-mixed";
    const MemoryEstimate fp32_base = estimate_memory(parsed(j));
    CHECK_FALSE(fp32_base.fits);
    // The frozen weights halve; the adapters' states stay fp32 (8 bytes per trainable parameter for AdamW).
    const MemoryEstimate recipe = estimate_memory(c);
    CHECK(phase_bytes(recipe, "optimizer_step", &Terms::optimizer_states) ==
          Approx(phase_bytes(fp32_base, "optimizer_step", &Terms::optimizer_states)));
    CHECK(phase_bytes(recipe, "forward", &Terms::weights) < 0.55 * phase_bytes(fp32_base, "forward", &Terms::weights));
    // FSDP and full fine-tuning keep bf16-mixed; an explicit precision wins; a stack's own default stays.
    j.erase("precision");
    j["strategy"] = "fsdp", j["gpus"] = 2;
    CHECK(parsed(j).precision == Precision::bf16_mixed);
    j = {{"model", "llama-3-8b"}, {"finetune", lora}, {"precision", "bf16-true"}};
    CHECK(parsed(j).precision == Precision::bf16_true);
    j = {{"model", "llama-3-8b"}, {"framework", "torchtune"}, {"finetune", lora}};
    CHECK(parsed(j).precision == Precision::bf16_true);
    j = {{"model", "llama-3-8b"}, {"framework", "litgpt"}, {"finetune", {{"method", "lora"}, {"targets", {"query", "value"}}}}};
    CHECK(parsed(j).precision == Precision::bf16_mixed);  // Lightning's bf16-mixed, LitGPT's own
    // The recipe is refused where it does not apply, naming the field.
    for (const json& bad : {json{{"model", "llama-3-8b"}, {"precision", "bf16-base-mixed"}},
                            json{{"model", "llama-3-8b"}, {"precision", "bf16-base-mixed"}, {"finetune", lora},
                                 {"strategy", "deepspeed"}, {"gpus", 2}}}) {
        const ParsedConfig p = parse_config(bad);
        REQUIRE_FALSE(p.ok());
        CHECK(p.errors[0].field == "precision");
    }
    // No "pure 16-bit" warning when what trains is fp32 (PEFT's adapters over a bf16 base).
    j = {{"model", "llama-3-8b"}, {"finetune", lora}, {"precision", "bf16-true"}};
    const Report r = make_report(parsed(j));
    CHECK(std::none_of(r.warnings.begin(), r.warnings.end(),
                       [](const std::string& w) { return w.find("pure 16-bit") != std::string::npos; }));
    // Full fine-tuning's LoRA suggestion comes with the recipe's precision.
    j = {{"model", "llama-3-8b"}, {"gpu", "a100-40gb"}};
    bool found = false;
    for (const Suggestion& s : make_report(parsed(j)).suggestions)
        if (s.patch.contains("finetune") && s.patch["finetune"].is_object() && s.patch["finetune"]["method"] == "lora") {
            found = true;
            CHECK(s.patch["precision"] == "bf16-base-mixed");
        }
    CHECK(found);
}

TEST_CASE("fp8: torchao's Float8Linear saves bf16 and adds float8 casts; refused without FP8 tensor cores") {
    json j = {{"model", "llama-3-8b"}, {"gpu", "h100-80gb"}, {"strategy", "fsdp"}, {"gpus", 8}, {"fsdp_version", 2},
              {"seq_len", 8192}};
    const MemoryEstimate bf16 = estimate_memory(parsed(j));
    j["precision"] = "fp8";
    const Config c = parsed(j);
    CHECK(c.fp8_recipe == Fp8Recipe::torchao_tensorwise);
    CHECK(config_to_json(c)["precision"] == "fp8");
    CHECK(config_to_json(parsed(config_to_json(c))) == config_to_json(c));
    const MemoryEstimate fp8 = estimate_memory(c);
    // matmul_with_hp_or_float8_args saves input_hp and weight_hp_t: the activations do not shrink.
    CHECK(phase_bytes(fp8, "forward", &Terms::activations) == phase_bytes(bf16, "forward", &Terms::activations));
    // The largest linear's float8 copies (its input and weight, 1 byte each) sit on top, transiently; eager, the
    // cast of its input peaks at 9 bytes an element (fp32 copy, fp32 clamp, float8: measured in stacks/fp8), and
    // torch.compile fuses that away.
    const double h = 4096, ffn = 14336, n = 8192;
    CHECK(phase_bytes(fp8, "forward", &Terms::temporaries) - phase_bytes(bf16, "forward", &Terms::temporaries) ==
          Approx(9 * n * ffn + ffn * h));
    json compiled = j;
    compiled["compile"] = true;
    const MemoryEstimate bf16c = estimate_memory(parsed([&] { json b = compiled; b.erase("precision"); return b; }()));
    CHECK(phase_bytes(estimate_memory(parsed(compiled)), "forward", &Terms::temporaries) -
              phase_bytes(bf16c, "forward", &Terms::temporaries) == Approx(n * ffn + ffn * h));
    CHECK(fp8.total >= bf16.total);
    for (const auto& [patch, field] : {std::pair<json, const char*>{{{"gpu", "a100-80gb"}}, "precision"},
                                       {{{"fp8_recipe", "te-delayed"}, {"gpu", "mi300x"}}, "fp8_recipe"},
                                       {{{"device", "cpu"}}, "precision"}}) {
        json bad = j;
        for (auto it = patch.begin(); it != patch.end(); ++it) bad[it.key()] = it.value();
        const ParsedConfig p = parse_config(bad);
        INFO(bad.dump());
        REQUIRE_FALSE(p.ok());
        CHECK(p.errors[0].field == field);
    }
}
