// The distributed strategies as a table: what each shards and from which `zero` on, how it holds 16-bit mixed
// precision, which parallelisms and offloads it composes with, what it allows and how it launches.
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

constexpr int kNever = 4;  // above every `zero`

struct StrategyTraits {
    Strategy id;
    const char* name;    // the JSON value
    const char* label;
    const char* runs;    // what is modelled
    std::uint64_t max_gpus;  // 1: exactly one GPU; 0: any number
    unsigned zero_stages;    // bit i set: `zero` i is allowed
    int default_zero;
    // The first `zero` at which each is split over the data-parallel GPUs (kNever: never).
    int shards_optimizer_from, shards_master_from, shards_gradients_from, shards_params_from;
    // The first `zero` at which the data-parallel traffic is reduce-scatters and all-gathers (ZeRO §7) instead of
    // one all-reduce of the gradients, and the optimizer step runs on the shard.
    int zero_collectives_from;
    MixedWeights mixed;
    bool own_model_code;           // Megatron-LM's own model (Korthikanti et al. 2022's activations), not transformers'
    bool tensor_parallel, pipeline_parallel, context_parallel;  // composes with them
    bool mesh_needs_fsdp2;         // ... on FSDP 2's device mesh only
    bool pytorch_tensor_parallel;  // PyTorch's tensor-parallel plan: sequence-parallel norms by default, loss parallel
    OffloadSupport offload;
    bool adapter_recipe;           // PEFT's 16-bit-base recipe (bf16-base-mixed) runs under it
    bool trl;                      // TRL's trainers, all of them (FSDP: config_checks.cpp says which)
    bool states_up_front;          // optimizer states and gradients allocated at setup, not in the first step
    const char* launcher;
};

const std::vector<StrategyTraits>& strategy_table();
const StrategyTraits& strategy_traits(Strategy);
inline const StrategyTraits& traits(const Config& c) { return strategy_traits(c.strategy); }

}  // namespace vramcalc
