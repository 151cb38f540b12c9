// The training configuration vramcalc estimates: one flat record, every field with a default.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hardware/gpus.hpp"
#include "model/architecture.hpp"
#include "setup/alloc_conf.hpp"
#include "setup/frameworks.hpp"

namespace vramcalc {

// *_base_mixed: the PEFT adapter recipe — the frozen base loaded in 16-bit, the adapters (and their gradients and
// states) in fp32, compute under torch.autocast (Trainer bf16=True over from_pretrained(dtype=bfloat16)).
enum class Precision { fp32_true, bf16_mixed, fp16_mixed, bf16_true, fp16_true, bf16_base_mixed, fp16_base_mixed };
// The 16-bit type a precision computes in.
inline bool bf16(Precision p) { return p == Precision::bf16_mixed || p == Precision::bf16_true || p == Precision::bf16_base_mixed; }
inline bool fp16(Precision p) { return p == Precision::fp16_mixed || p == Precision::fp16_true || p == Precision::fp16_base_mixed; }
// The same recipe in fp16 (for a GPU without bf16); fp16 and fp32 precisions are themselves.
inline Precision fp16_counterpart(Precision p) {
    return p == Precision::bf16_mixed ? Precision::fp16_mixed : p == Precision::bf16_true ? Precision::fp16_true
         : p == Precision::bf16_base_mixed ? Precision::fp16_base_mixed : p;
}
enum class Optimizer { adamw, adamw_8bit, adafactor, lion, sgd, sgd_momentum, paged_adamw, paged_adamw_8bit };
// bitsandbytes' paged optimizers keep their states in CUDA unified memory (cudaMallocManaged): on the GPU while
// resident, but outside PyTorch's caching allocator.
inline bool paged(Optimizer o) { return o == Optimizer::paged_adamw || o == Optimizer::paged_adamw_8bit; }
enum class OptimizerImpl { foreach, fused, single_tensor };
enum class FinetuneMethod { full, lora, qlora };
// selective: Megatron's (attention scores recomputed); selective_op: torchtitan's per-op policy (the outputs
// of every other matmul, attention and reduce-scatter kept, the rest recomputed).
enum class Checkpointing { none, selective, selective_op, full };
enum class Attention { eager, flash };
enum class Strategy { single, ddp, deepspeed, fsdp, megatron };
enum class Offload { none, optimizer, optimizer_and_params };
// Which kernels allocate: CUDA (the product) or PyTorch's CPU kernels (what the CPU validation measures).
enum class Device { cuda, cpu };
// The PyTorch release that runs: "2" is the newest 2.x modelled (2.13). What the optimizer and RMSNorm backward
// allocate changed between 1.13 and 2.x; the allocator's options and the NCCL a wheel ships change by release.
enum class TorchVersion { v2, v2_13, v2_12, v2_11, v2_10, v2_9, v2_8, v2_7, v2_6, v2_5, v2_4, v2_3, v2_2, v2_1, v2_0, v1_13 };
// With pipeline parallelism the first stage holds the embedding and the most micro-batches in flight, the
// last the final norm, lm_head and the logits; an estimate describes one of them.
enum class PipelineStage { first, last };
// Pipeline schedules (torch.distributed.pipelining, Megatron-LM): how many micro-batches' activations the first
// stage holds at once.
enum class PipelineSchedule { one_f_one_b, gpipe, interleaved_1f1b };
// QLoRA's 4-bit back end: bitsandbytes' Linear4bit (PEFT, LitGPT) or torchao's NF4Tensor (torchtune).
enum class QuantBackend { bitsandbytes, torchao };
// FP8 training recipes: torchao's Float8Linear with dynamic tensorwise or rowwise scaling; Transformer Engine's
// delayed and current scaling (read from its source: memory_terms.cpp).
enum class Fp8Recipe { none, torchao_tensorwise, torchao_rowwise, te_delayed, te_current };
// What the step trains on: supervised fine-tuning or pre-training, or one of TRL's trainers (training_methods.hpp).
enum class TrainingMethod { sft, dpo, ipo, kto, orpo, simpo, grpo, rloo, distill, ppo };
// A frozen model's storage dtype.
enum class Dtype { bf16, fp16, fp32 };
inline double element_bytes(Dtype d) { return d == Dtype::fp32 ? 4 : 2; }
// Distillation's divergence (TRL's DistillationConfig.beta): 0 forward KL, 1 reverse KL (the default), between: JSD.
enum class Divergence { reverse_kl, forward_kl, jsd };
// The reference model's log-probabilities: none, a second model, the policy with its adapters off, or computed
// before training.
enum class Reference { none, model, base_without_adapters, precomputed };
// Where GRPO's completions are generated: in the training process (transformers' generate), by a vLLM engine
// colocated on the training GPUs, or by a vLLM server on other GPUs (TRL's vllm_mode).
enum class InferenceEngine { none, vllm_colocate, vllm_server };

struct Finetune {
    FinetuneMethod method = FinetuneMethod::full;
    std::uint64_t rank = 8;
    std::vector<std::string> targets{"q_proj", "v_proj"};
    double dropout = 0;  // LoRA dropout on the adapters' input
    bool double_quant = true;       // QLoRA: the NF4 block constants quantized again (bnb_4bit_use_double_quant)
    bool quantize_lm_head = false;  // QLoRA: lm_head stored in NF4 too
    QuantBackend backend = QuantBackend::bitsandbytes;
    std::string backend_version;    // the back end's release ("" = current): what its 4-bit matmul saves
};

// What the planner may change (advice/planner.hpp): "plan": true, or an object of these.
struct PlanRequest {
    bool on = false;
    bool keep_method = false;          // true: no plans that change what is trained (their separate group stays empty)
    bool keep_global_batch = true;     // micro_batch x grad_accum x data-parallel ranks stays as given
    bool keep_gpus = true;
    std::uint64_t max_gpus = 64;       // without keep_gpus, and for sizing
    std::vector<Strategy> strategies;  // the strategies a plan may use (empty: every one)
};

struct Config {
    // The stack's revision in force (framework_version picks it; the current one by default).
    const FrameworkProfile* framework = &framework_profile(Framework::hf);
    std::string framework_version;        // as given ("" = the current revision)
    Architecture model;
    std::uint64_t seq_len = 2048;
    std::uint64_t micro_batch = 1;
    std::uint64_t grad_accum = 1;
    Precision precision = Precision::bf16_mixed;
    Optimizer optimizer = Optimizer::adamw;
    OptimizerImpl optimizer_impl = OptimizerImpl::foreach;
    Finetune finetune;
    Checkpointing checkpointing = Checkpointing::none;
    std::uint64_t checkpoint_every = 1;  // full checkpointing of every N-th layer only (torchtitan's ac_freq)
    Attention attention = Attention::flash;
    Strategy strategy = Strategy::single;
    std::uint64_t gpus = 1;
    int zero = 0;
    std::uint64_t tp = 1;
    std::uint64_t pp = 1;
    std::uint64_t cp = 1;                 // context parallel: each rank holds seq_len / cp of every sequence
    bool sequence_parallel = false;
    bool loss_parallel = true;            // FSDP + TP: the logits stay sharded over the vocabulary (torchtitan)
    PipelineSchedule pp_schedule = PipelineSchedule::one_f_one_b;
    std::uint64_t pp_stages_per_rank = 1; // interleaved schedules: model chunks (virtual stages) per GPU
    Offload offload = Offload::none;
    Gpu gpu;
    Device device = Device::cuda;
    TorchVersion torch = TorchVersion::v2;
    std::string alloc_conf;               // PYTORCH_CUDA_ALLOC_CONF as given ("": PyTorch's defaults)
    // Knobs a framework profile sets (frameworks.cpp); each can be set on its own.
    Loss loss = Loss::full;
    std::uint64_t loss_chunks = 8;
    bool lm_head_chunks = false;          // lm_head runs per loss chunk
    AdapterDtype adapter_dtype = AdapterDtype::fp32;
    bool optimizer_in_backward = false;   // each gradient is applied and freed as backward produces it
    bool activation_offload = false;      // saved activations go to CPU RAM in forward, come back in backward
    bool longest_batch_first = false;     // the estimate is of the run's first micro-batch, seq_len long
    bool compile = false;                 // torch.compile: reported, and the activations become an upper bound
    Fp8Recipe fp8_recipe = Fp8Recipe::none;  // precision "fp8": bf16 training whose linears compute in float8
    // TRL's trainers (trl_phases.cpp): micro_batch counts pairs (DPO, IPO, ORPO, SimPO), examples (KTO),
    // completions (GRPO) or prompts (distillation); a sequence is prompt_len + completion_len tokens.
    TrainingMethod method = TrainingMethod::sft;
    Reference reference = Reference::none;
    std::uint64_t prompt_len = 0, completion_len = 0;
    std::uint64_t num_generations = 8;    // GRPO, RLOO: completions per prompt (RLOO's default: 2)
    InferenceEngine inference_engine = InferenceEngine::none;
    double inference_gpu_share = 0.3;     // a colocated vLLM's gpu_memory_utilization (TRL's default)
    bool inference_sleep_mode = false;    // a colocated vLLM frees its share between generations
    std::uint64_t steps_per_generation = 0;  // GRPO: optimizer steps' worth of completions generated at once (0: grad_accum)
    std::uint64_t num_iterations = 1;        // GRPO: updates per generation batch
    // Distillation: the frozen teacher, in the dtype of its checkpoint (TRL loads it with dtype "auto").
    Architecture teacher;
    Dtype teacher_dtype = Dtype::bf16;
    Divergence divergence = Divergence::reverse_kl;
    // PPO (TRL 1.12's PPOTrainer): a rollout of micro_batch x grad_accum x num_mini_batches prompts, generated and
    // scored local_rollout_forward_batch_size rows at a time; the value model (trained) and the frozen reward model
    // as given (default: the policy's architecture), the reward model in reward_dtype (unset: the policy's weights').
    std::uint64_t rollout_forward_batch = 64;
    std::uint64_t num_mini_batches = 1;
    Architecture value_model, reward_model;
    std::optional<Dtype> reward_dtype;
    // The machine and the run, for time and cost (step_time.cpp).
    std::uint64_t gpus_per_node = 8;
    double inter_node_gbps = 0;           // per GPU, GB/s (0: the GPU's reference system)
    double train_tokens = 0;              // the run's tokens, or epochs x dataset_tokens
    double epochs = 0, dataset_tokens = 0;
    double price_per_gpu_hour = 0;        // in the user's currency; no built-in prices
    std::vector<std::pair<std::string, double>> gpu_prices;  // price_per_gpu_hour given per catalog GPU id
    PlanRequest plan;
    int fsdp_version = 1;
    FsdpWrap fsdp_wrap = FsdpWrap::adapters_apart;
    PipelineStage stage = PipelineStage::first;  // not part of the JSON format: estimate_memory tries both
    std::vector<std::string> notes;  // assumptions made reading the model (reported as warnings)
};

// Names as they appear in the JSON configuration.
const char* to_string(Precision);
const char* to_string(Optimizer);
const char* to_string(OptimizerImpl);
const char* to_string(FinetuneMethod);
const char* to_string(Checkpointing);
const char* to_string(Attention);
const char* to_string(Strategy);
const char* to_string(Offload);
const char* to_string(Device);
const char* to_string(TorchVersion);
TorchRelease torch_release(TorchVersion);
const char* to_string(Loss);
const char* to_string(AdapterDtype);
const char* to_string(PipelineSchedule);
const char* to_string(QuantBackend);
const char* to_string(TrainingMethod);
const char* to_string(Fp8Recipe);
const char* to_string(Reference);
const char* to_string(Divergence);
const char* to_string(FsdpWrap);
const char* to_string(Dtype);

// The GPUs that hold replicas (or ZeRO/FSDP shards) of the same layers: data and context parallel ranks alike
// (torchtitan shards FSDP over its dp_shard x cp mesh, Megatron-LM's optimizer over data x context ranks).
inline std::uint64_t data_parallel(const Config& c) { return c.gpus / (c.tp * c.pp); }

}  // namespace vramcalc
