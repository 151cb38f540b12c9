// FSDP's collective streams' pools: the allocator rule they rest on, replayed (c10/cuda/CUDACachingAllocator.cpp:
// a block serves only its own stream, and the free-and-retry releases whole cached segments before an
// out-of-memory error), and the cached bytes against the closed form of torch 2.13's FSDP 2 (the sharded fp32
// gradients on the reduce-scatter stream, one unit's all-gather output on the copy-in stream) for Llama 3.1 8B's
// published parameter counts.
#include <catch2/catch.hpp>

#include "json/api.hpp"
#include "memory/caching_allocator.hpp"
#include "memory/estimate.hpp"
#include "memory/memory_terms.hpp"
#include "parsed_config.hpp"

using namespace vramcalc;

namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

// Llama 3.1 8B (meta-llama/Llama-3.1-8B config.json): 8,030,261,248 parameters; one layer 218,112,000 (q, o
// 4096x4096, k, v 4096x1024, gate, up, down 4096x14336, two norms of 4096).
constexpr double kParams = 8030261248.0, kLayer = 218112000.0;

nlohmann::json titan_8b() {
    return {{"framework", "torchtitan"}, {"model", "meta-llama/Llama-3.1-8B"}, {"seq_len", 8192}, {"micro_batch", 2},
            {"precision", "bf16-mixed"}, {"strategy", "fsdp"}, {"fsdp_version", 2}, {"gpus", 8}, {"gpu", "h100-80gb"},
            {"checkpointing", "selective-op"}, {"attention", "flash"}};
}

}  // namespace

TEST_CASE("a stream's cached blocks serve only that stream, and are released before an out-of-memory error") {
    // Backward: four 64 MiB sharded gradients on the reduce-scatter stream (1); zero_grad frees them. The next
    // forward: eight 32 MiB activations on the compute stream (0).
    std::vector<AllocEvent> events;
    for (std::uint32_t g = 0; g < 4; ++g) events.push_back({AllocOp::allocate, 1, g, 64 * MiB, g});
    for (std::uint32_t g = 0; g < 4; ++g) events.push_back({AllocOp::free, 0, g, 0, 0});
    for (std::uint32_t a = 4; a < 12; ++a) events.push_back({AllocOp::allocate, 0, a, 32 * MiB, a});
    const ReplayResult roomy = replay_caching_allocator(events, {}, {80ull << 30, 80ull << 30});
    REQUIRE(roomy.error.empty());
    CHECK(roomy.stats.reserved == (4 * 64 + 8 * 32) * MiB);  // nothing of stream 1 was reused
    CHECK(roomy.stats.allocated == 8 * 32 * MiB);
    // A card with room for the activations alone: the retry frees stream 1's segments and the forward goes on.
    const ReplayResult tight = replay_caching_allocator(events, {}, {300 * MiB, 80ull << 30});
    REQUIRE(tight.error.empty());
    CHECK(!tight.failure);
    CHECK(tight.stats.reserved == 8 * 32 * MiB);
}

TEST_CASE("FSDP 2 at its loss peak: the sharded fp32 gradients and one unit's bf16 all-gather output cached") {
    const Config c = parsed(titan_8b());
    const MemoryEstimate m = estimate_memory(c);
    REQUIRE(m.phases[m.peak_phase].name == "loss");
    CHECK(m.collective_stream_cached == Approx(kParams * 4 / 8 + kLayer * 2).epsilon(1e-9));
    CHECK(m.peak_reserved == Approx(m.peak_allocated + m.allocator_overhead + m.collective_stream_cached));
    // The optimizer step holds every gradient: only the all-gather output is free then.
    Phase step = m.phases.back();
    REQUIRE(step.name == "optimizer_step");
    CHECK(collective_stream_cached_bytes(Step(c), step) == Approx(kLayer * 2).epsilon(1e-9));
}

TEST_CASE("the verdict leaves the collective streams' cache out: it is released before the card runs out") {
    nlohmann::json j = titan_8b();
    const Config c = parsed(j);
    const MemoryEstimate roomy = estimate_memory(c);
    REQUIRE(roomy.collective_stream_cached > 1e9);
    // A card just large enough for the step without the cache: it fits, nvidia-smi shows the whole card.
    const double needed = roomy.total - roomy.collective_stream_cached;
    j["gpu"] = {{"name", "tight"}, {"memory_gib", (needed + 0.5 * roomy.collective_stream_cached) / double(1ull << 30)}};
    const Config tight_config = parsed(j);
    const MemoryEstimate tight = estimate_memory(tight_config);
    CHECK(tight.fits);
    CHECK(tight.total == Approx(tight.capacity));
    // (The card named here has no known compute capability or NVSwitch: its cuBLAS workspace and NCCL buffers
    // differ from the H100's.)
    const double tight_needed = tight.total - tight.collective_stream_cached;
    CHECK(tight_needed - tight.nccl == Approx(needed - roomy.nccl).epsilon(1e-3));
    CHECK(tight.collective_stream_cached < roomy.collective_stream_cached);
    // The headroom is what the step can still grow by.
    const nlohmann::json r = nlohmann::json::parse(answer_json(j.dump()).json);
    CHECK(r["headroom_bytes"].get<double>() == Approx(tight.capacity - tight_needed).margin(2));
    // One GPU, or DDP: no collective streams.
    CHECK(estimate_memory(parsed({{"model", "meta-llama/Llama-3.1-8B"}, {"gpu", "h100-80gb"}})).collective_stream_cached == 0);
    CHECK(estimate_memory(parsed({{"model", "meta-llama/Llama-3.1-8B"}, {"gpu", "h100-80gb"}, {"gpus", 8},
                                  {"strategy", "ddp"}})).collective_stream_cached == 0);
}
