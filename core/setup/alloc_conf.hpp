// PYTORCH_CUDA_ALLOC_CONF: the caching allocator's options in PyTorch's own string syntax, read with the checks the
// allocator makes (c10/core/AllocatorConfig.cpp, c10/cuda/CUDAAllocatorConfig.cpp), for a given torch release.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "input/field_error.hpp"

namespace vramcalc {

// A torch release, "2.5" → {2, 5}.
struct TorchRelease {
    int major = 2;
    int minor = 13;
    bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
};
inline constexpr TorchRelease kOldestAllocatorRelease{2, 0};
inline constexpr TorchRelease kNewestAllocatorRelease{2, 13};
// "2.0" … "2.13" (a patch level such as "2.5.1" is accepted and ignored); nullopt outside that range.
std::optional<TorchRelease> parse_torch_release(const std::string& text);

inline constexpr std::uint64_t kMiB = 1024 * 1024;
// roundup_power2_divisions has one entry per power-of-two interval from 1 MiB up to 64 GiB (and above).
inline constexpr std::size_t kRoundupIntervals = 16;

struct AllocConf {
    std::uint64_t max_split_size = std::numeric_limits<std::uint64_t>::max();  // unlimited
    std::uint64_t max_non_split_rounding = 20 * kMiB;  // how much larger an oversize cached block may be (2.6+)
    std::uint64_t large_segment_size = 20 * kMiB;      // the segment of a 1–10 MiB request (2.11+)
    std::array<std::uint32_t, kRoundupIntervals> roundup_power2_divisions{};  // 0: 512-byte rounding only
    double garbage_collection_threshold = 0;   // acts only under a memory fraction (set_fraction)
    double per_process_memory_fraction = 0;    // 0: none set
    bool expandable_segments = false;
};

// Parses `text` as `release`'s allocator parses it. Every problem is a FieldError on "alloc_conf" naming the option;
// returns nullopt when there is one. Options of the pinned host allocator and the lock are checked and ignored.
std::optional<AllocConf> parse_alloc_conf(const std::string& text, TorchRelease release,
                                          std::vector<FieldError>& errors);

}  // namespace vramcalc
