#include "hardware/gpus.hpp"

#include <cmath>

namespace vramcalc {

// Memory as nvidia-smi reports the board's total (MiB; rocm-smi for the MI300X): what the driver, the
// CUDA context and PyTorch share. Bandwidth in GB/s and dense (non-sparse) bf16 tensor TFLOP/s with fp32
// accumulation from the vendors' data sheets; 0 TFLOP/s where the chip has no bf16 tensor cores.
// Figures from each vendor's datasheet: memory as the driver reports it; HBM GB/s; dense (not sparse) tensor-core
// TFLOP/s in bf16 and fp16 (GeForce: with fp32 accumulation), fp32 without tensor cores; links per direction
// (datasheets give both directions: NVLink 600 GB/s is 300 each way; "PCIe Gen4 64 GB/s" 32); the network per
// GPU of the vendor's reference system (DGX A100: 8x 200 Gb/s HDR; DGX H100/H200/B200: 8x 400 Gb/s NDR), 0 where
// there is none; SXM boards sit on NVSwitch (HGX A100/H100/H200/B200) or, for V100, DGX-1's NVLink mesh, and GeForce
// cards have no PCIe peer access (NCCL goes through host memory: nccl-tests#307's RTX 4090 logs, SHM). The compute capability from NVIDIA's CUDA GPUs list (developer.nvidia.com/cuda-gpus).
const std::vector<Gpu>& gpu_catalog() {
    constexpr double MiB = 1.0 / 1024;  // in GiB
    static const std::vector<Gpu> table = {
        // NVIDIA A100 Tensor Core GPU datasheet (2021): 312 TF bf16/fp16, 19.5 fp32, NVLink 600 GB/s, PCIe Gen4 64 GB/s
        {"a100-40gb", "NVIDIA A100 40GB SXM", 40960 * MiB, 1555, 312, 312, 19.5, 300, 32, 25, 8.0, false, Fabric::nvswitch},
        {"a100-80gb", "NVIDIA A100 80GB SXM", 81920 * MiB, 2039, 312, 312, 19.5, 300, 32, 25, 8.0, false, Fabric::nvswitch},
        {"a100-40gb-pcie", "NVIDIA A100 40GB PCIe", 40960 * MiB, 1555, 312, 312, 19.5, 32, 32, 0, 8.0},
        {"a100-80gb-pcie", "NVIDIA A100 80GB PCIe", 81920 * MiB, 1935, 312, 312, 19.5, 32, 32, 0, 8.0},
        // NVIDIA H100 Tensor Core GPU datasheet: SXM 989 TF bf16 dense (1979 sparse), 67 fp32, NVLink 900 GB/s,
        // PCIe Gen5 128 GB/s; PCIe card 756 TF, 51 fp32
        {"h100-80gb", "NVIDIA H100 80GB SXM", 81559 * MiB, 3350, 989, 989, 67, 450, 64, 50, 9.0, false, Fabric::nvswitch},
        {"h100-80gb-pcie", "NVIDIA H100 80GB PCIe", 81559 * MiB, 2000, 756, 756, 51, 64, 64, 0, 9.0},
        // NVIDIA H200 datasheet: H100's compute, 4.8 TB/s
        {"h200", "NVIDIA H200 141GB SXM", 143771 * MiB, 4800, 989, 989, 67, 450, 64, 50, 9.0, false, Fabric::nvswitch},
        // NVIDIA HGX B200 datasheet: 2.25 PF bf16 dense per GPU, NVLink 1.8 TB/s
        {"b200", "NVIDIA B200 180GB", 183359 * MiB, 8000, 2250, 2250, 0, 900, 64, 50, 10.0, false, Fabric::nvswitch},
        // NVIDIA L40S, L4 and A10 datasheets (PCIe Gen4 x16)
        {"l40s", "NVIDIA L40S 48GB", 46068 * MiB, 864, 362, 362, 91.6, 32, 32, 0, 8.9},
        {"l4", "NVIDIA L4 24GB", 23034 * MiB, 300, 121, 121, 30.3, 32, 32, 0, 8.9},
        {"a10", "NVIDIA A10 24GB", 23028 * MiB, 600, 125, 125, 31.2, 32, 32, 0, 8.6},
        {"a10g", "NVIDIA A10G 24GB", 23028 * MiB, 600, 70, 70, 0, 32, 32, 0, 8.6},
        // NVIDIA Ampere GA102 and Ada AD102 whitepapers: tensor TFLOPS with fp32 accumulation
        {"rtx-3090", "NVIDIA GeForce RTX 3090 24GB", 24576 * MiB, 936, 35.6, 35.6, 35.6, 32, 32, 0, 8.6, false, Fabric::host},
        {"rtx-4090", "NVIDIA GeForce RTX 4090 24GB", 24564 * MiB, 1008, 82.6, 82.6, 82.6, 32, 32, 0, 8.9, false, Fabric::host},
        // NVIDIA V100 datasheet (SXM2: 125 TF fp16, 15.7 fp32, NVLink 300 GB/s); T4 datasheet (65 TF fp16, PCIe Gen3)
        {"v100-16gb", "NVIDIA V100 16GB", 16384 * MiB, 900, 0, 125, 15.7, 150, 16, 0, 7.0, false, Fabric::nvlink},
        {"v100-32gb", "NVIDIA V100 32GB", 32768 * MiB, 900, 0, 125, 15.7, 150, 16, 0, 7.0, false, Fabric::nvlink},
        {"t4", "NVIDIA T4 16GB", 15360 * MiB, 320, 0, 65, 8.1, 16, 16, 0, 7.5},
        // AMD Instinct MI300X datasheet: 1307.4 TF bf16 dense, 163.4 fp32, Infinity Fabric 896 GB/s, PCIe Gen5
        {"mi300x", "AMD Instinct MI300X 192GB", 196592 * MiB, 5300, 1307, 1307, 163.4, 448, 64, 0, 0, true},
    };
    return table;
}

const Gpu* find_gpu(const std::string& id) {
    for (const Gpu& g : gpu_catalog())
        if (g.id == id) return &g;
    return nullptr;
}


int sm_version(const Gpu& g) { return int(std::lround(g.compute_capability * 10)); }

bool architecture_known(const Gpu& g) { return g.rocm || sm_version(g) > 0; }

bool supports_bf16(const Gpu& g) { return g.rocm || sm_version(g) >= 80 || !architecture_known(g); }

bool supports_fp8(const Gpu& g) { return g.rocm || sm_version(g) >= 89; }

bool hopper_or_newer(const Gpu& g) { return sm_version(g) >= 90; }

}  // namespace vramcalc
