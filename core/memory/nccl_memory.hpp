// NCCL's GPU memory on one rank: the buffers of each communicator's connections, NVLS and the shared P2P pool, as
// NCCL 2.18-2.27 allocates them (reading notes and published figures: nccl_memory.md). None of it is PyTorch's
// caching allocator's: nvidia-smi shows it, max_memory_reserved does not.
#pragma once
#include <cstdint>

#include "setup/alloc_conf.hpp"

namespace vramcalc {

struct NcclRelease {
    int major = 2, minor = 27;
    bool at_least(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
};

// The NCCL that the default CUDA wheel of a torch release ships (its nvidia-nccl pin).
NcclRelease nccl_release(TorchRelease);

// How the GPUs of a node reach each other, as NCCL's topology search sees it.
struct NodeLinks {
    bool peer_to_peer = true;  // P2P transport (NVLink or PCIe); false: SHM through host memory, no GPU buffers
    bool nvswitch = false;     // every GPU on NVSwitch (HGX/DGX A100, H100, B200)
    int sm = 0;                // compute capability x 10
};

// A process group's communicator as one rank sees it.
struct Communicator {
    unsigned ranks = 1;
    unsigned local_ranks = 1;     // of them on this rank's node
    bool collectives = false;     // all-reduce, all-gather, reduce-scatter
    unsigned send_recv_peers = 0; // peers this rank sends to or receives from (pipeline neighbours)
};

// One rank's share of one communicator, by what NCCL allocates it for.
struct NcclBytes {
    std::uint64_t rings = 0;      // ring (and, connected at init before 2.22, tree) connections
    std::uint64_t nvls = 0;       // NVLink SHARP's unicast buffer and credits
    std::uint64_t p2p_pool = 0;   // the shared NET buffer for send/recv, allocated at init before 2.22
    std::uint64_t send_recv = 0;  // connections to send/recv peers (made on first use, every release)
    std::uint64_t total() const { return rings + nvls + p2p_pool + send_recv; }
};

// src/init.cc's default buffers of one connection: LL 512 KiB, LL128 4,915,200 B, Simple (NCCL_BUFFSIZE) 4 MiB.
inline constexpr std::uint64_t kNcclLlBytes = 8 * 512 * 8 * 16, kNcclLl128Bytes = 120 * 640 * 8 * 8,
                               kNcclSimpleBytes = 4 * 1024 * 1024;
// One P2P connection, receiver's and sender's GPU memory together (src/transport/p2p.cc).
std::uint64_t nccl_p2p_connection_bytes(int sm);
NcclBytes nccl_memory(const Communicator&, const NodeLinks&, NcclRelease);

}  // namespace vramcalc
