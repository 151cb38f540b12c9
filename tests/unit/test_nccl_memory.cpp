// NCCL's GPU memory against figures NCCL itself printed or allocated in published runs (core/memory/nccl_memory.md
// §3): the P2P connection sizes NVIDIA/nccl#1685 saw allocated on 8×H100, the NVLS buffer vllm-project/vllm#9699's
// NCCL log reports on 8×H200, the send/recv growth #1685 measured, and the wheel pins of PyPI's torch releases.
#include <catch2/catch.hpp>

#include "memory/nccl_memory.hpp"
#include "memory/estimate.hpp"
#include "parsed_config.hpp"

using namespace vramcalc;

namespace {

constexpr std::uint64_t MiB = 1024 * 1024;
MemoryEstimate estimate(const char* json) { return estimate_memory(parsed(nlohmann::json::parse(json))); }
const NodeLinks kHgxH100{true, true, 90}, kHgxA100{true, true, 80}, kGeForce{false, false, 89};

}  // namespace

TEST_CASE("NCCL: a P2P connection is the receiver's and the sender's 2 MiB-aligned buffers", "[nccl]") {
    // nccl#1685 (8×H100, P2P/CUMEM): allocations of exactly 10,485,760 B and 2,097,152 B per connection.
    CHECK(nccl_p2p_connection_bytes(90) == 10485760u + 2097152u);
    // A100 reads over NVLink: the 4 MiB Simple buffer moves to the sender, each side rounded up to 6 MiB.
    CHECK(nccl_p2p_connection_bytes(80) == 12 * MiB);
}

TEST_CASE("NCCL: the NVLS buffer as NCCL 2.20 logs it on 8×H200", "[nccl]") {
    // vllm#9699, TP=8 on H200 (vLLM on torch 2.4: NCCL 2.20.5): "nvlsTotalSize 2415919104".
    const NcclBytes tp8 = nccl_memory({8, 8, true, 0}, kHgxH100, {2, 20});
    CHECK(tp8.nvls == 2415919104u);
    // ... and "NVLS seen only for more than 2 GPUs".
    CHECK(nccl_memory({2, 2, true, 0}, kHgxH100, {2, 20}).nvls == 0);
    // A100 has no multicast.
    CHECK(nccl_memory({8, 8, true, 0}, kHgxA100, {2, 20}).nvls == 0);
}

TEST_CASE("NCCL: send/recv connections to every peer, as an all-to-all grows them on 8×H100", "[nccl]") {
    // nccl#1685: 1.06 GB of non-PyTorch memory before the first all_to_all_single, 4.34 GB after, 32 p2p channels
    // per pair. The connections to 7 peers are most of the 3.28 GB (the rest: proxy and kernel state).
    const NcclBytes all_to_all = nccl_memory({8, 8, false, 7}, kHgxH100, {2, 21});
    const double grown = 4.34e9 - 1.06e9;
    CHECK(double(all_to_all.send_recv) <= grown);
    CHECK(double(all_to_all.send_recv) >= 0.8 * grown);
}

TEST_CASE("NCCL: connected at init before 2.22, on first use after", "[nccl]") {
    const NcclBytes eager = nccl_memory({8, 8, true, 0}, kHgxA100, {2, 21});
    const NcclBytes lazy = nccl_memory({8, 8, true, 0}, kHgxA100, {2, 22});
    CHECK(eager.rings == 2 * lazy.rings);  // ring and tree, against the ring the collectives run on
    CHECK(eager.p2p_pool == 32 * 16 * 512 * 1024);  // sharedNetBuffersInit: 256 MiB on an NVSwitch node
    CHECK(lazy.p2p_pool == 0);
    // A pipeline's communicator sends only: from 2.22 it holds its send/recv connections and nothing else.
    const NcclBytes pipeline = nccl_memory({2, 2, false, 1}, kHgxA100, {2, 27});
    CHECK(pipeline.total() == pipeline.send_recv);
    // GeForce cards go through host memory: no GPU buffers but the eager pool.
    CHECK(nccl_memory({2, 2, true, 0}, kGeForce, {2, 27}).total() == 0);
    // One rank: no communicator.
    CHECK(nccl_memory({1, 1, true, 1}, kHgxH100, {2, 18}).total() == 0);
}

TEST_CASE("NCCL: the release each torch wheel ships", "[nccl]") {
    // The nvidia-nccl pins of PyPI's manylinux x86_64 wheels.
    CHECK(nccl_release({2, 1}).minor == 18);
    CHECK(nccl_release({2, 4}).minor == 20);
    CHECK(nccl_release({2, 6}).minor == 21);
    CHECK(nccl_release({2, 7}).minor == 26);
    CHECK(nccl_release({2, 13}).minor == 29);
    CHECK(nccl_release({1, 13}).minor == 14);
}

TEST_CASE("NCCL's buffers are in total_bytes and in the verdict", "[nccl]") {
    const char* ddp = R"({"model":"meta-llama/Llama-3.1-8B","finetune":{"method":"lora"},"seq_len":2048,
                          "strategy":"ddp","gpus":8,"gpu":"h100-80gb"})";
    const MemoryEstimate m = estimate(ddp);
    // torch 2.13's NCCL 2.29 connects lazily: the ring of DDP's all-reduce, NVLS's credits and buffer.
    CHECK(m.nccl == 24 * 12 * MiB + 2 * MiB + 16 * 2 * MiB * 8);
    CHECK(m.total == Approx(m.peak_reserved + m.cuda_context + m.nccl));
    // torch 2.1 (NCCL 2.18) connects ring and tree at init, the shared pool, and NVLS's 2.25 GiB.
    const MemoryEstimate old = estimate(R"({"model":"meta-llama/Llama-3.1-8B",
        "finetune":{"method":"lora"},"seq_len":2048,"strategy":"ddp","gpus":8,"gpu":"h100-80gb","torch":"2.1"})");
    CHECK(old.nccl == 2 * 24 * 12 * MiB + 256 * MiB + 2415919104.0);
    // One GPU: no communicator.
    CHECK(estimate(R"({"model":"meta-llama/Llama-3.1-8B","gpu":"h100-80gb"})").nccl == 0);
}
