// Helpers shared by the memory-term files (memory_terms.cpp, activation_terms.cpp).
#pragma once
#include "memory/memory_terms.hpp"
#include "setup/config.hpp"
#include "setup/strategies.hpp"

namespace vramcalc::detail {

inline bool base_mixed(const Config& c) {
    return c.precision == Precision::bf16_base_mixed || c.precision == Precision::fp16_base_mixed;
}
inline bool mixed(const Config& c) {
    return c.precision == Precision::bf16_mixed || c.precision == Precision::fp16_mixed || base_mixed(c);
}
// LoRA over a 16-bit frozen base under autocast: weights, embeddings and the residual stream are 16-bit. (QLoRA's
// non-4-bit weights are fp32 either way: PEFT's prepare_model_for_kbit_training casts them.)
inline bool half_base(const Config& c) { return base_mixed(c) && c.finetune.method == FinetuneMethod::lora; }
inline bool half_model(const Config& c) { return traits(c).mixed == MixedWeights::half_with_master; }
// torch.autocast over fp32 weights; FSDP's MixedPrecision instead runs the gathered 16-bit parameters.
inline bool autocast(const Config& c) { return mixed(c) && traits(c).mixed == MixedWeights::autocast; }
inline bool fsdp_mixed(const Config& c) { return mixed(c) && traits(c).mixed == MixedWeights::fsdp_cast; }
// The residual stream and the norms' outputs in fp32: autocast over fp32 weights.
inline bool fp32_residual(const Config& c) { return autocast(c) && !half_base(c); }
// What the strategy's `zero` splits over the data-parallel GPUs (strategies.cpp).
inline bool shards_optimizer(const Config& c) { return c.zero >= traits(c).shards_optimizer_from; }
inline bool shards_master(const Config& c) { return c.zero >= traits(c).shards_master_from; }
inline bool shards_gradients(const Config& c) { return c.zero >= traits(c).shards_gradients_from; }
inline bool shards_params(const Config& c) { return c.zero >= traits(c).shards_params_from; }
inline bool gathers_per_unit(const Config& c) { return c.zero >= traits(c).gathers_per_unit_from; }
// FSDP's wrapped units: their gathers, the units kept unsharded, their reduce-scatters and no_sync accumulation.
inline bool fsdp_units(const Config& c) { return traits(c).units == ParameterUnits::fsdp_units; }
inline bool fsdp2(const Config& c) { return fsdp_units(c) && c.fsdp_version == 2; }
// Between micro-batches FSDP keeps every unit's unsharded gradient (the stack's no_sync, and torch.distributed.pipelining
// for its micro-batches) instead of reduce-scattering each micro-batch's into the sharded ones (frameworks.cpp).
inline bool accumulates_unsharded(const Config& c) {
    return fsdp_units(c) && c.grad_accum > 1 && (c.pp > 1 || c.framework->fsdp_accumulation == FsdpAccumulation::unsharded);
}
// Megatron-LM's own model code: Korthikanti et al.'s activations, its vocab-parallel cross-entropy, its TE layers.
inline bool megatron_model(const Config& c) { return traits(c).own_model_code; }
inline bool offloaded(const Config& c) { return c.offload != Offload::none; }
// Layers of the busiest GPU's pipeline stage over all layers: what scales per-layer tensors.
inline double layer_share(const Config& c) { return double(layers_on_stage(c)) / double(c.model.layers); }
// FSDP 1 units mixing frozen and LoRA weights in one flat parameter: each original parameter is a view of
// the unsharded flat parameter, and a view of a tensor that requires grad requires grad, so autograd saves
// and computes as for full fine-tuning, and the whole flat parameter gets a gradient
// (torch/distributed/fsdp/_flat_param.py _use_unsharded_views; measured in tests/validation/stacks/fsdp).
inline bool fsdp1_mixed_units(const Config& c) {
    return fsdp_units(c) && c.fsdp_version == 1 && c.fsdp_wrap == FsdpWrap::layers &&
           c.finetune.method != FinetuneMethod::full;
}
// Whether autograd treats the frozen base weights as trainable (saves their inputs, computes their grads).
inline bool base_weights_need_grad(const Config& c) {
    return c.finetune.method == FinetuneMethod::full || fsdp1_mixed_units(c);
}

// bitsandbytes before 0.43.2 keeps every 4-bit projection's input (activation_terms.cpp).
bool bitsandbytes_keeps_inputs(const Config& c);
// The training loop keeps the last step's outputs, and with them its autograd graph (logits_terms.cpp).
bool loop_keeps_outputs(const Step& c);

}  // namespace vramcalc::detail
