// Shared by the GPU validation programs: the "no GPU" skip (exit 77, which ctest reports as skipped through
// SKIP_RETURN_CODE), error checks, argument parsing and writing the result JSON.
#pragma once
#include <cuda_runtime.h>  // the typed cudaMalloc overloads too; fine under g++

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace vramcalc {
namespace gpu {

constexpr int kSkip = 77;

// True when a CUDA device is usable; otherwise prints why and the caller returns kSkip.
inline bool have_gpu(const char* program) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        std::printf("%s: no CUDA device (%s): skipped\n", program,
                    e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return false;
    }
    return true;
}

#define VRAMCALC_CUDA_CHECK(call)                                                                        \
    do {                                                                                                 \
        const cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                       \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
            std::exit(2);                                                                                \
        }                                                                                                \
    } while (0)

// --name value, or the default.
inline std::string arg(int argc, char** argv, const std::string& name, const std::string& dflt) {
    for (int i = 1; i + 1 < argc; ++i)
        if (argv[i] == name) return argv[i + 1];
    return dflt;
}

inline nlohmann::json device_info() {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp p{};
    cudaGetDeviceProperties(&p, dev);
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    return {{"name", p.name},
            {"sm", std::to_string(p.major) + std::to_string(p.minor)},
            {"multiprocessors", p.multiProcessorCount},
            {"total_global_mem", p.totalGlobalMem},
            {"cuda_runtime", rt},
            {"cuda_driver", drv}};
}

inline void write_json(const std::string& path, const nlohmann::json& j) {
    if (path.empty()) return;
    std::ofstream f(path);
    f << j.dump(2) << "\n";
    std::printf("wrote %s\n", path.c_str());
}

}  // namespace gpu
}  // namespace vramcalc
