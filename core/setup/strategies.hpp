// The distributed strategies as a table: what each shards and from which `zero` on, which buffers and mechanisms it
// brings, how it holds 16-bit mixed precision, what it composes with and allows, and how it launches.
#pragma once
#include <cstdint>
#include <vector>

#include "setup/config.hpp"

namespace vramcalc {

// Where CPU offload goes: nowhere; DeepSpeed's (the optimizer from stage 1, parameters at stage 3); FSDP's CPU
// offload (parameters, gradients and the step together).
enum class OffloadSupport { none, deepspeed, fsdp };
// How 16-bit mixed precision holds the weights: fp32 weights under torch.autocast; FSDP's MixedPrecision casting the
// gathered parameters; 16-bit weights and gradients with fp32 master weights in the optimizer (DeepSpeed, Megatron).
enum class MixedWeights { autocast, fsdp_cast, half_with_master };
// How sharded parameters come back for compute: DeepSpeed's per-module fetch (stage3 prefetch, a cap on live
// parameters) or FSDP's wrapped units (the root or head unit kept, prefetch, reduce-scatter per unit).
enum class ParameterUnits { none, deepspeed_modules, fsdp_units };
// The gradient buffer beside the model for data-parallel reduction: none; DDP's Reducer buckets, a copy of every
// gradient; DeepSpeed's reduce bucket.
enum class GradientBuckets { none, ddp, deepspeed };

constexpr int kNever = 4;  // above every `zero`

struct StrategyTraits {
    Strategy id;
    const char* name;    // the JSON value
    const char* label;
    const char* runs;    // what is modelled
    std::uint64_t max_gpus;  // 1: exactly one GPU; 0: any number
    unsigned zero_stages;    // bit i set: `zero` i is allowed
    int default_zero;
    const char* zero_error;  // for a `zero` it does not take
    const char* zero_labels[4];  // what each `zero` it takes means (nullptr: not taken)
    // The first `zero` at which each is split over the data-parallel GPUs (kNever: never): optimizer states, fp32
    // master weights, gradients, parameters at rest.
    int shards_optimizer_from, shards_master_from, shards_gradients_from, shards_params_from;
    // The first `zero` at which every forward and backward gathers the parameters unit by unit (ZeRO-3, FULL_SHARD);
    // between shards_params_from and it they are gathered whole from forward to backward (SHARD_GRAD_OP).
    int gathers_per_unit_from;
    // The first `zero` at which the data-parallel traffic is reduce-scatters and all-gathers (ZeRO §7) instead of
    // one all-reduce of the gradients, and the optimizer steps its shard only.
    int zero_collectives_from;
    MixedWeights mixed;
    ParameterUnits units;
    double max_live_parameters;    // gathered at once at most (0: no cap)
    GradientBuckets buckets;
    bool step_builds_fp32_gradients;  // the fp32 gradient of the master partition exists inside step() only
    bool fp32_main_grads;          // gradients accumulate in fp32 main_grad buffers under mixed precision
    bool states_up_front;          // optimizer states and gradients allocated at setup, not in the first step
    bool own_model_code;           // Megatron-LM's own model (Korthikanti et al. 2022's activations), not transformers'
    bool tensor_parallel, pipeline_parallel, context_parallel;  // composes with them
    bool mesh_needs_fsdp2;         // ... on FSDP 2's device mesh only
    bool pytorch_tensor_parallel;  // PyTorch's tensor-parallel plan: sequence-parallel norms by default, loss parallel
    OffloadSupport offload;
    bool adapter_recipe;           // PEFT's 16-bit-base recipe (bf16-base-mixed) runs under it
    bool pure_16bit;               // bf16-true and 16-true (DeepSpeed's 16-bit modes keep fp32 master weights)
    bool trl;                      // TRL's trainers, all of them (FSDP: config_checks.cpp says which)
    const char* launcher;
};

const std::vector<StrategyTraits>& strategy_table();
const StrategyTraits& strategy_traits(Strategy);
inline const StrategyTraits& traits(const Config& c) { return strategy_traits(c.strategy); }

// Where PEFT's adapter recipe (*_base_mixed: a 16-bit frozen base, fp32 adapters under autocast) can run, and not
// with PPO, whose value model is trained whole and loaded like the policy (config_checks.cpp).
inline bool adapter_recipe_allowed(const Config& c) { return traits(c).adapter_recipe && c.method != TrainingMethod::ppo; }

}  // namespace vramcalc
