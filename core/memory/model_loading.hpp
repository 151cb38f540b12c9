// What loading the model leaves reserved on the GPU before the first step: the allocations and frees of the stack's
// loading code, replayed through PyTorch's caching allocator (caching_allocator.hpp). A quantizing load frees its
// 16-bit copies and temporaries into cached segments that stay reserved (nothing calls empty_cache() between the
// load and the first step, or it cannot release a segment a weight still lives in), and can leave more reserved
// than the step itself needs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "memory/caching_allocator.hpp"
#include "memory/step.hpp"

namespace vramcalc {

struct LoadedModel {
    std::uint64_t reserved = 0;   // torch.cuda.memory_reserved() when loading ends
    std::uint64_t allocated = 0;  // torch.cuda.memory_allocated(): the weights as loaded
};

// The loading's events, in order; empty when the stack's loading is not replayed (not a QLoRA model, in_place, a
// model split over GPUs, a mixture of experts, device "cpu").
std::vector<AllocEvent> model_loading_events(const Step&);
// Their replay on the configured GPU; nullopt when there are none.
std::optional<LoadedModel> loaded_model(const Step&);

}  // namespace vramcalc
