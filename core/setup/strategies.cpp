#include "setup/strategies.hpp"

namespace vramcalc {

namespace {

// ZeRO stages as Rajbhandari et al. 2020 §5 define them (DeepSpeed runtime/zero/); FSDP's sharding strategies
// (torch.distributed.fsdp ShardingStrategy: NO_SHARD 0, SHARD_GRAD_OP 2, FULL_SHARD 3; FSDP keeps its parameters in
// fp32 and casts the gathered ones, no master copy); Megatron-LM's distributed optimizer (--use-distributed-optimizer:
// fp32 main weights and optimizer states sharded over data-parallel ranks, the gradient buffer whole).
const std::vector<StrategyTraits> kStrategies = {
    // id, name, label, runs, max_gpus, zero_stages, default_zero, shards optimizer/master/gradients/params from,
    // zero collectives from, mixed, own model code, tp, pp, cp, mesh on FSDP 2 only, PyTorch TP, offload,
    // adapter recipe, trl, states up front, launcher
    {Strategy::single, "single", "Single GPU", "one process", 1, 0b0001, 0, kNever, kNever, kNever, kNever, kNever,
     MixedWeights::autocast, false, false, false, false, false, false, OffloadSupport::none, true, true, false, "python"},
    {Strategy::ddp, "ddp", "DDP (data parallel)", "torch.nn.parallel.DistributedDataParallel", 0, 0b0001, 0, kNever, kNever,
     kNever, kNever, kNever, MixedWeights::autocast, false, true, false, false, false, true, OffloadSupport::none, true, true,
     false, "torchrun"},
    {Strategy::deepspeed, "deepspeed", "DeepSpeed ZeRO", "DeepSpeed's ZeRO optimizers (stage_1_and_2.py, stage3.py)", 0, 0b1111, 0,
     1, 1, 2, 3, 1, MixedWeights::half_with_master, false, false, false, false, false, false, OffloadSupport::deepspeed, false,
     false, true, "deepspeed"},
    {Strategy::fsdp, "fsdp", "PyTorch FSDP", "FullyShardedDataParallel (FSDP 1) or fully_shard (FSDP 2)", 0, 0b1101, 3, 2,
     kNever, 2, 3, 2, MixedWeights::fsdp_cast, false, true, true, true, true, true, OffloadSupport::fsdp, false, false, false,
     "accelerate launch"},
    {Strategy::megatron, "megatron", "Megatron-LM (tensor/pipeline)", "Megatron-LM's GPT model and distributed optimizer", 0,
     0b0011, 0, 1, 1, kNever, kNever, kNever, MixedWeights::half_with_master, true, true, true, true, false, false,
     OffloadSupport::none, false, false, true, "torchrun pretrain_gpt.py"},
};

}  // namespace

const std::vector<StrategyTraits>& strategy_table() { return kStrategies; }

const StrategyTraits& strategy_traits(Strategy s) {
    for (const StrategyTraits& t : kStrategies)
        if (t.id == s) return t;
    return kStrategies[0];
}

}  // namespace vramcalc
