#include "memory/nccl_memory.hpp"

namespace vramcalc {

namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

// src/include/comm.h CUDA_IPC_MIN: P2P buffers are allocated in 2 MiB multiples.
std::uint64_t ipc_aligned(std::uint64_t bytes) { return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB); }
// ncclSendMem and ncclRecvMem, the connection's head: a few KiB, so only the 2 MiB rounding shows.
constexpr std::uint64_t kConnectionHead = 4096;

// The channel counts NCCL_DEBUG=INFO prints (nccl_memory.md §2): 24 coll channels and 32 p2p channels, each to
// every peer, on 8-GPU NVSwitch nodes (nccl-tests#100 A100; vllm#9699 H200, nccl#1685 H100); 2 over PCIe
// (nccl-tests#307). NVLS: NCCL_NVLS_NCHANNELS 16, 32 on Blackwell from 2.25 (src/transport/nvls.cc).
struct Channels {
    unsigned coll, p2p, nvls;  // p2p: the send/recv channels, each to every peer
};
Channels channels(const NodeLinks& l, NcclRelease r) {
    if (!l.nvswitch) return {2, 2, 0};
    return {24, 32, r.at_least(2, 25) && l.sm >= 100 ? 32u : 16u};
}

// ncclNvlsInit (NVLS came in 2.17): multicast on Hopper and newer NVSwitch nodes, for more than 2 GPUs of the node;
// 2.20 and before one node only (2.21 brought multi-node NVLS).
bool uses_nvls(const Communicator& c, const NodeLinks& l, NcclRelease r) {
    return r.at_least(2, 17) && l.nvswitch && l.sm >= 90 && c.local_ranks > 2 &&
           (c.ranks == c.local_ranks || r.at_least(2, 21));
}

// ncclNvlsBufferSetup, by release: the unicast buffer bound to the multicast object, one share per head (a GPU of
// the node); from 2.22 the credits are allocated at init and the buffer when an NVLS algorithm first runs.
std::uint64_t nvls_bytes(const Communicator& c, const Channels& ch, NcclRelease r) {
    const std::uint64_t heads = c.local_ranks;
    if (!r.at_least(2, 21)) return ch.coll * 2 * (kNcclSimpleBytes + 2 * kMiB) * heads;  // nChannels x 2 x 6 MiB
    if (!r.at_least(2, 22)) return ch.coll * 2 * (1 * kMiB + 2 * kMiB) * heads;  // NCCL_NVLS_CHUNKSIZE 128 KiB x 8
    const std::uint64_t credits = ipc_aligned(std::uint64_t(ch.coll) * 2 * 64 * heads);
    return credits + (c.collectives ? ch.nvls * 2 * kMiB * heads : 0);
}

}  // namespace

NcclRelease nccl_release(TorchRelease t) {
    // The nvidia-nccl-cu11/cu12/cu13 pin in the metadata of each release's manylinux x86_64 wheel on PyPI (its
    // patch releases pin the same): 2.0 cu117, 2.1-2.4 cu121, 2.5-2.6 cu124, 2.7 cu126, 2.8-2.10 cu128, 2.11+ cu130.
    struct Row {
        int torch_minor;
        NcclRelease nccl;
    };
    static const Row rows[] = {{0, {2, 14}}, {1, {2, 18}}, {2, {2, 19}}, {3, {2, 20}}, {4, {2, 20}}, {5, {2, 21}},
                               {6, {2, 21}}, {7, {2, 26}}, {8, {2, 27}}, {9, {2, 27}}, {10, {2, 27}}, {11, {2, 28}},
                               {12, {2, 29}}, {13, {2, 29}}};
    if (t.major < 2) return {2, 14};
    for (const Row& r : rows)
        if (r.torch_minor == t.minor) return r.nccl;
    return rows[sizeof rows / sizeof *rows - 1].nccl;
}

std::uint64_t nccl_p2p_connection_bytes(int sm) {
    // ncclTopoCheckP2p reads over NVLink on compute capability 8.0 only: the Simple buffer then sits with the sender.
    const bool read = sm == 80;
    const std::uint64_t receiver = kConnectionHead + kNcclLlBytes + kNcclLl128Bytes + (read ? 0 : kNcclSimpleBytes);
    const std::uint64_t sender = kConnectionHead + (read ? kNcclSimpleBytes : 0);
    return ipc_aligned(receiver) + ipc_aligned(sender);
}

NcclBytes nccl_memory(const Communicator& c, const NodeLinks& l, NcclRelease r) {
    NcclBytes out;
    if (c.ranks < 2) return out;
    const Channels ch = channels(l, r);
    // Over SHM the buffers sit in host memory; to a peer on another node NET's do, unless GPUDirect RDMA is used.
    const bool p2p = l.peer_to_peer && c.local_ranks > 1;
    const std::uint64_t connection = p2p ? nccl_p2p_connection_bytes(l.sm) : 0;
    // NCCL_RUNTIME_CONNECT (2.22+, default on): an algorithm's connections are made when it first runs, and
    // FSDP's, DeepSpeed's and DDP's collectives run on rings; before, ring and tree were connected at init, the tree
    // adding about a ring's worth (its parent and child beyond the ring's neighbours).
    const bool lazy = r.at_least(2, 22);
    if (!lazy) out.rings = 2 * ch.coll * connection;
    else if (c.collectives) out.rings = ch.coll * connection;
    if (uses_nvls(c, l, r)) out.nvls = nvls_bytes(c, ch, r);
    // sharedNetBuffersInit, called at init before 2.22: p2p channels x NCCL_SHARED_STEPS 16 x the p2p chunk
    // (NVLink 512 KiB, PCIe and across nodes 128 KiB).
    if (!lazy) {
        const std::uint64_t chunk = l.nvswitch && c.ranks == c.local_ranks ? 512 * 1024 : 128 * 1024;
        out.p2p_pool = std::uint64_t(ch.p2p) * 16 * chunk;
    }
    // Send/recv connect on first use to each peer, on every p2p channel to it (connIndex 1).
    out.send_recv = std::uint64_t(c.send_recv_peers) * ch.p2p * connection;
    return out;
}

}  // namespace vramcalc
