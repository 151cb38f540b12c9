#include "setup/config_checks.hpp"

#include <algorithm>
#include <string>
#include <tuple>

#include "input/json_reader.hpp"
#include "hardware/gpus.hpp"
#include "setup/strategies.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

void check_consistency(const Config& c, std::vector<FieldError>& errors) {
    const Architecture& a = c.model;
    auto err = [&](const char* f, std::string m) { errors.push_back({f, std::move(m)}); };
    if (a.head_dim == 0 && a.hidden % a.heads != 0)
        err("model.heads", "heads (" + std::to_string(a.heads) + ") must divide hidden (" +
                               std::to_string(a.hidden) + ")");
    if (a.heads % a.kv_heads != 0)
        err("model.kv_heads", "kv_heads (" + std::to_string(a.kv_heads) + ") must divide heads (" +
                                  std::to_string(a.heads) + ")");
    if (a.experts_per_token > a.experts)
        err("model.experts_per_token", "must not exceed experts (" + std::to_string(a.experts) + ")");
    if (a.position == Position::learned && c.seq_len > a.max_positions)
        err("seq_len", "exceeds the model's learned positions (max_positions " + std::to_string(a.max_positions) + ")");
    if (is_mla(a) && (a.qk_nope_dim == 0 || a.qk_rope_dim == 0 || a.v_head_dim == 0))
        err("model.kv_lora_rank", "multi-head latent attention needs qk_nope_dim, qk_rope_dim and v_head_dim");
    if (is_moe(a) && a.dense_layers >= a.layers)
        err("model.dense_layers", "must be fewer than the layers (" + std::to_string(a.layers) + ") in an MoE model");
    if (a.sliding_layers > a.layers) err("model.sliding_layers", "must not exceed the layers");
    // Sizes whose parameter count or byte counts would leave exact 64-bit arithmetic.
    const double width = double(a.heads) * double(std::max(head_dim(a), a.qk_nope_dim + a.qk_rope_dim + a.v_head_dim)) +
                         double(a.kv_lora_rank + a.q_lora_rank);
    const double mlp_width = double(a.ffn) + double(expert_ffn(a)) * double(a.experts) + double(shared_width(a));
    const double params = double(a.vocab) * double(embedding_width(a)) * 2 + double(a.max_positions) * a.hidden +
                          double(a.layers) * (4.0 * a.hidden * width + 3.0 * a.hidden * mlp_width);
    if (params > 1e15) err("model", "is absurdly large (over 10^15 parameters)");
    if (c.finetune.method != FinetuneMethod::full &&
        double(c.finetune.rank) * double(a.layers) * (double(a.hidden) + width + mlp_width) * 8 > 1e15)
        err("finetune.rank", "gives absurdly many adapter parameters (over 10^15)");
    const double tokens = double(c.micro_batch) * double(c.seq_len);
    const double per_token = double(a.vocab) * 16 + double(a.layers) * (double(a.heads) * c.seq_len * 16 +
                             64.0 * (a.hidden + width) + 8.0 * (double(a.ffn) + double(expert_ffn(a)) * double(a.experts_per_token) +
                             double(shared_width(a)) + double(a.experts)));
    // Pipeline stages can hold every micro-batch of the step (GPipe) and a buffer per micro-batch.
    // Context and tensor parallelism split the per-token terms.
    const double in_flight = c.pp > 1 ? double(c.grad_accum) : 1;
    if (tokens * per_token * in_flight / double(c.cp * c.tp) > 1e17)
        err("micro_batch", std::string("micro_batch x seq_len") + (c.pp > 1 ? " x grad_accum (micro-batches in the pipeline)" : "") +
                               " is absurdly large for this model (activations over 10^17 bytes)");
    const StrategyTraits& s = traits(c);
    if (s.max_gpus && c.gpus > s.max_gpus)
        err("gpus", "strategy \"" + std::string(s.name) + "\" uses exactly " + std::to_string(s.max_gpus) + " GPU");
    if (!(s.zero_stages >> c.zero & 1)) err("zero", s.zero_error);
    // Tensor, pipeline and context parallelism: Megatron-LM's own, or FSDP 2 on a device mesh (torchtitan).
    // (DDP composes with PyTorch's tensor parallelism too: torchtitan's data-parallel replicas, or TP alone.)
    const bool meshed = !s.mesh_needs_fsdp2 || c.fsdp_version == 2;
    for (auto [key, degree, what, composes] : {std::tuple{"tp", c.tp, "tensor", s.tensor_parallel},
                                                {"pp", c.pp, "pipeline", s.pipeline_parallel},
                                                {"cp", c.cp, "context", s.context_parallel}})
        if (degree > 1 && !(composes && meshed))
            err(key, std::string(what) + " parallelism needs strategy \"megatron\", or \"fsdp\" with fsdp_version 2 (FSDP 2 on a "
                     "device mesh, as torchtitan composes them)" + (std::string(key) == "tp" ? ", or \"ddp\"" : ""));
    if (c.cp > 1 && c.attention != Attention::flash)
        err("cp", "context parallelism runs SDPA's flash or memory-efficient kernels: use attention \"flash\"");
    if (c.cp > 1 && c.seq_len % c.cp != 0)
        err("cp", "cp (" + std::to_string(c.cp) + ") must divide seq_len (" + std::to_string(c.seq_len) + ")");
    if (c.checkpointing == Checkpointing::selective_op && s.own_model_code)
        err("checkpointing", "\"selective-op\" is torchtitan's per-op policy; Megatron-LM's own is \"selective\"");
    if (c.pp_stages_per_rank > 1 && c.pp_schedule != PipelineSchedule::interleaved_1f1b)
        err("pp_stages_per_rank", "only the interleaved schedule runs several stages per GPU");
    if (c.pp > 1 && c.pp_stages_per_rank > 1 && c.pp * c.pp_stages_per_rank > a.layers)
        err("pp_stages_per_rank", "pp x pp_stages_per_rank (" + std::to_string(c.pp * c.pp_stages_per_rank) +
                                      ") exceeds the model's layers");
    if ((c.precision == Precision::bf16_base_mixed || c.precision == Precision::fp16_base_mixed) &&
        (c.finetune.method == FinetuneMethod::full || !s.adapter_recipe))
        err("precision", std::string(to_string(c.precision)) +
                             " is the adapter recipe on one GPU or DDP (16-bit frozen base, fp32 adapters, autocast): " +
                             (c.finetune.method == FinetuneMethod::full ? "with full fine-tuning use \"bf16-mixed\""
                                                                        : "under this strategy use \"bf16-mixed\" or \"bf16-true\""));
    // Transformer Engine as read in tests/validation/stacks/fp8 (A.8): Megatron-LM's TE layers, or accelerate's
    // conversion of a dense model's nn.Linear modules to te.Linear (one GPU, DDP, DeepSpeed, FSDP).
    const bool te = c.fp8_recipe == Fp8Recipe::te_delayed || c.fp8_recipe == Fp8Recipe::te_current;
    if (te && c.gpu.rocm)
        err("fp8_recipe", "Transformer Engine is NVIDIA's (ROCm's fork is not modelled): use \"torchao-tensorwise\"");
    else if (te && (is_moe(a) || c.finetune.method != FinetuneMethod::full || c.method != TrainingMethod::sft ||
                    c.checkpointing == Checkpointing::selective_op ||
                    (!s.own_model_code && (c.tp > 1 || c.pp > 1 || c.cp > 1 || a.family == find_family_row("gpt2")))))
        err("fp8_recipe", "Transformer Engine's FP8 is modelled for full supervised training of dense models: "
                          "Megatron-LM's TE layers, or accelerate's te.Linear conversion (no tensor, pipeline or "
                          "context parallelism, not GPT-2's Conv1D, not \"selective-op\")");
    if (c.fp8_recipe != Fp8Recipe::none && c.device == Device::cpu)
        err("precision", "FP8 matmuls (torch._scaled_mm) run on CUDA only");
    if (c.fp8_recipe != Fp8Recipe::none && architecture_known(c.gpu) && !supports_fp8(c.gpu))
        err("precision", c.gpu.name + " has no FP8 tensor cores: FP8 training needs compute capability 8.9 or newer "
                         "(Ada, Hopper, Blackwell) or an MI300");
    if (is_trl(c)) {
        const std::string m = to_string(c.method);
        const MethodTraits& t = method_traits(c.method);
        // FSDP: the fused-head trainers' passes, measured through the Trainer (stacks/trl-fsdp).
        const bool fsdp_measured = s.units == ParameterUnits::fsdp_units && t.head == TrlHead::fused_logprob && c.zero >= 2;
        if (!s.trl && !fsdp_measured)
            err("method", m + " is modelled from TRL's " + t.trainer + " on one GPU or DDP" +
                              (t.head == TrlHead::fused_logprob ? " or FSDP (zero 2 or 3)" : "") + " (measured in tests/validation/stacks/trl, trl-fsdp)");
        if (!c.prompt_len) err("prompt_len", "is required with " + m);
        if (!c.completion_len) err("completion_len", "is required with " + m);
        if (c.reference == Reference::base_without_adapters && c.finetune.method == FinetuneMethod::full)
            err("reference", "\"base-without-adapters\" needs LoRA or QLoRA: full fine-tuning has no adapters to turn off");
        if (t.needs_reference && c.reference == Reference::none)
            err("reference", m + " needs reference log-probabilities: \"model\", \"base-without-adapters\" or \"precomputed\"");
        if (!t.takes_reference && c.reference != Reference::none)
            err("reference", m + " takes no reference model (" + t.trainer + "): use \"none\"");
        if (t.generates && c.reference == Reference::precomputed)
            err("reference", m + " scores fresh completions: its reference cannot be precomputed");
        // TRL's GRPOConfig and RLOOConfig: the generation batch (micro_batch x processes x steps_per_generation) holds
        // whole groups; RLOO's leave-one-out baseline needs two completions a prompt at least.
        const std::uint64_t generated = c.micro_batch * data_parallel(c) * c.steps_per_generation;
        if (t.groups && generated % c.num_generations)
            err("num_generations", "must divide the completions of a generation (micro_batch x data-parallel GPUs x "
                                   "steps_per_generation = " + std::to_string(generated) + ")");
        if (c.method == TrainingMethod::rloo && c.num_generations < 2)
            err("num_generations", "must be 2 or more: RLOO's baseline for a completion is the mean of the others");
        if (c.method == TrainingMethod::distill && c.teacher.vocab != c.model.vocab)
            err("teacher", "has a vocabulary of " + std::to_string(c.teacher.vocab) + ", the student " +
                               std::to_string(c.model.vocab) + ": the divergence compares the two over one vocabulary");
        if (c.longest_batch_first) err("longest_batch_first", "is a LitGPT loop's; not with " + m);
        if (c.method == TrainingMethod::ppo) {
            // PPOTrainer builds its own Accelerator and loop (no Trainer.train): gradient checkpointing is never
            // enabled, and the value model, trained beside the policy, is loaded like it.
            if (c.checkpointing != Checkpointing::none)
                err("checkpointing", "PPOTrainer (TRL 1.12) never enables gradient checkpointing: use \"none\"");
            if (c.precision == Precision::bf16_base_mixed || c.precision == Precision::fp16_base_mixed)
                err("precision", "PPOTrainer trains the whole value model beside the policy: load both alike (\"32-true\", "
                                 "\"bf16-mixed\" or \"bf16-true\")");
            if (c.fp8_recipe != Fp8Recipe::none) err("precision", "fp8 is not modelled with ppo");
            if (c.activation_offload || c.optimizer_in_backward)
                err(c.activation_offload ? "activation_offload" : "optimizer_in_backward", "is torchtune's; PPOTrainer has no such option");
        }
    }
    if (!method_traits(c.method).groups && c.inference_engine != InferenceEngine::none)
        err("inference_engine", "a vLLM engine generates for GRPO and RLOO: set \"method\": \"grpo\" or \"rloo\"");
    if (!s.pure_16bit && (c.precision == Precision::bf16_true || c.precision == Precision::fp16_true))
        err("precision", "DeepSpeed's bf16 and fp16 modes keep fp32 master weights: use \"bf16-mixed\" or \"16-mixed\"");
    if (c.finetune.method != FinetuneMethod::full) {
        const std::vector<std::string> modules = adapter_target_names(a);
        std::string names;
        for (const std::string& n : modules) names += (names.empty() ? "" : ", ") + n;
        for (const std::string& t : c.finetune.targets)
            if (std::find(modules.begin(), modules.end(), t) == modules.end())
                err("finetune.targets", "this model has no module \"" + printable_key(t) + "\"; its projections: " + names);
    }
    if (c.gpus % (c.tp * c.pp * c.cp) != 0)
        err("gpus", "gpus (" + std::to_string(c.gpus) + ") must be a multiple of tp x pp x cp (" +
                        std::to_string(c.tp * c.pp * c.cp) + ")");
    if (c.tp > 1 && (a.heads % c.tp != 0 || a.kv_heads % c.tp != 0))
        err("tp", "tp (" + std::to_string(c.tp) + ") must divide heads (" + std::to_string(a.heads) +
                      ") and kv_heads (" + std::to_string(a.kv_heads) + ")");
    if (c.pp > a.layers) err("pp", "pp (" + std::to_string(c.pp) + ") exceeds the model's layers");
    if (c.sequence_parallel && c.tp < 2) err("sequence_parallel", "needs tp of 2 or more");
    if (c.offload != Offload::none) {
        switch (s.offload) {
            case OffloadSupport::deepspeed:
                if (c.zero == 0) err("offload", "DeepSpeed offloads with ZeRO stage 1, 2 or 3 only");
                if (c.offload == Offload::optimizer_and_params && c.zero != 3)
                    err("offload", "offloading parameters needs ZeRO stage 3");
                break;
            case OffloadSupport::fsdp:
                if (c.offload == Offload::optimizer)
                    err("offload", "FSDP offloads parameters and gradients with the optimizer: use \"optimizer+params\"");
                break;
            case OffloadSupport::none: err("offload", "offload needs strategy \"deepspeed\" or \"fsdp\"");
        }
    }
    if (c.finetune.method != FinetuneMethod::qlora &&
        (c.finetune.backend != QuantBackend::bitsandbytes || !c.finetune.backend_version.empty()))
        err("finetune.backend", "the quantization back end applies to QLoRA only");
    if (c.finetune.method == FinetuneMethod::qlora && s.own_model_code)
        err("finetune", "QLoRA is not available with Megatron-LM");
    // ZeRO-Offload steps the fp32 partitions on the CPU; bitsandbytes' optimizers step CUDA tensors, and accelerate
    // 1.15 (_prepare_deepspeed) replaces a client optimizer there with DeepSpeedCPUAdam: not the run estimated.
    const bool bitsandbytes_optimizer = c.optimizer == Optimizer::adamw_8bit || paged(c.optimizer) || c.optimizer == Optimizer::lion;
    if (c.strategy == Strategy::deepspeed && c.offload != Offload::none && bitsandbytes_optimizer)
        err("optimizer", std::string("\"") + to_string(c.optimizer) +
                             "\" is a bitsandbytes optimizer, which cannot step ZeRO-Offload's CPU partitions: use \"adamw\" "
                             "(DeepSpeedCPUAdam), \"sgd\", \"sgd-momentum\" or \"adafactor\", or offload \"none\"");
}

}  // namespace vramcalc
