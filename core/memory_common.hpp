// Helpers shared by the memory-term files (memory_terms.cpp, activation_terms.cpp).
#pragma once
#include "config.hpp"
#include "memory_terms.hpp"

namespace vramcalc::detail {

inline bool mixed(const Config& c) { return c.precision == Precision::bf16_mixed || c.precision == Precision::fp16_mixed; }
inline bool half_model(const Config& c) { return c.strategy == Strategy::deepspeed || c.strategy == Strategy::megatron; }
// torch.autocast over fp32 weights; FSDP's MixedPrecision instead runs the gathered 16-bit parameters.
inline bool autocast(const Config& c) { return mixed(c) && !half_model(c) && c.strategy != Strategy::fsdp; }
inline bool deepspeed(const Config& c, int min_stage) { return c.strategy == Strategy::deepspeed && c.zero >= min_stage; }
inline bool fsdp(const Config& c, int min_stage) { return c.strategy == Strategy::fsdp && c.zero >= min_stage; }
inline bool offloaded(const Config& c) { return c.offload != Offload::none; }
inline double dp(const Config& c) { return double(data_parallel(c)); }
inline double tokens(const Config& c) { return double(c.micro_batch) * double(c.seq_len); }
// Layers of the busiest GPU's pipeline stage over all layers: what scales per-layer tensors.
inline double layer_share(const Config& c) { return double(layers_on_stage(c)) / double(c.model.layers); }

}  // namespace vramcalc::detail
