#include "advice/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "memory/memory_common.hpp"
#include "memory/memory_terms.hpp"
#include "memory/phases.hpp"
#include "setup/config_json.hpp"
#include "setup/strategies.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

namespace {

std::string number_text(double v) {
    char s[32];
    std::snprintf(s, sizeof s, "%g", v);
    return s;
}

std::string gib(double bytes) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f GiB", bytes / kGiB);
    return s;
}

struct Candidate {
    std::string change;
    nlohmann::json patch;
    std::string why;
};

// Applies a patch through the same parser users go through, so a suggestion is always a valid config.
bool apply(const Config& c, const nlohmann::json& patch, Config& out) {
    nlohmann::json j = config_to_json(c);
    for (auto it = patch.begin(); it != patch.end(); ++it) j[it.key()] = it.value();
    ParsedConfig p = parse_config(j);
    if (!p.ok()) return false;
    out = p.config;
    return true;
}

// An OOM checklist in the usual order: precision, micro-batch/sequence, checkpointing and attention kernel,
// ZeRO, offload, 8-bit optimizer, LoRA/QLoRA (more GPUs follow in make_report).
std::vector<Candidate> candidates(const Config& c, std::uint64_t max_mb) {
    std::vector<Candidate> out;
    nlohmann::json adapter_targets = nlohmann::json::array();  // the attention projections
    for (const Linear& l : attention_linears(c.model))
        if (std::find(adapter_targets.begin(), adapter_targets.end(), l.name) == adapter_targets.end())
            adapter_targets.push_back(l.name);
    const MemoryEstimate current = estimate_memory(c);
    const Terms& peak = current.at_peak();
    // TRL's regimes (trl_phases.cpp).
    const MethodTraits& method = method_traits(c.method);
    if (method.takes_reference && c.reference == Reference::model && c.finetune.method != FinetuneMethod::full)
        out.push_back({"Reference = the policy with its adapters off", {{"reference", "base-without-adapters"}},
                       "no second model: TRL scores the reference with the LoRA adapters disabled"});
    if (method.needs_reference && c.reference != Reference::precomputed)
        out.push_back({"Precompute the reference log-probabilities", {{"reference", "precomputed"}},
                       "one pass before training (precompute_ref_log_probs): no reference forward or model in the step"});
    if (c.method == TrainingMethod::distill && c.teacher_dtype == Dtype::fp32)
        out.push_back({"Teacher in bf16", {{"teacher_dtype", "bf16"}},
                       "teacher_model_init_kwargs dtype bfloat16: half the teacher's weights and hidden states"});
    if (method.takes_reference && c.reference == Reference::model && c.strategy == Strategy::fsdp && c.fsdp_version == 2 && c.zero == 3)
        out.push_back({"FSDP 1 for the reference's sake", {{"fsdp_version", 1}},
                       "TRL's prepare_fsdp wraps the reference per layer under FSDP 1 (its root unit kept) instead of one FSDP 2 unit "
                       "gathered whole for each forward; FSDP 1 is deprecated from transformers 5.18"});
    if (c.method == TrainingMethod::ppo && std::min(c.rollout_forward_batch, c.micro_batch * c.grad_accum * c.num_mini_batches) > 1)
        out.push_back({"Generate and score the rollout in smaller chunks", {{"rollout_forward_batch", std::max<std::uint64_t>(1, std::min(c.rollout_forward_batch, c.micro_batch * c.grad_accum * c.num_mini_batches) / 2)}},
                       "local_rollout_forward_batch_size: generation's KV cache and the reference's whole logits shrink (the rollout's scores do not)"});
    if (c.method == TrainingMethod::ppo && reward_element_bytes(c) == 4)
        out.push_back({"Reward model in bf16", {{"reward_dtype", "bf16"}}, "the frozen reward model's weights halve"});
    if (method.groups && c.num_generations % 2 == 0 && c.num_generations / 2 >= (c.method == TrainingMethod::rloo ? 2 : 1) &&
        c.micro_batch % 2 == 0)
        out.push_back({"Fewer generations per prompt (" + std::to_string(c.num_generations / 2) + ")",
                       {{"num_generations", c.num_generations / 2}, {"micro_batch", c.micro_batch / 2}},
                       "half the completions per step: the KV cache and the policy's batch halve"});
    if (c.inference_engine == InferenceEngine::vllm_colocate && !c.inference_sleep_mode)
        out.push_back({"vLLM sleep mode between generations", {{"inference_engine", {{"name", "vllm"}, {"gpu_memory_utilization", c.inference_gpu_share}, {"sleep_mode", true}}}},
                       "vllm_enable_sleep_mode: the engine frees its share after each generation (slower: it is woken and its weights reloaded)"});
    if (c.inference_engine == InferenceEngine::vllm_colocate && c.inference_gpu_share > 0.1)
        out.push_back({"A smaller vLLM share of the GPU", {{"inference_engine", {{"name", "vllm"}, {"gpu_memory_utilization", 0.5 * c.inference_gpu_share}, {"sleep_mode", c.inference_sleep_mode}}}},
                       "vLLM reserves gpu_memory_utilization of the card for its weights and KV cache"});
    if (c.precision == Precision::fp32_true)
        out.push_back({"Train in bf16 mixed precision", {{"precision", "bf16-mixed"}},
                       "activations and logits drop to 16-bit while weights stay fp32"});
    const bool adapters = c.finetune.method != FinetuneMethod::full;
    if (c.precision == Precision::bf16_mixed && adapters && adapter_recipe_allowed(c))
        out.push_back({"Load the frozen base in bf16 (bf16-base-mixed)", {{"precision", "bf16-base-mixed"}},
                       "the frozen weights halve; the adapters, their gradients and states stay fp32"});
    else if (c.precision == Precision::bf16_mixed && c.strategy == Strategy::single)
        out.push_back({"Keep weights in bf16 (bf16-true)", {{"precision", "bf16-true"}},
                       "weights, gradients and optimizer states halve; watch for precision loss in updates"});
    if (c.micro_batch > 1) {
        // The largest divisor of the global batch that fits once accumulation carries gradients.
        const std::uint64_t global = c.micro_batch * c.grad_accum;
        std::uint64_t chosen = 1;
        for (std::uint64_t b = std::min(c.micro_batch - 1, max_mb ? max_mb : 1), tries = 0; b > 1 && tries < 64; --b) {
            if (global % b) continue;
            ++tries;
            Config smaller = c;
            smaller.micro_batch = b, smaller.grad_accum = global / b;
            if (estimate_memory(smaller).fits) {
                chosen = b;
                break;
            }
        }
        out.push_back({"Lower micro_batch to " + std::to_string(chosen) + " with grad_accum " + std::to_string(global / chosen),
                       {{"micro_batch", chosen}, {"grad_accum", global / chosen}},
                       "activations scale with the micro-batch; accumulation keeps the global batch of " +
                           std::to_string(global)});
    }
    if (c.seq_len >= 256 && peak.activations + peak.logits > 0)
        out.push_back({"Halve seq_len to " + std::to_string(c.seq_len / 2), {{"seq_len", c.seq_len / 2}},
                       "activations and logits scale with the sequence (attention scores with its square)"});
    if (c.checkpointing != Checkpointing::full)
        out.push_back({"Turn on full activation checkpointing", {{"checkpointing", "full"}},
                       "each layer keeps only its input and recomputes the rest in backward (~33% more compute)"});
    if (c.attention == Attention::eager)
        out.push_back({"Use flash attention", {{"attention", "flash"}},
                       "no seq_len x seq_len scores are stored"});
    if (c.loss == Loss::full && c.strategy != Strategy::megatron)
        out.push_back({"Chunked cross-entropy (8 chunks)", {{"loss", "chunked"}, {"loss_chunks", 8}},
                       "the fp32 upcast of the logits is taken a chunk at a time"});
    if (c.loss != Loss::fused && c.loss != Loss::fused_linear && c.strategy != Strategy::megatron)
        out.push_back({"Cross-entropy kernel over the 16-bit logits (flash-attn, Liger)", {{"loss", "fused"}},
                       "the loss computes in fp32 inside the kernel: no fp32 copies of the logits"});
    if (c.loss != Loss::fused_linear && c.strategy != Strategy::megatron)
        out.push_back({"Fused linear cross-entropy (Liger)", {{"loss", "fused-linear"}},
                       "lm_head and the loss run chunk by chunk: the logits never exist whole"});
    if (!c.activation_offload && peak.activations > 0 && c.strategy != Strategy::megatron && c.strategy != Strategy::deepspeed)
        out.push_back({"Offload activations to CPU", {{"activation_offload", true}},
                       "saved activations wait in pinned CPU RAM and return ahead of their backward (torchtune)"});
    if (!c.optimizer_in_backward && c.grad_accum == 1 && c.offload == Offload::none &&
        (c.strategy == Strategy::single || c.strategy == Strategy::fsdp))
        out.push_back({"Optimizer step in backward", {{"optimizer_in_backward", true}},
                       "each gradient is applied and freed as soon as backward produces it (torchtune's optimizer_in_bwd)"});
    if (detail::fsdp1_mixed_units(c))
        out.push_back({"FSDP 2 instead of FSDP 1 for LoRA", {{"fsdp_version", 2}},
                       "FSDP 1's units mixing frozen and LoRA weights give the whole flat parameter a gradient; FSDP 2 "
                       "shards per parameter, so only the adapters get one"});
    if (c.strategy == Strategy::deepspeed && c.zero < 3)
        out.push_back({"ZeRO stage " + std::to_string(c.zero + 1), {{"zero", c.zero + 1}},
                       "shards more of the model states across the data-parallel GPUs"});
    if ((c.strategy == Strategy::ddp || c.strategy == Strategy::single) && c.gpus > 1)
        out.push_back({"Shard with FSDP (FULL_SHARD)", {{"strategy", "fsdp"}, {"zero", 3}},
                       "weights, gradients and optimizer states are split across the GPUs"});
    if (c.offload == Offload::none) {
        if (c.strategy == Strategy::deepspeed && c.zero == 3)
            out.push_back({"Offload optimizer and parameters to CPU", {{"offload", "optimizer+params"}},
                           "ZeRO-Infinity keeps only the layers in use on the GPU"});
        else if (c.strategy == Strategy::deepspeed && c.zero >= 1)
            out.push_back({"Offload the optimizer to CPU", {{"offload", "optimizer"}},
                           "master weights and optimizer states move to CPU RAM (ZeRO-Offload)"});
        else if (c.strategy == Strategy::single || c.strategy == Strategy::ddp || c.strategy == Strategy::deepspeed)
            out.push_back({"DeepSpeed ZeRO-2 with the optimizer on CPU",
                           {{"strategy", "deepspeed"}, {"zero", 2}, {"offload", "optimizer"}},
                           "master weights and optimizer states move to CPU RAM (ZeRO-Offload)"});
        else if (c.strategy == Strategy::fsdp)
            out.push_back({"FSDP CPU offload", {{"offload", "optimizer+params"}},
                           "parameters, gradients and the optimizer step move to the CPU"});
    }
    if (c.optimizer == Optimizer::adamw && c.offload == Offload::none && c.strategy != Strategy::megatron)
        out.push_back({"8-bit AdamW (bitsandbytes)", {{"optimizer", "adamw-8bit"}},
                       "optimizer states take 2 bytes per parameter instead of 8"});
    if ((c.optimizer == Optimizer::adamw || c.optimizer == Optimizer::adamw_8bit) && c.offload == Offload::none &&
        c.strategy != Strategy::megatron && c.strategy != Strategy::deepspeed)
        out.push_back({"Paged 8-bit AdamW (bitsandbytes)", {{"optimizer", "paged-adamw-8bit"}},
                       "8-bit states in CUDA unified memory, paged out to CPU RAM when the GPU runs short"});
    // With adapters the usual recipe loads the frozen base in 16-bit (PEFT + autocast).
    // At the configuration's own rank (PEFT's LoraConfig r=8 unless set), so the text is the form's value.
    const std::string rank = std::to_string(c.finetune.rank);
    nlohmann::json lora = {{"finetune", {{"method", "lora"}, {"rank", c.finetune.rank}, {"targets", adapter_targets}}}};
    nlohmann::json qlora = {{"finetune", {{"method", "qlora"}, {"rank", c.finetune.rank}, {"targets", adapter_targets}}}};
    if (c.precision == Precision::bf16_mixed && c.framework->adapter_dtype == AdapterDtype::fp32 && adapter_recipe_allowed(c))
        lora["precision"] = qlora["precision"] = "bf16-base-mixed";
    if (c.finetune.method == FinetuneMethod::full && c.strategy != Strategy::megatron)
        out.push_back({"LoRA (rank " + rank + ") instead of full fine-tuning", lora,
                       "only the adapters have gradients and optimizer states"});
    if (c.finetune.method != FinetuneMethod::qlora && c.strategy != Strategy::megatron)
        out.push_back({"QLoRA: 4-bit base weights with LoRA (rank " + rank + ")", qlora,
                       "frozen weights take about 0.52 bytes per parameter"});
    return out;
}

}  // namespace

Report make_report(const Config& c) {
    Report r;
    r.config = c;
    r.memory = estimate_memory(c);
    r.max_micro_batch = max_micro_batch(c);
    const Architecture& a = c.model;

    if (!r.memory.fits) {
        for (const Candidate& cand : candidates(c, r.max_micro_batch)) {
            Config changed;
            if (!apply(c, cand.patch, changed)) continue;
            const MemoryEstimate m = estimate_memory(changed);
            if (r.memory.total - m.total < 0.05 * kGiB) continue;  // nothing the report's 0.1 GiB figures would show
            const StepTime t = estimate_step_time(changed);
            r.suggestions.push_back({cand.change, cand.patch, m.total, m.fits,
                                     cand.why + " (saves " + gib(r.memory.total - m.total) + ")", t.step,
                                     t.lower_bound, changed.gpus});
        }
        // More GPUs, fully sharded, when the model states alone are the problem.
        if (c.strategy != Strategy::megatron) {
            for (std::uint64_t g = std::max<std::uint64_t>(2, c.gpus * 2); g <= 1024; g *= 2) {
                Config changed;
                nlohmann::json patch = {{"gpus", g}};
                if (c.strategy == Strategy::single || c.strategy == Strategy::ddp)
                    patch = {{"gpus", g}, {"strategy", "fsdp"}, {"zero", 3}};
                else if (c.strategy == Strategy::deepspeed && c.zero < 3)
                    patch = {{"gpus", g}, {"zero", 3}};
                if (!apply(c, patch, changed)) break;
                const MemoryEstimate m = estimate_memory(changed);
                if (m.fits) {
                    const StepTime t = estimate_step_time(changed);
                    r.suggestions.push_back({"Shard over " + std::to_string(g) + " GPUs", patch, m.total, true,
                                             "model states split " + std::to_string(g) + " ways", t.step,
                                             t.lower_bound, changed.gpus});
                    break;
                }
            }
        }
    }

    // Those that fit first; among them the fastest step (unknown times last), then the fewest GPUs.
    std::stable_sort(r.suggestions.begin(), r.suggestions.end(), [](const Suggestion& a, const Suggestion& b) {
        if (a.fits != b.fits) return a.fits;
        if (!a.fits) return false;
        if (a.time_is_bound != b.time_is_bound) return b.time_is_bound;  // a lower bound ranks after a full time
        const double ta = a.step_time > 0 ? a.step_time : 1e300, tb = b.step_time > 0 ? b.step_time : 1e300;
        if (ta != tb) return ta < tb;
        return a.gpus < b.gpus;
    });
    r.time = estimate_step_time(c);
    r.run = estimate_run_cost(c, r.time);

    auto warn = [&](std::string w) { r.warnings.push_back(std::move(w)); };
    const bool bf16 = c.precision == Precision::bf16_mixed || c.precision == Precision::bf16_true ||
                      c.precision == Precision::bf16_base_mixed;
    if (bf16 && c.device == Device::cuda && c.gpu.id != "custom" && c.gpu.bf16_tflops == 0)
        warn(c.gpu.name + " has no bf16 support: use 16-mixed");
    if (c.attention == Attention::flash && (c.gpu.id.rfind("v100", 0) == 0 || c.gpu.id == "t4"))
        warn("FlashAttention-2 needs an Ampere or newer GPU; " + c.gpu.name + " falls back to memory-efficient SDPA");
    if (c.checkpointing == Checkpointing::selective && c.strategy != Strategy::megatron)
        warn("selective recomputation is a Megatron-LM feature; elsewhere it is modelled as recomputing attention "
             "scores only");
    if (a.position == Position::rope && c.seq_len > a.max_positions)
        warn("seq_len exceeds the model's max_position_embeddings (" + std::to_string(a.max_positions) + ")");
    if (c.optimizer_impl != OptimizerImpl::foreach && c.optimizer != Optimizer::adamw)
        warn("optimizer_impl is modelled for adamw only");
    // DeepSpeed 0.19.8 runtime/engine.py _configure_basic_optimizer; Megatron-LM core_v0.15.3 core/optimizer/__init__.py.
    if (c.optimizer == Optimizer::adamw && (c.strategy == Strategy::deepspeed || c.strategy == Strategy::megatron))
        warn(std::string(c.strategy == Strategy::deepspeed ? "DeepSpeed steps AdamW with its own FusedAdam (DeepSpeedCPUAdam with offload)"
                                                           : "Megatron-LM steps AdamW with its own fused Adam") +
             ", as its export launches it: estimated as fused, whatever optimizer_impl says");
    if ((c.optimizer == Optimizer::adamw_8bit || paged(c.optimizer)) && c.offload != Offload::none)
        warn("with offload DeepSpeed steps its own CPU Adam; adamw-8bit is not used");
    // Only where what trains is 16-bit (PEFT keeps fp32 adapters over a 16-bit base).
    if ((c.precision == Precision::bf16_true || c.precision == Precision::fp16_true) && trainable_element_bytes(c) < 4)
        warn("pure 16-bit training: small updates to the trainable weights can round away without fp32 master weights");
    for (const std::string& note : c.notes) warn(note);
    if (c.longest_batch_first)
        warn("longest_batch_first: the estimate is of the first micro-batch, seq_len tokens long; later micro-batches, "
             "which carry gradients, optimizer states and the previous step's tensors, are assumed shorter");
    if (c.compile)
        warn("torch.compile: Inductor's min-cut partitioner recomputes cheap element-wise ops and fuses others, so "
             "the activations are an upper bound (compiled graphs also keep their own workspace)");
    if (c.gpus > 1 && c.device == Device::cuda)
        warn("NCCL's communication buffers (outside PyTorch's allocator) are not included");
    if (r.time.known && r.time.lower_bound)
        warn("step time: the CPU's optimizer step under offload and activation offloading's copies are not timed, "
             "so it is a lower bound");
    if (r.time.known && c.gpus > c.gpus_per_node && c.inter_node_gbps == 0 && c.gpu.network_gbps == 0)
        warn("step time: " + c.gpu.name + " has no reference multi-node system; the network is taken as " +
             number_text(kAssumedNetworkGbps) + " GB/s per GPU: set inter_node_gbps");
    if (c.fp8_recipe == Fp8Recipe::torchao_tensorwise || c.fp8_recipe == Fp8Recipe::torchao_rowwise)
        warn("fp8 (torchao Float8Linear): the linears save their bf16 inputs and weights for backward and cast to float8 "
             "inside each matmul, so activations stay as in bf16 and only the transient float8 copies are added (under "
             "autocast they make no 16-bit weight copies); the step time runs the layers' projections at the float8 peak "
             "(attention and lm_head in bf16)");
    if (te_fp8(c)) {
        const bool fsdp2 = c.strategy == Strategy::fsdp && c.fsdp_version == 2;
        warn(std::string("fp8 (Transformer Engine, read from its v2.18 source, not measured): each te.Linear saves a 1-byte "
                         "fp8 copy of its input for backward, and its fp8 weight (with a transposed copy before Blackwell) ") +
             (c.strategy == Strategy::megatron ? "stays cached across steps (Megatron-LM; in weights)"
              : fsdp2                          ? "is quantized again in backward instead (FSDP 2)"
                                               : "is quantized every forward and saved until backward (accelerate)") +
             (fp8_converts_head(c) ? "; lm_head is converted too" : "; lm_head stays bf16") +
             (c.fp8_recipe == Fp8Recipe::te_delayed ? "; delayed scaling keeps an amax history per quantizer" : "") +
             "; the step time runs the converted linears at the float8 peak (attention in bf16)");
    }
    if (fp8_converts_head(c) && c.model.tied_embeddings)
        warn("fp8: accelerate's Transformer Engine conversion unties a tied lm_head (te.Linear allocates its own weight, which "
             "the optimizer never sees): that extra weight and its gradient are not included");
    if (c.method != TrainingMethod::sft)
        warn("step time: modelled for supervised training; TRL's generation and scoring passes are not timed");
    else if (!r.time.known && c.device == Device::cuda)
        warn("step time: no dense peak is known for " + c.gpu.name + " in this precision");
    if (method_traits(c.method).head == TrlHead::fused_logprob && c.device == Device::cuda)
        warn(std::string(to_string(c.method)) + ": TRL 1.16's fused LM head (from 1.15) scores the completion tokens in "
             "4096 x 32768 tiles; earlier TRL built whole logits (not modelled)");
    if (method_traits(c.method).head == TrlHead::full_logits)
        warn(std::string(to_string(c.method)) + ": " + method_traits(c.method).trainer + " builds the whole (2 x pairs, "
             "sequence, vocabulary) logits in fp32 (no fused head in TRL 1.16)");
    if (c.method == TrainingMethod::distill && detail::autocast(c))
        warn("distill: DistillationTrainer runs the student's and the teacher's training passes outside accelerate's "
             "autocast (measured: bf16=True changes only generation), so their activations are in the weights' dtype");
    if (method_traits(c.method).takes_reference && c.reference == Reference::model && c.strategy == Strategy::fsdp && c.fsdp_version == 2 && c.zero == 3)
        warn(std::string(to_string(c.method)) + " under FSDP 2: TRL's prepare_fsdp shards the reference model as one unit, so "
             "its forward gathers the whole model on every rank (" + gib(fsdp2_reference_gather_bytes(c)) +
             ": the all-gather buffer and the parameters), whatever the number of GPUs; LoRA's adapters-off reference avoids it");
    if (c.method == TrainingMethod::ppo) {
        warn("ppo: TRL 1.12's PPOTrainer (trl.experimental.ppo, the last release with it) keeps generate's fp32 scores of "
             "the whole rollout (" + gib(ppo_kept_scores_bytes(c)) + ") from one rollout "
             "to the next, and trains the policy with whole logits beside the fully trained value model");
        if (detail::autocast(c))
            warn("ppo: PPOTrainer makes its own Accelerator and never reads bf16=: bf16-mixed is `accelerate launch "
                 "--mixed_precision bf16`; otherwise it trains in fp32");
    }
    if (c.inference_sleep_mode)
        warn("vLLM sleep mode: the engine's " + number_text(c.inference_gpu_share) + " share of the card is held only while it "
             "generates, next to the model states; vLLM's CUDA graphs and buffers kept while asleep are not included");
    if (c.device == Device::cpu)
        warn("device \"cpu\" models PyTorch's CPU kernels for validation: no CUDA context or allocator overhead");
    return r;
}

}  // namespace vramcalc
