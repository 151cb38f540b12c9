// Elementwise AdamW on the GPU: the scalar reference step of core/reference/adamw.hpp, four elements per thread
// (16-byte loads and stores), a grid-stride loop, and the n % 4 tail in block 0. Built with --fmad=false
// (tests/cuda/CMakeLists.txt): the only FMAs are the fmaf calls the reference writes on purpose.
#include <cuda_runtime.h>

#include "adamw_kernels.hpp"

namespace vramcalc {
namespace cuda {
namespace {

template <bool kMixed>
__global__ void __launch_bounds__(256) adamw_kernel(float* __restrict__ p, std::uint16_t* __restrict__ p16,
                                                    const float* __restrict__ g, float* __restrict__ m,
                                                    float* __restrict__ v, float* __restrict__ vmax, std::size_t n,
                                                    adamw::StepScalars s, adamw::Half half) {
    const bool ams = (s.flags & adamw::kAmsgrad) != 0;
    const std::size_t n4 = n / 4;
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 P = reinterpret_cast<const float4*>(p)[i];
        const float4 G = __ldg(reinterpret_cast<const float4*>(g) + i);
        float4 M = reinterpret_cast<const float4*>(m)[i];
        float4 V = reinterpret_cast<const float4*>(v)[i];
        float4 X = make_float4(0.f, 0.f, 0.f, 0.f);
        if (ams) X = reinterpret_cast<const float4*>(vmax)[i];
        adamw::step(P.x, M.x, V.x, X.x, G.x, s);
        adamw::step(P.y, M.y, V.y, X.y, G.y, s);
        adamw::step(P.z, M.z, V.z, X.z, G.z, s);
        adamw::step(P.w, M.w, V.w, X.w, G.w, s);
        reinterpret_cast<float4*>(p)[i] = P;
        reinterpret_cast<float4*>(m)[i] = M;
        reinterpret_cast<float4*>(v)[i] = V;
        if (ams) reinterpret_cast<float4*>(vmax)[i] = X;
        if (kMixed) {
            ushort4 h;
            h.x = adamw::to_half_bits(P.x, half);
            h.y = adamw::to_half_bits(P.y, half);
            h.z = adamw::to_half_bits(P.z, half);
            h.w = adamw::to_half_bits(P.w, half);
            reinterpret_cast<ushort4*>(p16)[i] = h;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x < n - n4 * 4) {
        const std::size_t j = n4 * 4 + threadIdx.x;
        float x = ams ? vmax[j] : 0.0f;
        adamw::step(p[j], m[j], v[j], x, g[j], s);
        if (ams) vmax[j] = x;
        if (kMixed) p16[j] = adamw::to_half_bits(p[j], half);
    }
}

unsigned blocks_for(std::size_t n) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (sms <= 0) sms = 80;
    }
    const std::size_t want = (n / 4 + 255) / 256;
    const std::size_t cap = static_cast<std::size_t>(sms) * 16;  // 16 blocks of 256 threads per SM, grid-stride
    return static_cast<unsigned>(want < 1 ? 1 : (want < cap ? want : cap));
}

}  // namespace

void launch_adamw_fp32(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                       std::size_t n, const adamw::StepScalars& s) {
    adamw_kernel<false><<<blocks_for(n), 256>>>(param, nullptr, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s,
                                                adamw::Half::bf16);
}

void launch_adamw_mixed(float* master, std::uint16_t* param16, const float* grad, float* exp_avg, float* exp_avg_sq,
                        float* max_exp_avg_sq, std::size_t n, const adamw::StepScalars& s, adamw::Half half) {
    adamw_kernel<true><<<blocks_for(n), 256>>>(master, param16, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s, half);
}

const char* last_error() {
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace cuda
}  // namespace vramcalc
