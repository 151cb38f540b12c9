#include "advice/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "advice/changes.hpp"
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

}  // namespace

Report make_report(const Config& c, PlanMaker plans, Advice advice) {
    Report r;
    r.config = c;
    r.suggested = advice == Advice::now;
    const Step step(c);  // one derivation for the memory, the time and the warnings
    r.memory = estimate_memory(step);
    r.max_micro_batch = max_micro_batch(c);
    if (r.max_micro_batch == 0 && c.method == TrainingMethod::sft) {  // TRL's sequence is prompt_len + completion_len
        Config one_token = c;
        one_token.micro_batch = 1, one_token.seq_len = 1;
        r.sequence_too_long = estimate_memory(one_token).fits;
    }
    const Architecture& a = c.model;

    if (!r.memory.fits && r.suggested) {
        const ChangeContext x{c, r.memory.at_peak(), r.max_micro_batch};
        const nlohmann::json base = config_to_json(c);
        for (const ChangeRow& row : change_table()) {
            if (!row.suggested_alone || !row.applies(x)) continue;
            const nlohmann::json patch = row.patch(x);
            Config changed;
            if (!apply_patch(base, patch, changed)) continue;
            const Step after(changed);
            const MemoryEstimate m = estimate_memory(after);
            if (r.memory.total - m.total < 0.05 * kGiB) continue;  // nothing the report's 0.1 GiB figures would show
            const StepTime t = estimate_step_time(after);
            r.suggestions.push_back({row.label(x, patch), patch, m.total, m.fits,
                                     row.why(x, patch) + " (saves " + gib(r.memory.total - m.total) + ")", t.step,
                                     t.lower_bound, changed.gpus});
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
    r.time = estimate_step_time(step);
    r.run = estimate_run_cost(c, r.time);
    if (c.plan.on && plans) r.plans = plans(c, 5);

    auto warn = [&](std::string w) { r.warnings.push_back(std::move(w)); };
    if (bf16(c.precision) && c.device == Device::cuda && !supports_bf16(c.gpu))
        warn(c.gpu.name + " has no bf16 support: use 16-mixed");
    const double math = sdpa_math_layers(step);
    if (c.attention == Attention::flash && sm_version(c.gpu) > 0 && sm_version(c.gpu) < 80 && math == 0)
        warn("FlashAttention-2 needs an Ampere or newer GPU; " + c.gpu.name + " falls back to memory-efficient SDPA");
    if (math > 0) {
        const std::string why = step.compute_element == 4 ? "SDPA has no fused kernel for fp32 with grouped kv heads"
                              : bf16(c.precision) ? c.gpu.name + " has no bf16 SDPA kernel"
                                                  : "On " + c.gpu.name + " no SDPA kernel takes grouped kv heads";
        warn(why + ": " + (math < 1 ? "the layers without a mask run" : "every layer runs") +
             " PyTorch's math path, which keeps seq_len x seq_len fp32 probabilities (16-bit on an Ampere or newer "
             "GPU runs flash)");
    }
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
    // Reachable under FSDP only (config_checks refuses bitsandbytes with ZeRO-Offload): CPUOffload steps the optimizer
    // on the CPU shards, and bitsandbytes' optimizers are written for CUDA tensors.
    if ((c.optimizer == Optimizer::adamw_8bit || paged(c.optimizer)) && c.offload != Offload::none)
        warn("with FSDP's CPU offload the optimizer steps on the CPU shards: bitsandbytes' 8-bit and paged optimizers "
             "are written for CUDA (CPU kernels only in some releases), so check that yours runs there; estimated with "
             "its states on the CPU");
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
    if (c.gpus > 1 && c.device == Device::cuda && c.gpu.rocm)
        warn("RCCL's communication buffers (outside PyTorch's allocator) are not included");
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
             "its forward gathers the whole model on every rank (" + gib(fsdp2_reference_gather_bytes(Step(c))) +
             ": the all-gather buffer and the parameters), whatever the number of GPUs; LoRA's adapters-off reference avoids it");
    if (c.method == TrainingMethod::ppo) {
        warn("ppo: TRL 1.12's PPOTrainer (trl.experimental.ppo, the last release with it) keeps generate's fp32 scores of "
             "the whole rollout (" + gib(ppo_kept_scores_bytes(Step(c))) + ") from one rollout "
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
