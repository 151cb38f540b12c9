#include "setup/strategies.hpp"

namespace vramcalc {

namespace {

constexpr const char* kNoStages = "ZeRO stages need strategy \"deepspeed\" or \"fsdp\" (\"megatron\" takes zero 1: the "
                                  "distributed optimizer)";

// ZeRO stages as Rajbhandari et al. 2020 §5 define them (DeepSpeed runtime/zero/stage_1_and_2.py, stage3.py:
// reduce_bucket_size 5e8, stage3_max_live_parameters 1e9 in runtime/zero/config.py); FSDP's sharding strategies
// (torch.distributed.fsdp ShardingStrategy: NO_SHARD 0, SHARD_GRAD_OP 2, FULL_SHARD 3; FSDP keeps its parameters in
// fp32 and casts the gathered ones, no master copy); Megatron-LM's DDP (fp32 main_grad buffers) and distributed
// optimizer (--use-distributed-optimizer: fp32 main weights and optimizer states sharded over data-parallel ranks).
const std::vector<StrategyTraits> kStrategies = {
    // id, name, label, runs, max_gpus, zero_stages, default_zero, zero_error, zero_labels,
    // shards optimizer / master / gradients / parameters from, gathers per unit from, zero collectives from,
    // mixed, units, max live parameters, buckets, step builds fp32 gradients, fp32 main grads, states up front,
    // own model code, tp, pp, cp, mesh needs FSDP 2, PyTorch TP, offload, adapter recipe, pure 16-bit, trl, launcher
    {Strategy::single, "single", "Single GPU", "one process", 1, 0b0001, 0, kNoStages, {"off"},
     kNever, kNever, kNever, kNever, kNever, kNever,
     MixedWeights::autocast, ParameterUnits::none, 0, GradientBuckets::none, false, false, false,
     false, false, false, false, false, false, OffloadSupport::none, true, true, true, "python"},
    {Strategy::ddp, "ddp", "DDP (data parallel)", "torch.nn.parallel.DistributedDataParallel", 0, 0b0001, 0, kNoStages, {"off"},
     kNever, kNever, kNever, kNever, kNever, kNever,
     MixedWeights::autocast, ParameterUnits::none, 0, GradientBuckets::ddp, false, false, false,
     false, true, false, false, false, true, OffloadSupport::none, true, true, true, "torchrun"},
    {Strategy::deepspeed, "deepspeed", "DeepSpeed ZeRO", "DeepSpeed's ZeRO optimizers", 0, 0b1111, 0, kNoStages,
     {"off", "optimizer states", "+ gradients", "+ parameters"},
     1, 1, 2, 3, 3, 1,
     MixedWeights::half_with_master, ParameterUnits::deepspeed_modules, 1e9, GradientBuckets::deepspeed, true, false, true,
     false, false, false, false, false, false, OffloadSupport::deepspeed, false, false, false, "deepspeed"},
    {Strategy::fsdp, "fsdp", "PyTorch FSDP", "FullyShardedDataParallel (FSDP 1) or fully_shard (FSDP 2)", 0, 0b1101, 3,
     "FSDP shards as zero 0 (NO_SHARD), 2 (SHARD_GRAD_OP) or 3 (FULL_SHARD)", {"NO_SHARD", nullptr, "SHARD_GRAD_OP", "FULL_SHARD"},
     2, kNever, 2, 2, 3, 2,
     MixedWeights::fsdp_cast, ParameterUnits::fsdp_units, 0, GradientBuckets::none, false, false, false,
     false, true, true, true, true, true, OffloadSupport::fsdp, false, true, false, "accelerate launch"},
    {Strategy::megatron, "megatron", "Megatron-LM (tensor/pipeline)", "Megatron-LM's GPT model and distributed optimizer", 0,
     0b0011, 0, kNoStages, {"off", "distributed optimizer"},
     1, 1, kNever, kNever, kNever, kNever,
     MixedWeights::half_with_master, ParameterUnits::none, 0, GradientBuckets::none, false, true, true,
     true, true, true, true, false, false, OffloadSupport::none, false, true, false, "torchrun pretrain_gpt.py"},
};

}  // namespace

const std::vector<StrategyTraits>& strategy_table() { return kStrategies; }

// The table's rows are in the enum's order (every estimate asks many times).
const StrategyTraits& strategy_traits(Strategy s) { return kStrategies[std::size_t(s)]; }

}  // namespace vramcalc
