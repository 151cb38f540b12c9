// PyTorch's CUDA caching allocator (DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp) replayed on one
// device's sequence of allocation events: what it reserves from the driver, how it splits and reuses blocks, and
// whether (and where) it raises an out-of-memory error.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "setup/alloc_conf.hpp"

namespace vramcalc {

enum class AllocOp : std::uint8_t {
    allocate,       // tensor `tensor` of `bytes` on `stream` (CUDACachingAllocator::malloc)
    free,           // tensor `tensor` (free)
    record_stream,  // tensor `tensor` is used on `stream` too (Tensor.record_stream / recordStream)
    stream_done,    // the work queued so far on `stream` has finished (its events now query complete)
    empty_cache,    // torch.cuda.empty_cache()
};

struct AllocEvent {
    AllocOp op = AllocOp::allocate;
    std::uint8_t stream = 0;   // 0: the default stream; at most kMaxStreams - 1
    std::uint32_t tensor = 0;  // the caller's id for the tensor (small dense numbers: they index a table)
    std::uint64_t bytes = 0;
    std::uint32_t tag = 0;     // the caller's name for the allocation, echoed on failure
};

inline constexpr unsigned kMaxStreams = 64;

struct DeviceMemory {
    std::uint64_t capacity = 0;      // what cudaMalloc can get: the card less the context and non-PyTorch memory
    std::uint64_t device_total = 0;  // cudaMemGetInfo's total: the base of a memory fraction and expandable segments
};

struct AllocatorFailure {
    std::size_t event = 0;      // its position in the sequence
    std::uint32_t tag = 0;
    std::uint64_t bytes = 0;    // requested
    std::uint64_t reserved = 0;   // after the allocator's own free-and-retry
    std::uint64_t allocated = 0;  // reserved - allocated: "reserved by PyTorch but unallocated"
};

struct AllocatorStats {
    std::uint64_t reserved = 0, allocated = 0;  // now (memory_reserved, memory_allocated: block sizes)
    std::uint64_t peak_reserved = 0, peak_allocated = 0;
    std::uint64_t free_at_peak = 0;      // reserved - allocated when reserved first reached its peak
    std::uint32_t segments_at_peak = 0;  // as the memory snapshot counts them (an expandable segment's mapped runs)
    std::uint32_t segments = 0;
    std::uint64_t device_mallocs = 0, device_frees = 0;  // cudaMalloc / page maps, cudaFree / page unmaps
    std::uint64_t retries = 0;                          // num_alloc_retries: the cache freed whole before a malloc
};

struct ReplayResult {
    AllocatorStats stats;
    std::optional<AllocatorFailure> failure;  // the first allocation that raised OutOfMemoryError; replay stops there
    std::string error;  // a malformed sequence (freeing an unknown tensor, ...): which event and why
};

// `conf` comes from parse_alloc_conf for the torch release that runs: the release is read there (which options
// exist, their limits); the rules applied here are the same in every release from 2.0 to 2.13.
ReplayResult replay_caching_allocator(const std::vector<AllocEvent>& events, const AllocConf& conf,
                                      DeviceMemory device);

// The sizes the allocator works in: a request rounded (round_size), and the segment a rounded request of a new
// segment gets (get_allocation_size).
std::uint64_t allocator_round_size(std::uint64_t bytes, const AllocConf& conf);
std::uint64_t allocator_segment_size(std::uint64_t rounded, const AllocConf& conf);

}  // namespace vramcalc
