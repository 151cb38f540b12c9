#include "advice/changes.hpp"

#include <algorithm>

#include "memory/memory_common.hpp"
#include "memory/memory_terms.hpp"
#include "memory/phases.hpp"
#include "setup/config_json.hpp"
#include "setup/strategies.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

using nlohmann::json;
using X = const ChangeContext&;

namespace {

bool adapters(const Config& c) { return c.finetune.method != FinetuneMethod::full; }
// The 16-bit type a precision row moves to: fp16 where the configuration runs fp16 or the GPU has no bf16 (V100, T4),
// else bf16.
bool runs_bf16(const Config& c) { return !fp16(c.precision) && (c.device != Device::cuda || supports_bf16(c.gpu)); }
std::string half(const Config& c, const char* mode) { return std::string(runs_bf16(c) ? "bf16-" : "16-") + mode; }
const char* half_name(const Config& c) { return runs_bf16(c) ? "bf16" : "fp16"; }
bool mixed_16bit(const Config& c) { return c.precision == Precision::bf16_mixed || c.precision == Precision::fp16_mixed; }
bool megatron(const Config& c) { return c.strategy == Strategy::megatron; }
std::uint64_t ppo_rollout_rows(const Config& c) {
    return std::min(c.rollout_forward_batch, c.micro_batch * c.grad_accum * c.num_mini_batches);
}

// The largest divisor of the global batch below micro_batch that fits once accumulation carries gradients.
std::uint64_t fitting_micro_batch(X x) {
    const Config& c = x.config;
    const std::uint64_t global = c.micro_batch * c.grad_accum;
    for (std::uint64_t b = std::min(c.micro_batch - 1, x.max_micro_batch ? x.max_micro_batch : 1), tries = 0; b > 1 && tries < 64; --b) {
        if (global % b) continue;
        ++tries;
        Config smaller = c;
        smaller.micro_batch = b, smaller.grad_accum = global / b;
        if (estimate_memory(smaller).fits) return b;
    }
    return 1;
}

// Fully sharded over more GPUs, for when the model states alone are the problem: the patch for g GPUs (ZeRO-3 or
// FSDP FULL_SHARD where the strategy does not shard everything yet), and the fewest (a power of two, at least twice
// the GPUs now, at most 1024) with which the run fits; 0 when none does.
json more_gpus_patch(const Config& c, std::uint64_t g) {
    if (c.strategy == Strategy::single || c.strategy == Strategy::ddp) return {{"gpus", g}, {"strategy", "fsdp"}, {"zero", 3}};
    if (c.strategy == Strategy::deepspeed && c.zero < 3) return {{"gpus", g}, {"zero", 3}};
    return {{"gpus", g}};
}
std::uint64_t fitting_gpus(const Config& c) {
    for (std::uint64_t g = std::max<std::uint64_t>(2, c.gpus * 2); g <= 1024; g *= 2) {
        Config changed;
        if (!apply_patch(c, more_gpus_patch(c, g), changed)) return 0;
        if (estimate_memory(changed).fits) return g;
    }
    return 0;
}

// LoRA or QLoRA on the attention projections at the configuration's own rank (PEFT's LoraConfig r=8 unless set, so
// the text is the form's value); with adapters the usual recipe loads the frozen base in 16-bit (PEFT + autocast).
json adapter_patch(const Config& c, const char* method) {
    json targets = json::array();
    for (const Linear& l : attention_linears(c.model))
        if (std::find(targets.begin(), targets.end(), l.name) == targets.end()) targets.push_back(l.name);
    json patch = {{"finetune", {{"method", method}, {"rank", c.finetune.rank}, {"targets", targets}}}};
    if (mixed_16bit(c) && c.framework->adapter_dtype == AdapterDtype::fp32 && adapter_recipe_allowed(c))
        patch["precision"] = half(c, "base-mixed");
    return patch;
}

// Full checkpointing of every N-th layer (torchtitan's ac_freq; N = 1: every layer), where it checkpoints more
// layers than the configuration does now.
bool checkpoints_more(const Config& c, std::uint64_t every) {
    if (c.checkpointing == Checkpointing::full) return c.checkpoint_every > every;
    return every < c.model.layers || every == 1;
}
json every_nth_layer(std::uint64_t every) {
    return every == 1 ? json{{"checkpointing", "full"}} : json{{"checkpointing", {{"mode", "layers"}, {"every", every}}}};
}

std::string text(const char* s) { return s; }

const std::vector<ChangeRow> kChanges = {
    // TRL's regimes (trl_phases.cpp).
    {"reference-adapters-off", ChangeAxis::reference, false, true,
     [](X x) {
         const Config& c = x.config;
         return method_traits(c.method).takes_reference && c.reference == Reference::model && adapters(c);
     },
     [](X) -> json { return {{"reference", "base-without-adapters"}}; },
     [](X, const json&) { return text("Reference = the policy with its adapters off"); },
     [](X, const json&) { return text("no second model: TRL scores the reference with the LoRA adapters disabled"); }},
    {"precompute-reference", ChangeAxis::reference, false, true,
     [](X x) { return method_traits(x.config.method).needs_reference && x.config.reference != Reference::precomputed; },
     [](X) -> json { return {{"reference", "precomputed"}}; },
     [](X, const json&) { return text("Precompute the reference log-probabilities"); },
     [](X, const json&) { return text("one pass before training (precompute_ref_log_probs): no reference forward or model in the step"); }},
    {"teacher-bf16", ChangeAxis::teacher, false, true,
     [](X x) { return x.config.method == TrainingMethod::distill && x.config.teacher_dtype == Dtype::fp32; },
     [](X) -> json { return {{"teacher_dtype", "bf16"}}; },
     [](X, const json&) { return text("Teacher in bf16"); },
     [](X, const json&) { return text("teacher_model_init_kwargs dtype bfloat16: half the teacher's weights and hidden states"); }},
    {"fsdp1-reference", ChangeAxis::layout, false, true,
     [](X x) {
         const Config& c = x.config;
         return method_traits(c.method).takes_reference && c.reference == Reference::model && c.strategy == Strategy::fsdp &&
                c.fsdp_version == 2 && c.zero == 3;
     },
     [](X) -> json { return {{"fsdp_version", 1}}; },
     [](X, const json&) { return text("FSDP 1 for the reference's sake"); },
     [](X, const json&) {
         return text("TRL's prepare_fsdp wraps the reference per layer under FSDP 1 (its root unit kept) instead of one FSDP 2 "
                     "unit gathered whole for each forward; FSDP 1 is deprecated from transformers 5.18");
     }},
    {"ppo-rollout-chunks", ChangeAxis::rollout, false, true,
     [](X x) { return x.config.method == TrainingMethod::ppo && ppo_rollout_rows(x.config) > 1; },
     [](X x) -> json { return {{"rollout_forward_batch", std::max<std::uint64_t>(1, ppo_rollout_rows(x.config) / 2)}}; },
     [](X, const json&) { return text("Generate and score the rollout in smaller chunks"); },
     [](X, const json&) {
         return text("local_rollout_forward_batch_size: generation's KV cache and the reference's whole logits shrink (the "
                     "rollout's scores do not)");
     }},
    {"reward-bf16", ChangeAxis::reward, false, true,
     [](X x) { return x.config.method == TrainingMethod::ppo && reward_element_bytes(Step(x.config)) == 4; },
     [](X) -> json { return {{"reward_dtype", "bf16"}}; },
     [](X, const json&) { return text("Reward model in bf16"); },
     [](X, const json&) { return text("the frozen reward model's weights halve"); }},
    {"fewer-generations", ChangeAxis::generations, true, true,
     [](X x) {
         const Config& c = x.config;
         return method_traits(c.method).groups && c.num_generations % 2 == 0 &&
                c.num_generations / 2 >= (c.method == TrainingMethod::rloo ? 2u : 1u) && c.micro_batch % 2 == 0;
     },
     [](X x) -> json { return {{"num_generations", x.config.num_generations / 2}, {"micro_batch", x.config.micro_batch / 2}}; },
     [](X x, const json&) { return "Fewer generations per prompt (" + std::to_string(x.config.num_generations / 2) + ")"; },
     [](X, const json&) { return text("half the completions per step: the KV cache and the policy's batch halve"); }},
    {"vllm-sleep", ChangeAxis::inference_engine, false, true,
     [](X x) { return x.config.inference_engine == InferenceEngine::vllm_colocate && !x.config.inference_sleep_mode; },
     [](X x) -> json {
         return {{"inference_engine", {{"name", "vllm"}, {"gpu_memory_utilization", x.config.inference_gpu_share}, {"sleep_mode", true}}}};
     },
     [](X, const json&) { return text("vLLM sleep mode between generations"); },
     [](X, const json&) {
         return text("vllm_enable_sleep_mode: the engine frees its share after each generation (slower: it is woken and its "
                     "weights reloaded)");
     }},
    {"vllm-smaller-share", ChangeAxis::inference_engine, false, true,
     [](X x) { return x.config.inference_engine == InferenceEngine::vllm_colocate && x.config.inference_gpu_share > 0.1; },
     [](X x) -> json {
         const Config& c = x.config;
         return {{"inference_engine", {{"name", "vllm"}, {"gpu_memory_utilization", 0.5 * c.inference_gpu_share}, {"sleep_mode", c.inference_sleep_mode}}}};
     },
     [](X, const json&) { return text("A smaller vLLM share of the GPU"); },
     [](X, const json&) { return text("vLLM reserves gpu_memory_utilization of the card for its weights and KV cache"); }},
    // Precision.
    // Where the GPU has no bf16, its fp16 counterpart: the same bytes, and a step the GPU runs (and that is timed).
    {"fp16-for-bf16", ChangeAxis::precision, false, false,
     [](X x) { return bf16(x.config.precision) && !runs_bf16(x.config); },
     [](X x) -> json { return {{"precision", to_string(fp16_counterpart(x.config.precision))}}; },
     [](X x, const json&) { return "fp16 instead of bf16 (the " + x.config.gpu.name + " has no bf16)"; },
     [](X, const json&) { return text("the same bytes; the GPU computes in fp16, with loss scaling"); }},
    {"bf16-mixed", ChangeAxis::precision, false, true,
     [](X x) { return x.config.precision == Precision::fp32_true; },
     [](X x) -> json { return {{"precision", half(x.config, "mixed")}}; },
     [](X x, const json&) { return std::string("Train in ") + half_name(x.config) + " mixed precision"; },
     [](X, const json&) { return text("activations and logits drop to 16-bit while weights stay fp32"); }},
    {"bf16-base-mixed", ChangeAxis::precision, false, true,
     [](X x) { return mixed_16bit(x.config) && adapters(x.config) && adapter_recipe_allowed(x.config); },
     [](X x) -> json { return {{"precision", half(x.config, "base-mixed")}}; },
     [](X x, const json&) {
         return std::string("Load the frozen base in ") + half_name(x.config) + " (" + half(x.config, "base-mixed") + ")";
     },
     [](X, const json&) { return text("the frozen weights halve; the adapters, their gradients and states stay fp32"); }},
    {"bf16-true", ChangeAxis::precision, false, true,
     [](X x) {
         const Config& c = x.config;
         return mixed_16bit(c) && c.strategy == Strategy::single && !(adapters(c) && adapter_recipe_allowed(c));
     },
     [](X x) -> json { return {{"precision", half(x.config, "true")}}; },
     [](X x, const json&) { return std::string("Keep weights in ") + half_name(x.config) + " (" + half(x.config, "true") + ")"; },
     [](X, const json&) { return text("weights, gradients and optimizer states halve; watch for precision loss in updates"); }},
    // The batch and the sequence.
    {"lower-micro-batch", ChangeAxis::micro_batch, false, true,
     [](X x) { return x.config.micro_batch > 1; },
     [](X x) -> json {
         const std::uint64_t b = fitting_micro_batch(x), global = x.config.micro_batch * x.config.grad_accum;
         return {{"micro_batch", b}, {"grad_accum", global / b}};
     },
     [](X, const json& patch) {
         return "Lower micro_batch to " + patch["micro_batch"].dump() + " with grad_accum " + patch["grad_accum"].dump();
     },
     [](X x, const json&) {
         return "activations scale with the micro-batch; accumulation keeps the global batch of " +
                std::to_string(x.config.micro_batch * x.config.grad_accum);
     }},
    {"halve-seq-len", ChangeAxis::sequence, true, true,
     [](X x) { return x.config.seq_len >= 256 && x.peak.activations + x.peak.logits > 0; },
     [](X x) -> json { return {{"seq_len", x.config.seq_len / 2}}; },
     [](X x, const json&) { return "Halve seq_len to " + std::to_string(x.config.seq_len / 2); },
     [](X, const json&) { return text("activations and logits scale with the sequence (attention scores with its square)"); }},
    // Checkpointing: every 4th layer, every 2nd, every one (each checkpoints more layers than the one before).
    {"checkpoint-every-4th-layer", ChangeAxis::checkpointing, false, false,
     [](X x) { return x.config.model.layers >= 8 && checkpoints_more(x.config, 4); },
     [](X) { return every_nth_layer(4); },
     [](X, const json&) { return text("Checkpoint every 4th layer"); },
     [](X, const json&) { return text("a quarter of the layers keep only their input and recompute the rest in backward"); }},
    {"checkpoint-every-2nd-layer", ChangeAxis::checkpointing, false, false,
     [](X x) { return x.config.model.layers >= 4 && checkpoints_more(x.config, 2); },
     [](X) { return every_nth_layer(2); },
     [](X, const json&) { return text("Checkpoint every 2nd layer"); },
     [](X, const json&) { return text("half the layers keep only their input and recompute the rest in backward"); }},
    {"full-checkpointing", ChangeAxis::checkpointing, false, true,
     [](X x) { return x.config.checkpointing != Checkpointing::full; },
     [](X) { return every_nth_layer(1); },
     [](X, const json&) { return text("Turn on full activation checkpointing"); },
     [](X, const json&) { return text("each layer keeps only its input and recomputes the rest in backward (~33% more compute)"); }},
    // Megatron-LM's selective recomputation (Korthikanti et al. 2022 §5): the attention scores, where they are kept.
    {"selective-recompute", ChangeAxis::selective_recompute, false, false,
     [](X x) {
         const Config& c = x.config;
         return c.checkpointing == Checkpointing::none && (megatron(c) || c.attention == Attention::eager);
     },
     [](X) -> json { return {{"checkpointing", "selective"}}; },
     [](X, const json&) { return text("Selective recomputation (attention scores)"); },
     [](X, const json&) { return text("the attention scores are recomputed in backward instead of kept"); }},
    {"flash-attention", ChangeAxis::attention, false, true,
     [](X x) { return x.config.attention == Attention::eager; },
     [](X) -> json { return {{"attention", "flash"}}; },
     [](X, const json&) { return text("Use flash attention"); },
     [](X, const json&) { return text("no seq_len x seq_len scores are stored"); }},
    // The loss.
    {"chunked-loss", ChangeAxis::loss, false, true,
     [](X x) { return x.config.loss == Loss::full && !megatron(x.config); },
     [](X) -> json { return {{"loss", "chunked"}, {"loss_chunks", 8}}; },
     [](X, const json&) { return text("Chunked cross-entropy (8 chunks)"); },
     [](X, const json&) { return text("the fp32 upcast of the logits is taken a chunk at a time"); }},
    {"fused-loss", ChangeAxis::loss, false, true,
     [](X x) { return x.config.loss != Loss::fused && x.config.loss != Loss::fused_linear && !megatron(x.config); },
     [](X) -> json { return {{"loss", "fused"}}; },
     [](X, const json&) { return text("Cross-entropy kernel over the 16-bit logits (flash-attn, Liger)"); },
     [](X, const json&) { return text("the loss computes in fp32 inside the kernel: no fp32 copies of the logits"); }},
    {"fused-linear-loss", ChangeAxis::loss, false, true,
     [](X x) { return x.config.loss != Loss::fused_linear && !megatron(x.config); },
     [](X) -> json { return {{"loss", "fused-linear"}}; },
     [](X, const json&) { return text("Fused linear cross-entropy (Liger)"); },
     [](X, const json&) { return text("lm_head and the loss run chunk by chunk: the logits never exist whole"); }},
    {"activation-offload", ChangeAxis::activation_offload, false, true,
     [](X x) {
         const Config& c = x.config;
         return !c.activation_offload && x.peak.activations > 0 && !megatron(c) && c.strategy != Strategy::deepspeed;
     },
     [](X) -> json { return {{"activation_offload", true}}; },
     [](X, const json&) { return text("Offload activations to CPU"); },
     [](X, const json&) { return text("saved activations wait in pinned CPU RAM and return ahead of their backward (torchtune)"); }},
    {"optimizer-in-backward", ChangeAxis::optimizer_step, false, true,
     [](X x) {
         const Config& c = x.config;
         return !c.optimizer_in_backward && c.grad_accum == 1 && c.offload == Offload::none &&
                (c.strategy == Strategy::single || c.strategy == Strategy::fsdp);
     },
     [](X) -> json { return {{"optimizer_in_backward", true}}; },
     [](X, const json&) { return text("Optimizer step in backward"); },
     [](X, const json&) { return text("each gradient is applied and freed as soon as backward produces it (torchtune's optimizer_in_bwd)"); }},
    // Sharding and offload, one step at a time.
    {"fsdp2-for-lora", ChangeAxis::layout, false, true,
     [](X x) { return detail::fsdp1_mixed_units(x.config); },
     [](X) -> json { return {{"fsdp_version", 2}}; },
     [](X, const json&) { return text("FSDP 2 instead of FSDP 1 for LoRA"); },
     [](X, const json&) {
         return text("FSDP 1's units mixing frozen and LoRA weights give the whole flat parameter a gradient; FSDP 2 shards per "
                     "parameter, so only the adapters get one");
     }},
    {"next-zero-stage", ChangeAxis::layout, false, true,
     [](X x) { return x.config.strategy == Strategy::deepspeed && x.config.zero < 3; },
     [](X x) -> json { return {{"zero", x.config.zero + 1}}; },
     [](X x, const json&) { return "ZeRO stage " + std::to_string(x.config.zero + 1); },
     [](X, const json&) { return text("shards more of the model states across the data-parallel GPUs"); }},
    {"fsdp-full-shard", ChangeAxis::layout, false, true,
     [](X x) { return (x.config.strategy == Strategy::ddp || x.config.strategy == Strategy::single) && x.config.gpus > 1; },
     [](X) -> json { return {{"strategy", "fsdp"}, {"zero", 3}}; },
     [](X, const json&) { return text("Shard with FSDP (FULL_SHARD)"); },
     [](X, const json&) { return text("weights, gradients and optimizer states are split across the GPUs"); }},
    {"zero-infinity", ChangeAxis::layout, false, true,
     [](X x) { return x.config.offload == Offload::none && x.config.strategy == Strategy::deepspeed && x.config.zero == 3; },
     [](X) -> json { return {{"offload", "optimizer+params"}}; },
     [](X, const json&) { return text("Offload optimizer and parameters to CPU"); },
     [](X, const json&) { return text("ZeRO-Infinity keeps only the layers in use on the GPU"); }},
    {"zero-offload", ChangeAxis::layout, false, true,
     [](X x) {
         const Config& c = x.config;
         return c.offload == Offload::none && c.strategy == Strategy::deepspeed && c.zero >= 1 && c.zero < 3;
     },
     [](X) -> json { return {{"offload", "optimizer"}}; },
     [](X, const json&) { return text("Offload the optimizer to CPU"); },
     [](X, const json&) { return text("master weights and optimizer states move to CPU RAM (ZeRO-Offload)"); }},
    {"deepspeed-zero2-offload", ChangeAxis::layout, false, true,
     [](X x) {
         const Config& c = x.config;
         return c.offload == Offload::none && (c.strategy == Strategy::single || c.strategy == Strategy::ddp ||
                                               (c.strategy == Strategy::deepspeed && c.zero == 0));
     },
     [](X) -> json { return {{"strategy", "deepspeed"}, {"zero", 2}, {"offload", "optimizer"}}; },
     [](X, const json&) { return text("DeepSpeed ZeRO-2 with the optimizer on CPU"); },
     [](X, const json&) { return text("master weights and optimizer states move to CPU RAM (ZeRO-Offload)"); }},
    {"fsdp-cpu-offload", ChangeAxis::layout, false, true,
     [](X x) { return x.config.offload == Offload::none && x.config.strategy == Strategy::fsdp; },
     [](X) -> json { return {{"offload", "optimizer+params"}}; },
     [](X, const json&) { return text("FSDP CPU offload"); },
     [](X, const json&) { return text("parameters, gradients and the optimizer step move to the CPU"); }},
    // The optimizer.
    {"shard-over-more-gpus", ChangeAxis::layout, false, true,
     [](X x) { return !megatron(x.config) && fitting_gpus(x.config) > 0; },
     [](X x) { return more_gpus_patch(x.config, fitting_gpus(x.config)); },
     [](X, const json& patch) { return "Shard over " + std::to_string(patch["gpus"].get<std::uint64_t>()) + " GPUs"; },
     [](X, const json& patch) { return "model states split " + std::to_string(patch["gpus"].get<std::uint64_t>()) + " ways"; }},
    {"adamw-8bit", ChangeAxis::optimizer, false, true,
     [](X x) { return x.config.optimizer == Optimizer::adamw && x.config.offload == Offload::none && !megatron(x.config); },
     [](X) -> json { return {{"optimizer", "adamw-8bit"}}; },
     [](X, const json&) { return text("8-bit AdamW (bitsandbytes)"); },
     [](X, const json&) { return text("optimizer states take 2 bytes per parameter instead of 8"); }},
    {"paged-adamw-8bit", ChangeAxis::optimizer, false, true,
     [](X x) {
         const Config& c = x.config;
         return (c.optimizer == Optimizer::adamw || c.optimizer == Optimizer::adamw_8bit) && c.offload == Offload::none &&
                !megatron(c) && c.strategy != Strategy::deepspeed;
     },
     [](X) -> json { return {{"optimizer", "paged-adamw-8bit"}}; },
     [](X, const json&) { return text("Paged 8-bit AdamW (bitsandbytes)"); },
     [](X, const json&) { return text("8-bit states in CUDA unified memory, paged out to CPU RAM when the GPU runs short"); }},
    // What is trained: adapters instead of every weight.
    {"lora", ChangeAxis::adapters, true, true,
     [](X x) { return x.config.finetune.method == FinetuneMethod::full && !megatron(x.config); },
     [](X x) { return adapter_patch(x.config, "lora"); },
     [](X x, const json&) { return "LoRA (rank " + std::to_string(x.config.finetune.rank) + ") instead of full fine-tuning"; },
     [](X, const json&) { return text("only the adapters have gradients and optimizer states"); }},
    {"qlora", ChangeAxis::adapters, true, true,
     [](X x) { return x.config.finetune.method != FinetuneMethod::qlora && !megatron(x.config); },
     [](X x) { return adapter_patch(x.config, "qlora"); },
     [](X x, const json&) { return "QLoRA: 4-bit base weights with LoRA (rank " + std::to_string(x.config.finetune.rank) + ")"; },
     [](X, const json&) { return text("frozen weights take about 0.52 bytes per parameter"); }},
};

}  // namespace

const std::vector<ChangeRow>& change_table() { return kChanges; }

bool apply_patch(const Config& c, const json& patch, Config& out) { return apply_patch(config_to_json(c), patch, out); }

bool apply_patch(const json& base, const json& patch, Config& out) {
    json j = base;
    for (auto it = patch.begin(); it != patch.end(); ++it) j[it.key()] = it.value();
    ParsedConfig p = parse_config(j);
    if (!p.ok()) return false;
    out = p.config;
    return true;
}

}  // namespace vramcalc
