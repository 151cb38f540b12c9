#include "memory/device_overheads.hpp"

#include <cstdlib>

namespace vramcalc {

namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

struct ContextRow {
    int sm;
    bool lazy;
    std::uint64_t bytes;
    const char* source;
};

// Measured bare contexts, each as its source gives it (nvidia-smi or cudaMemGetInfo's total - free).
const ContextRow kContexts[] = {
    // pytorch/pytorch PR #86509 (torch 1.13): 287,047,680 B with LAZY, 666,632,192 B eager, after one 6.4 MB tensor
    // (its 20 MiB segment subtracted here); the GPU is not stated.
    {0, true, 287047680 - 20 * kMiB, "pytorch/pytorch#86509, torch 1.13, LAZY"},
    {0, false, 666632192 - 20 * kMiB, "pytorch/pytorch#86509, torch 1.13, eager loading"},
    // invoke-ai/InvokeAI#9413: RTX 3090, torch 2.7.1+cu128, driver 610.43: 256 MiB held by the context at start.
    {86, true, 256 * kMiB, "invoke-ai/InvokeAI#9413, RTX 3090, torch 2.7.1+cu128"},
    // unslothai/unsloth-zoo#1053: RTX 6000 Ada, torch 2.10.0+cu130: 426 MiB after torch.cuda.mem_get_info().
    {89, true, 426 * kMiB, "unslothai/unsloth-zoo#1053, RTX 6000 Ada, torch 2.10.0+cu130"},
    // pytorch/pytorch#28394: Titan V, torch 1.3 (CUDA 10, eager): 1008.1875 MiB used after one small tensor, less
    // its 2 MiB segment and the 0.9375 MiB used before: 1005.25 MiB.
    {70, false, 1005 * kMiB + kMiB / 4, "pytorch/pytorch#28394, Titan V, torch 1.3, eager loading"},
};

}  // namespace

ContextFigure cuda_context_bytes(int sm, bool lazy) {
    const ContextRow* best = nullptr;
    for (const ContextRow& r : kContexts) {
        if (r.lazy != lazy) continue;
        const int distance = r.sm == 0 ? 1000 : std::abs(r.sm - sm);  // an unstated GPU only when nothing else
        const int best_distance = !best ? 100000 : best->sm == 0 ? 1000 : std::abs(best->sm - sm);
        if (distance < best_distance) best = &r;
    }
    return {best->bytes, best->sm, best->source};
}

CublasWorkspaces cublas_workspaces(int sm) {
    return {sm == 90 ? 32 * kMiB : 4096 * 1024 * 2 + 16 * 1024 * 8, 1024 * 1024};
}

}  // namespace vramcalc
