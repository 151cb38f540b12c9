// What nvidia-smi shows besides PyTorch's reserved segments and NCCL's buffers (nccl_memory.hpp): the CUDA context,
// and the cuBLAS and cuBLASLt workspaces (those two are taken from the caching allocator: allocations, not extra).
// One function per term; `sm` is the compute capability times ten (80 A100, 86 GA10x, 89 Ada, 90 Hopper, 100 B200).
#pragma once
#include <cstdint>

namespace vramcalc {

struct ContextFigure {
    std::uint64_t bytes = 0;
    int measured_sm = 0;     // the GPU the figure was measured on (0: not stated by its source)
    const char* source = "";
};

// The bare CUDA context of a PyTorch process (driver state, the kernels loaded at start), before a training
// step loads its own kernels. `lazy`: CUDA_MODULE_LOADING=LAZY (CUDA 11.7+; PyTorch sets it from 1.13, PR #86509).
// The figure measured on the nearest architecture; measured_sm says which.
ContextFigure cuda_context_bytes(int sm, bool lazy);

// One (cuBLAS handle, stream) pair's workspaces, as torch 2.9+ allocates them through the caching allocator
// (aten/src/ATen/cuda/CublasHandlePool.cpp): CUBLAS_WORKSPACE_CONFIG's default ":4096:2:16:8" (8 MiB + 128 KiB),
// 32 MiB on compute capability 9.0 exactly; CUBLASLT_WORKSPACE_SIZE's default 1024 KiB, a workspace of its own
// unless TORCH_CUBLASLT_UNIFIED_WORKSPACE=1.
struct CublasWorkspaces {
    std::uint64_t cublas = 0;
    std::uint64_t cublaslt = 0;
};
CublasWorkspaces cublas_workspaces(int sm);

}  // namespace vramcalc
