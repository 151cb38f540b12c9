// The GPUs a run can be planned on: the catalog, with what the step time needs of each.
#pragma once
#include <string>
#include <vector>

namespace vramcalc {

// How a node's GPUs reach each other: all on NVSwitch (HGX/DGX boards), NVLink without a switch (DGX-1's
// hybrid cube mesh), peer-to-peer over PCIe, or only through host memory (GeForce: no peer access over PCIe).
enum class Fabric { nvswitch, nvlink, pcie, host };

struct Gpu {
    std::string id;    // catalog id, or "custom"
    std::string name;
    double memory_gib = 80;
    double bandwidth_gbps = 0;   // HBM, GB/s, 0 when unknown
    double bf16_tflops = 0;      // dense tensor-core peak, 0 when unknown (or no bf16)
    double fp16_tflops = 0;      // dense tensor-core peak
    double fp32_tflops = 0;      // without tensor cores (PyTorch's default fp32 matmul)
    double link_gbps = 0;        // to the other GPUs of a node, per direction: NVLink, else PCIe
    double pcie_gbps = 0;        // to the host, per direction
    double network_gbps = 0;     // across nodes, per GPU, in the vendor's reference system (DGX/HGX)
    double compute_capability = 0;  // NVIDIA's (8.0 A100, 9.0 H100); 0: AMD's, or a custom GPU that does not say
    bool rocm = false;              // AMD's (ROCm)
    Fabric fabric = Fabric::pcie;   // in the vendor's reference node
};

const std::vector<Gpu>& gpu_catalog();
const Gpu* find_gpu(const std::string& id);
// The compute capability times ten (80, 86, 89, 90, 100), as the rules below and CUDA's sources compare it; 0 when
// not an NVIDIA GPU or not stated.
int sm_version(const Gpu&);
// Whether the GPU's architecture is known: a catalog GPU, or a custom one that states its compute capability.
bool architecture_known(const Gpu&);
// FP8 tensor cores (torch._scaled_mm): compute capability 8.9 or newer (Ada, Hopper, Blackwell), or AMD's MI300.
bool supports_fp8(const Gpu&);
// bf16 tensor cores: compute capability 8.0 and newer (Ampere), AMD's; Volta (V100) and Turing (T4) compute in fp16.
// A custom GPU that does not state its compute capability is taken to have them.
bool supports_bf16(const Gpu&);
// Hopper and newer (compute capability 9.0 and up): FlashAttention-2 reaches a smaller share of their peak.
bool hopper_or_newer(const Gpu&);

}  // namespace vramcalc
