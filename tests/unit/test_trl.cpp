// TRL's trainers: their keys, defaults, phases and refusals. The bytes themselves are checked against TRL's own
// training steps (accuracy_trl_cpu, phases_trl_cpu).
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "advice/report.hpp"
#include "model/architecture.hpp"
#include "parsed_config.hpp"
#include "setup/config_json.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {
std::vector<std::string> phase_names(const MemoryEstimate& m) {
    std::vector<std::string> names;
    for (const Phase& p : m.phases) names.push_back(p.name);
    return names;
}
const json kLora = {{"method", "lora"}, {"rank", 16}, {"targets", {"q_proj", "v_proj"}}};
}  // namespace

TEST_CASE("DPO and GRPO: TRL's phases, defaults and refusals") {
    const json lora = {{"method", "lora"}, {"rank", 16}, {"targets", {"q_proj", "v_proj"}}};
    json dpo = {{"model", "llama-3-8b"}, {"gpu", "h100-80gb"}, {"method", "dpo"}, {"prompt_len", 512},
                {"completion_len", 512}, {"micro_batch", 2}, {"finetune", lora}};
    Config c = parsed(dpo);
    CHECK(c.reference == Reference::base_without_adapters);  // TRL: a PEFT policy with adapters off
    CHECK(c.seq_len == 1024);
    // TRL's configs checkpoint by default (base_config.py: gradient_checkpointing=True); "none" says otherwise.
    CHECK(c.checkpointing == Checkpointing::full);
    json unchecked = dpo;
    unchecked["checkpointing"] = "none";
    CHECK(parsed(unchecked).checkpointing == Checkpointing::none);
    const MemoryEstimate m = estimate_memory(c);
    std::vector<std::string> names;
    for (const Phase& p : m.phases) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"policy_forward", "reference", "backward", "optimizer_step"});
    // A full fine-tune's reference is a second model: its weights count again.
    json full = dpo;
    full["finetune"] = "full", full["gpus"] = 1;
    const Config cf = parsed(full);
    CHECK(cf.reference == Reference::model);
    json pre = full;
    pre["reference"] = "precomputed";
    CHECK(estimate_memory(cf).phases[0].terms.weights - estimate_memory(parsed(pre)).phases[0].terms.weights ==
          Approx(double(total_params(cf.model)) * 4));
    // GRPO generates first; a colocated vLLM takes its share of the card instead.
    json grpo = {{"model", "qwen2.5-7b"}, {"gpu", "h100-80gb"}, {"method", "grpo"}, {"num_generations", 8},
                 {"micro_batch", 8}, {"prompt_len", 256}, {"completion_len", 1024}, {"finetune", lora}};
    CHECK(estimate_memory(parsed(grpo)).phases[0].name == "generation");
    grpo["inference_engine"] = {{"name", "vllm"}, {"gpu_memory_utilization", 0.3}};
    const MemoryEstimate v = estimate_memory(parsed(grpo));
    CHECK(v.inference_engine == Approx(0.3 * v.capacity));
    CHECK(v.phases[0].name == "old_logps");  // vLLM's sampling log-probs need the policy's own
    // Sleep mode frees vLLM's share after each generation: it meets the model states, not the backward's peak.
    grpo["inference_engine"] = {{"name", "vllm"}, {"gpu_memory_utilization", 0.3}, {"sleep_mode", true}};
    const MemoryEstimate asleep = estimate_memory(parsed(grpo));
    CHECK(asleep.phases[0].name == "generation");
    CHECK(asleep.total < v.total);
    CHECK(asleep.total == Approx(std::max(asleep.peak_reserved, asleep.phases[0].terms.sum() + 0.3 * asleep.capacity))
                              .epsilon(0.02) .margin(asleep.cuda_context + 1e9));
    // A vLLM server generates on other GPUs: no share here, old log-probs still scored.
    grpo["inference_engine"] = {{"name", "vllm"}, {"mode", "server"}};
    const MemoryEstimate server = estimate_memory(parsed(grpo));
    CHECK(server.inference_engine == 0);
    CHECK(server.phases[0].name == "old_logps");
    // TRL generates steps_per_generation (default: grad_accum) micro-batches' completions at once: the KV cache
    // grows with it; misaligned with the optimizer step, the policy's old log-probs are scored too.
    grpo["inference_engine"] = "none";
    const MemoryEstimate g1 = estimate_memory(parsed(grpo));
    grpo["grad_accum"] = 4;
    const MemoryEstimate g4 = estimate_memory(parsed(grpo));
    CHECK(g4.phases[0].terms.activations > 3 * g1.phases[0].terms.activations);
    CHECK(g4.phases[1].name == "policy_forward");
    grpo["steps_per_generation"] = 8;
    CHECK(estimate_memory(parsed(grpo)).phases[1].name == "old_logps");
    // Refusals name their field.
    const std::pair<json, const char*> bad[] = {
        {{{"model", "llama-3-8b"}, {"method", "dpo"}, {"completion_len", 8}}, "prompt_len"},
        {{{"model", "llama-3-8b"}, {"method", "dpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"reference", "base-without-adapters"}}, "reference"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"micro_batch", 6}, {"num_generations", 4}}, "num_generations"},
        {{{"model", "llama-3-8b"}, {"method", "dpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"strategy", "deepspeed"}, {"zero", 3}, {"gpus", 2}}, "method"},
        {{{"model", "llama-3-8b"}, {"method", "orpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"strategy", "fsdp"}, {"zero", 3}, {"gpus", 2}}, "method"},
        {{{"model", "llama-3-8b"}, {"method", "dpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"seq_len", 99}}, "seq_len"},
        {{{"model", "llama-3-8b"}, {"inference_engine", {{"name", "vllm"}}}}, "inference_engine"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 16777216}, {"completion_len", 16777216}}, "completion_len"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"inference_engine", {{"name", "sglang"}}}}, "inference_engine.name"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"inference_engine", 3}}, "inference_engine"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"inference_engine", {{"name", "vllm"}, {"mode", "remote"}}}}, "inference_engine.mode"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"inference_engine", {{"name", "vllm"}, {"mode", "server"}, {"gpu_memory_utilization", 0.3}}}}, "inference_engine.gpu_memory_utilization"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"micro_batch", 2}, {"num_generations", 4}, {"steps_per_generation", 1}}, "num_generations"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"inference_engine", {{"name", "vllm"}, {"mode", "server"}, {"sleep_mode", true}}}}, "inference_engine.sleep_mode"},
        {{{"model", "llama-3-8b"}, {"method", "dpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"num_iterations", 2}}, "num_iterations"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"steps_per_generation", 0}}, "steps_per_generation"},
    };
    for (const auto& [j, field] : bad) {
        const ParsedConfig p = parse_config(j);
        INFO(j.dump());
        REQUIRE_FALSE(p.ok());
        CHECK(p.errors[0].field == field);
    }
}

TEST_CASE("IPO, KTO, ORPO, SimPO and distillation: each trainer's passes, defaults and refusals") {
    const json base = {{"model", "llama-3-8b"}, {"gpu", "h100-80gb"}, {"prompt_len", 512}, {"completion_len", 512},
                       {"micro_batch", 2}, {"finetune", kLora}};
    auto with = [&](json patch) { json j = base; j.update(patch); return j; };
    // IPO is DPOTrainer's loss: the same memory as DPO.
    const MemoryEstimate dpo = estimate_memory(parsed(with({{"method", "dpo"}})));
    const MemoryEstimate ipo = estimate_memory(parsed(with({{"method", "ipo"}})));
    CHECK(ipo.total == dpo.total);
    // KTO: the KL completions through the policy first, then the reference twice with the policy's graph alive;
    // a micro-batch counts examples (DPO's, pairs of two rows).
    const Config kto = parsed(with({{"method", "kto"}}));
    CHECK(kto.reference == Reference::base_without_adapters);
    CHECK(phase_names(estimate_memory(kto)) ==
          std::vector<std::string>{"kl_policy", "policy_forward", "reference_kl", "reference", "backward", "optimizer_step"});
    CHECK(phase_names(estimate_memory(parsed(with({{"method", "kto"}, {"reference", "precomputed"}})))) ==
          std::vector<std::string>{"kl_policy", "policy_forward", "backward", "optimizer_step"});
    CHECK(estimate_memory(kto).peak_allocated < dpo.peak_allocated);
    // ORPO and SimPO: no reference; whole fp32 logits, so a 128k vocabulary costs more than DPO's fused head.
    const MemoryEstimate orpo = estimate_memory(parsed(with({{"method", "orpo"}})));
    CHECK(phase_names(orpo) == std::vector<std::string>{"policy_forward", "loss", "backward", "optimizer_step"});
    CHECK(orpo.at_peak().logits > 2.0 * 2 * 2 * 1023 * 128256 * 4);
    CHECK(orpo.peak_allocated > dpo.peak_allocated);
    const MemoryEstimate simpo = estimate_memory(parsed(with({{"method", "simpo"}})));
    CHECK(simpo.peak_allocated < orpo.peak_allocated);  // no NLL over the chosen rows
    // Distillation: the teacher's weights in its dtype, generation, the teacher's forward, the divergence head.
    json distill = with({{"method", "distill"}, {"teacher", "llama-3-70b"}});
    const Config cd = parsed(distill);
    CHECK(cd.teacher.layers == 80);
    CHECK(cd.teacher_dtype == Dtype::bf16);
    CHECK(cd.divergence == Divergence::reverse_kl);
    const MemoryEstimate md = estimate_memory(cd);
    CHECK(phase_names(md) == std::vector<std::string>{"generation", "policy_forward", "teacher", "loss", "backward", "optimizer_step"});
    distill["teacher_dtype"] = "fp32";
    const MemoryEstimate fp32_teacher = estimate_memory(parsed(distill));
    CHECK(fp32_teacher.at_peak().weights - md.at_peak().weights == Approx(2.0 * double(total_params(cd.teacher))));
    // The echo reads back as the same configuration.
    const json echoed = config_to_json(cd);
    CHECK(echoed["teacher"] == "llama-3-70b");
    CHECK(echoed["divergence"] == "reverse-kl");
    CHECK(parse_config(echoed).ok());
    const std::pair<json, const char*> bad[] = {
        {with({{"method", "orpo"}, {"reference", "model"}}), "reference"},
        {with({{"method", "simpo"}, {"reference", "precomputed"}}), "reference"},
        {with({{"method", "kto"}, {"reference", "none"}}), "reference"},
        {with({{"method", "distill"}}), "teacher"},
        {with({{"method", "distill"}, {"teacher", "gpt-2"}}), "teacher"},
        {with({{"method", "distill"}, {"teacher", "qwen2.5-7b"}}), "teacher"},  // another vocabulary
        {with({{"method", "distill"}, {"teacher", "llama-3-70b"}, {"teacher_dtype", "int8"}}), "teacher_dtype"},
        {with({{"method", "distill"}, {"teacher", "llama-3-70b"}, {"divergence", "kl"}}), "divergence"},
        {with({{"method", "dpo"}, {"teacher", "llama-3-70b"}}), "teacher"},
        {with({{"method", "dpo"}, {"divergence", "jsd"}}), "divergence"},
        {with({{"method", "distill"}, {"teacher", {{"hf_config", {{"model_type", "llama"}}}}}}), "teacher.hf_config.num_hidden_layers"},
    };
    for (const auto& [j, field] : bad) {
        const ParsedConfig p = parse_config(j);
        INFO(j.dump());
        REQUIRE_FALSE(p.ok());
        CHECK(p.errors[0].field == field);
    }
}

TEST_CASE("PPO (TRL 1.12's PPOTrainer): four models, the rollout's kept scores, its refusals") {
    const json base = {{"model", "llama-3-8b"}, {"gpu", "h200"}, {"method", "ppo"}, {"prompt_len", 512},
                       {"completion_len", 256}, {"micro_batch", 4}, {"grad_accum", 4}, {"num_mini_batches", 2},
                       {"finetune", kLora}, {"precision", "bf16-true"}};
    auto with = [&](json patch) { json j = base; j.update(patch); return j; };
    const Config c = parsed(base);
    CHECK(c.reference == Reference::base_without_adapters);  // PPOTrainer with a peft_config: adapters off
    json lora_default = base;
    lora_default.erase("precision");
    CHECK(parsed(lora_default).precision == Precision::bf16_mixed);  // not PEFT's bf16 base: the value model is trained
    CHECK(c.rollout_forward_batch == 64);                    // PPOConfig.local_rollout_forward_batch_size
    CHECK(c.checkpointing == Checkpointing::none);           // PPOTrainer never applies gradient_checkpointing
    const MemoryEstimate m = estimate_memory(c);
    CHECK(phase_names(m) == std::vector<std::string>{"generation", "reference", "value", "reward", "policy_forward", "loss",
                                                     "backward", "optimizer_step", "entropy_stats"});
    // generate's fp32 scores of the whole rollout (4 x 4 x 2 = 32 prompts x 256 tokens x 128256) stay bound from one
    // rollout to the next (stacks/trl-ppo README): they are in every phase, the value pass has nothing else.
    const double scores = 32.0 * 256 * 128256 * 4;
    CHECK(m.phases[2].terms.logits == Approx(scores));
    // The value and reward models are AutoModelForSequenceClassification: no lm_head, a 4096 x 1 score, 7,504,928,768
    // parameters for Llama-3-8B (8,030,261,248 - 128256 x 4096 + 4096; Skywork-Reward-Llama-3.1-8B: "7.5B params").
    Architecture value = c.value_model;
    value.score_labels = 1;
    CHECK(total_params(value) == 7504928768ull);
    // The value model is trained whole beside a LoRA policy: its bf16 AdamW moments (2 x 2 B) and the policy's
    // adapters' fp32 moments (2 x 4 B per adapter parameter).
    const double adapters = double(lora_params(c.model, 16, {"q_proj", "v_proj"}));
    CHECK(m.phases[2].terms.optimizer_states == Approx(4.0 * 7504928768 + 8 * adapters).epsilon(1e-4));
    // Frozen: the reward model in its dtype (bf16 here), no separate reference beside the adapters.
    CHECK(m.phases[2].terms.weights == Approx(2.0 * 8030261248 + 4 * adapters + 2 * 2.0 * 7504928768).epsilon(1e-6));
    // A full fine-tune keeps a second policy as the reference; an fp32 reward model doubles its bytes.
    const MemoryEstimate full = estimate_memory(parsed(with({{"finetune", "full"}})));
    CHECK(parsed(with({{"finetune", "full"}})).reference == Reference::model);
    const MemoryEstimate full_fp32_reward = estimate_memory(parsed(with({{"finetune", "full"}, {"reward_dtype", "fp32"}})));
    CHECK(full_fp32_reward.phases[0].terms.weights - full.phases[0].terms.weights == Approx(2.0 * 7504928768));
    // LoRA is still offered to a full fine-tune under bf16-mixed: not with PEFT's bf16-base recipe, which PPO refuses.
    const Report full_mixed = make_report(parsed(with({{"finetune", "full"}, {"precision", "bf16-mixed"}})));
    CHECK(std::any_of(full_mixed.suggestions.begin(), full_mixed.suggestions.end(),
                      [](const Suggestion& s) { return s.patch.contains("finetune") && s.patch["finetune"] != "full"; }));
    // A smaller reward model: only its bytes change.
    const MemoryEstimate small_reward = estimate_memory(parsed(with({{"reward_model", "llama-3.2-1b"}})));
    CHECK(small_reward.phases[0].terms.weights < m.phases[0].terms.weights - 2.0 * 6e9);
    // The echo reads back as the same configuration.
    const json echoed = config_to_json(parsed(with({{"reward_model", "llama-3.2-1b"}, {"reward_dtype", "fp32"}})));
    CHECK(echoed["reward_model"] == "llama-3.2-1b");
    CHECK(echoed["reward_dtype"] == "fp32");
    CHECK(estimate_memory(parsed(echoed)).total == estimate_memory(parsed(with({{"reward_model", "llama-3.2-1b"}, {"reward_dtype", "fp32"}}))).total);
    const std::pair<json, const char*> bad[] = {
        {with({{"checkpointing", "full"}}), "checkpointing"},  // PPOTrainer never enables it
        {with({{"precision", "bf16-base-mixed"}}), "precision"},
        {with({{"reference", "precomputed"}}), "reference"},
        {with({{"reference", "none"}}), "reference"},
        {with({{"strategy", "fsdp"}, {"gpus", 2}}), "method"},
        {with({{"rollout_forward_batch", 0}}), "rollout_forward_batch"},
        {with({{"method", "dpo"}, {"num_mini_batches", 2}}), "num_mini_batches"},
        {{{"model", "llama-3-8b"}, {"method", "grpo"}, {"prompt_len", 8}, {"completion_len", 8}, {"value_model", "llama-3.2-1b"}}, "value_model"},
        {with({{"reward_dtype", "int4"}}), "reward_dtype"},
        {with({{"inference_engine", {{"name", "vllm"}}}}), "inference_engine"},
    };
    for (const auto& [j, field] : bad) {
        const ParsedConfig p = parse_config(j);
        INFO(j.dump());
        REQUIRE_FALSE(p.ok());
        CHECK(p.errors[0].field == field);
    }
}

TEST_CASE("DPO and GRPO under FSDP: the reference sharded, and gathered whole by FSDP 2") {
    // Qwen2.5-7B, full fine-tuning, bf16 mixed precision (fp32 shards, bf16 gathers).
    json dpo = {{"model", "qwen2.5-7b"}, {"gpu", "h100-80gb"}, {"method", "dpo"}, {"prompt_len", 512},
                {"completion_len", 512}, {"micro_batch", 1}, {"finetune", "full"}, {"strategy", "fsdp"},
                {"zero", 3}, {"fsdp_version", 2}, {"precision", "bf16-mixed"}};
    const double p = double(total_params(parsed(dpo).model));
    auto reference = [](const MemoryEstimate& m) {
        for (const Phase& ph : m.phases)
            if (ph.name == "reference") return ph.terms;
        return Terms{};
    };
    // TRL's prepare_fsdp shards the reference as one FSDP2 unit: its forward holds the flat all-gather buffer and
    // the unsharded parameters, 2 x P x 2 B on every rank however many there are (stacks/trl-fsdp README 1).
    for (int gpus : {2, 8}) {
        dpo["gpus"] = gpus;
        const MemoryEstimate m = estimate_memory(parsed(dpo));
        INFO(gpus);
        CHECK(reference(m).temporaries > 2 * p * 2);
        CHECK(reference(m).temporaries < 2 * p * 2 + 2e9);
        // At rest, the reference is a shard in the policy's load dtype beside the policy's own.
        CHECK(m.phases.back().terms.weights == Approx(2 * p * 4 / gpus).epsilon(1e-3));
    }
    // FSDP1 keeps the reference's root unit (embedding, final norm, lm_head) gathered for good instead.
    dpo["fsdp_version"] = 1;
    dpo["gpus"] = 8;
    const Architecture a = parsed(dpo).model;
    const double root = double(embedding_params(a) + norm_params(a) + lm_head_params(a)) * 2;
    CHECK(estimate_memory(parsed(dpo)).phases.back().terms.weights == Approx(2 * p * 4 / 8 + root).epsilon(1e-3));
    // Under FSDP every rank generates its own completions: GRPO's generation is there.
    json grpo = dpo;
    grpo.update({{"method", "grpo"}, {"num_generations", 8}, {"micro_batch", 8}, {"fsdp_version", 2}});
    CHECK(estimate_memory(parsed(grpo)).phases[0].name == "generation");
}

TEST_CASE("RLOO: GRPO's passes with its old log-probs always scored and a reference by default") {
    const json base = {{"model", "qwen2.5-7b"}, {"gpu", "h100-80gb"}, {"method", "rloo"}, {"prompt_len", 256},
                       {"completion_len", 1024}, {"micro_batch", 8}, {"finetune", kLora}};
    const Config c = parsed(base);
    // RLOOConfig: beta 0.05 (a reference: PEFT's adapters off), num_generations 2.
    CHECK(c.reference == Reference::base_without_adapters);
    CHECK(c.num_generations == 2);
    CHECK(phase_names(estimate_memory(c)) ==
          std::vector<std::string>{"generation", "old_logps", "reference", "policy_forward", "backward", "optimizer_step"});
    json full = base;
    full["finetune"] = "full";
    CHECK(parsed(full).reference == Reference::model);
    json beta0 = base;
    beta0["reference"] = "none";
    CHECK(phase_names(estimate_memory(parsed(beta0))) ==
          std::vector<std::string>{"generation", "old_logps", "policy_forward", "backward", "optimizer_step"});
    // The same step as GRPO's when GRPO scores its old log-probs too (misaligned steps).
    json grpo = base;
    grpo.update({{"method", "grpo"}, {"num_generations", 2}, {"reference", "base-without-adapters"}, {"grad_accum", 2},
                 {"steps_per_generation", 1}, {"num_iterations", 1}});
    json rloo = grpo;
    rloo["method"] = "rloo";
    CHECK(estimate_memory(parsed(rloo)).total == estimate_memory(parsed(grpo)).total);
    json one = base;
    one["num_generations"] = 1;
    const ParsedConfig p = parse_config(one);
    REQUIRE_FALSE(p.ok());
    CHECK(p.errors[0].field == "num_generations");
}

namespace {
// The GiB figure a warning quotes after `marker` ("(1.5 GiB"), in bytes.
double quoted_gib(const Report& r, const std::string& marker) {
    for (const std::string& w : r.warnings) {
        const std::size_t at = w.find(marker);
        if (at != std::string::npos) return std::stod(w.substr(at + marker.size())) * 1024.0 * 1024 * 1024;
    }
    FAIL("no warning with " + marker);
    return 0;
}
}  // namespace

TEST_CASE("A warning's figure is the estimate's: PPO's kept scores, FSDP 2's gathered reference") {
    // A rollout of 3 prompts in chunks of 2: generate pads the scores to whole chunks, 4 rows (the example:
    // 1.2 GiB quoted against 1.46 GiB estimated when the warning counted 3).
    const json ppo = {{"model", "llama-3-8b"}, {"gpu", "h200"}, {"method", "ppo"}, {"prompt_len", 512}, {"completion_len", 256},
                      {"micro_batch", 3}, {"rollout_forward_batch", 2}, {"finetune", kLora}, {"precision", "bf16-true"}};
    const Report p = make_report(parsed(ppo));
    const double kept = p.memory.phases[2].terms.logits;  // the value pass holds the scores and nothing else
    CHECK(kept == Approx(4.0 * 256 * 128256 * 4));
    CHECK(quoted_gib(p, "whole rollout (") == Approx(kept).epsilon(0.05 / (kept / 1073741824.0)));
    const json dpo = {{"model", "llama-3-8b"}, {"gpu", "h200"}, {"method", "dpo"}, {"prompt_len", 256}, {"completion_len", 256},
                      {"strategy", "fsdp"}, {"gpus", 4}, {"fsdp_version", 2}, {"precision", "bf16-mixed"}};
    const Report d = make_report(parsed(dpo));
    // FSDP 2's reference unit: 2 x 8,030,261,248 parameters x 2 B (bf16 param_dtype) in the reference pass.
    const double gathered = 2.0 * 8030261248 * 2;
    CHECK(quoted_gib(d, "every rank (") == Approx(gathered).epsilon(0.05 / (gathered / 1073741824.0)));
}
