// (c) Bandwidth of the elementwise AdamW kernel against cudaMemcpy device-to-device.
// Bytes moved per element: fp32 28 (read param, grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq),
// + 8 with amsgrad, bf16/fp16 mixed 30 (+ the 16-bit param written). A copy of B bytes moves 2B.
// Usage: adamw_bandwidth [--n ELEMENTS] [--iters K] [--require RATIO] [--out FILE.json]
//   exit 1 when the fp32 kernel reaches less than RATIO (default 0.85) of the copy bandwidth; 77 without a GPU.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "adamw_kernels.hpp"
#include "gpu_common.hpp"

using namespace vramcalc;
using nlohmann::json;

int main(int argc, char** argv) {
    if (!gpu::have_gpu("adamw_bandwidth")) return gpu::kSkip;
    std::size_t n = std::stoull(gpu::arg(argc, argv, "--n", "268435456"));  // 2^28: 1 GiB per fp32 buffer
    const int iters = std::stoi(gpu::arg(argc, argv, "--iters", "20"));
    const double require = std::stod(gpu::arg(argc, argv, "--require", "0.85"));
    const std::string out = gpu::arg(argc, argv, "--out", "adamw_bandwidth.json");

    std::size_t free_b = 0, total = 0;
    VRAMCALC_CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
    while (n > (1u << 20) && n * 4 * 6 + n * 2 > free_b * 0.8) n /= 2;

    float *p, *g, *m, *v, *x;
    std::uint16_t* h;
    VRAMCALC_CUDA_CHECK(cudaMalloc(&p, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&g, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&m, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&v, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&x, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&h, n * 2));
    VRAMCALC_CUDA_CHECK(cudaMemset(p, 0x3c, n * 4));  // 0x3c3c3c3c = 0.0115
    VRAMCALC_CUDA_CHECK(cudaMemset(g, 0x3b, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMemset(m, 0, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMemset(v, 0, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMemset(x, 0, n * 4));

    cudaEvent_t t0, t1;
    cudaEventCreate(&t0);
    cudaEventCreate(&t1);
    auto time_ms = [&](auto&& launch) {
        for (int i = 0; i < 3; ++i) launch(i + 1);
        VRAMCALC_CUDA_CHECK(cudaDeviceSynchronize());
        cudaEventRecord(t0);
        for (int i = 0; i < iters; ++i) launch(i + 4);
        cudaEventRecord(t1);
        VRAMCALC_CUDA_CHECK(cudaEventSynchronize(t1));
        const char* err = cuda::last_error();
        if (*err) {
            std::fprintf(stderr, "kernel: %s\n", err);
            std::exit(2);
        }
        float ms = 0;
        cudaEventElapsedTime(&ms, t0, t1);
        return static_cast<double>(ms) / iters;
    };

    const double copy_ms = time_ms([&](int) { cudaMemcpy(m, p, n * 4, cudaMemcpyDeviceToDevice); });
    const double copy_gbs = 2.0 * n * 4 / (copy_ms * 1e6);
    std::printf("elements %zu; cudaMemcpy D2D of %.2f GiB: %.3f ms, %.1f GB/s\n", n, n * 4 / 1073741824.0, copy_ms,
                copy_gbs);

    adamw::Options o;
    adamw::Options oa = o;
    oa.amsgrad = true;
    oa.variant = adamw::Variant::torch_2;
    struct Run {
        const char* name;
        double bytes_per_element;
        double ms;
    };
    std::vector<Run> runs;
    runs.push_back({"fp32 (torch-1.13)", 28,
                    time_ms([&](int s) { cuda::launch_adamw_fp32(p, g, m, v, x, n, adamw::step_scalars(o, s)); })});
    runs.push_back({"fp32 amsgrad (torch-2)", 36,
                    time_ms([&](int s) { cuda::launch_adamw_fp32(p, g, m, v, x, n, adamw::step_scalars(oa, s)); })});
    runs.push_back({"bf16 param, fp32 master", 30, time_ms([&](int s) {
                        cuda::launch_adamw_mixed(p, h, g, m, v, x, n, adamw::step_scalars(o, s), adamw::Half::bf16);
                    })});
    runs.push_back({"fp16 param, fp32 master", 30, time_ms([&](int s) {
                        cuda::launch_adamw_mixed(p, h, g, m, v, x, n, adamw::step_scalars(o, s), adamw::Half::fp16);
                    })});

    json rj = json::array();
    double fp32_ratio = 0;
    for (const Run& r : runs) {
        const double gbs = r.bytes_per_element * n / (r.ms * 1e6);
        const double ratio = gbs / copy_gbs;
        if (rj.empty()) fp32_ratio = ratio;
        std::printf("%-28s %.3f ms/step, %.1f GB/s, %.1f%% of copy, %.2f Gelem/s\n", r.name, r.ms, gbs, 100 * ratio,
                    n / (r.ms * 1e6));
        rj.push_back({{"kernel", r.name}, {"ms_per_step", r.ms}, {"bytes_per_element", r.bytes_per_element},
                      {"gb_per_s", gbs}, {"fraction_of_copy", ratio}});
    }
    const bool ok = fp32_ratio >= require;
    gpu::write_json(out, {{"test", "AdamW kernel bandwidth vs cudaMemcpy D2D"},
                          {"device", gpu::device_info()},
                          {"elements", n},
                          {"iterations", iters},
                          {"copy", {{"ms", copy_ms}, {"gb_per_s", copy_gbs}, {"bytes", n * 4}}},
                          {"kernels", rj},
                          {"required_fraction", require},
                          {"pass", ok}});
    std::printf("adamw_bandwidth: fp32 kernel at %.1f%% of copy bandwidth (goal %.0f%%): %s\n", 100 * fp32_ratio,
                100 * require, ok ? "PASS" : "FAIL");
    cudaFree(p);
    cudaFree(g);
    cudaFree(m);
    cudaFree(v);
    cudaFree(x);
    cudaFree(h);
    return ok ? 0 : 1;
}
