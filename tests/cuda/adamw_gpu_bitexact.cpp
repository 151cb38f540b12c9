// (a) The GPU kernel against the CPU reference, bit for bit: millions of random float32 elements (normal
// values over the whole exponent range, subnormals, zeros of both signs, infinities, NaN), several steps,
// several option sets, fp32 and mixed precision (bf16 / fp16 parameter from an fp32 master).
// NaN matches NaN whatever the payload (the GPU's canonical NaN differs from x86's).
// Usage: adamw_gpu_bitexact [--n ELEMENTS] [--steps K] [--out FILE.json]   exit 0 pass, 1 fail, 77 no GPU.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "adamw_kernels.hpp"
#include "gpu_common.hpp"
#include "reference/adamw.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || adamw::float_bits(a) == adamw::float_bits(b); }

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, bool tame) {
    std::vector<float> v(n);
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> expo(-45.0, 38.0);
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned kind = static_cast<unsigned>(rng() % 1000);
        float f;
        if (tame || kind < 700)
            f = static_cast<float>(normal(rng) * (tame ? 1.0 : std::pow(10.0, expo(rng))));
        else if (kind < 900)
            f = adamw::bits_float(static_cast<std::uint32_t>(rng()));  // any bit pattern, NaN and inf included
        else if (kind < 970)
            f = adamw::bits_float(static_cast<std::uint32_t>(rng() % 0x800000u) | (rng() & 1 ? 0x80000000u : 0u));
        else if (kind < 990)
            f = (rng() & 1) ? 0.0f : -0.0f;
        else
            f = (rng() & 1) ? INFINITY : -INFINITY;
        v[i] = f;
    }
    return v;
}

template <class F>
void parallel_for(std::size_t n, F f) {
    const unsigned t = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> th;
    for (unsigned k = 0; k < t; ++k)
        th.emplace_back([=] {
            for (std::size_t i = n * k / t; i < n * (k + 1) / t; ++i) f(i);
        });
    for (auto& x : th) x.join();
}

struct Config {
    const char* name;
    adamw::Options o;
    int precision;  // 0 fp32, 1 bf16 mixed, 2 fp16 mixed
    bool tame;      // ordinary normal values only
};

}  // namespace

int main(int argc, char** argv) {
    if (!gpu::have_gpu("adamw_gpu_bitexact")) return gpu::kSkip;
    const std::size_t n = std::stoull(gpu::arg(argc, argv, "--n", "8388613"));  // 2^23 + 5: exercises the tail
    const int steps = std::stoi(gpu::arg(argc, argv, "--steps", "5"));
    const std::string out = gpu::arg(argc, argv, "--out", "adamw_gpu_bitexact.json");

    std::vector<Config> configs;
    {
        adamw::Options d;
        configs.push_back({"fp32 torch-1.13 defaults", d, 0, false});
        configs.push_back({"fp32 torch-1.13 defaults, ordinary values", d, 0, true});
        adamw::Options a = d;
        a.variant = adamw::Variant::torch_2;
        a.amsgrad = true;
        a.maximize = true;
        a.lr = 3e-2;
        configs.push_back({"fp32 torch-2 amsgrad maximize lr 3e-2", a, 0, false});
        adamw::Options b = d;
        b.beta1 = 0.3;
        b.beta2 = 0.7;
        b.eps = 0.0;
        b.weight_decay = 0.0;
        b.variant = adamw::Variant::torch_2;  // lerp weight 0.7 >= 0.5: the other branch
        configs.push_back({"fp32 torch-2 betas 0.3/0.7 eps 0 wd 0", b, 0, false});
        adamw::Options c = d;
        c.addcmul_fma = false;
        configs.push_back({"fp32 torch-1.13 addcmul without FMA", c, 0, false});
        configs.push_back({"bf16 mixed torch-2", a, 1, false});
        configs.push_back({"fp16 mixed torch-1.13", d, 2, true});
        configs.push_back({"fp16 mixed torch-1.13, wild values", d, 2, false});
    }

    float *dp, *dg, *dm, *dv, *dx;
    std::uint16_t* dh;
    VRAMCALC_CUDA_CHECK(cudaMalloc(&dp, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&dg, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&dm, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&dv, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&dx, n * 4));
    VRAMCALC_CUDA_CHECK(cudaMalloc(&dh, n * 2));

    json results = json::array();
    bool all_ok = true;
    std::uint64_t seed = 1;
    for (const Config& cfg : configs) {
        std::vector<float> p = random_floats(n, seed++, cfg.tame);
        std::vector<float> m(n, 0.f), v(n, 0.f), x(n, 0.f), gp(n), gm(n), gv(n), gx(n);
        std::vector<std::uint16_t> h(n, 0), gh(n);
        VRAMCALC_CUDA_CHECK(cudaMemcpy(dp, p.data(), n * 4, cudaMemcpyHostToDevice));
        VRAMCALC_CUDA_CHECK(cudaMemset(dm, 0, n * 4));
        VRAMCALC_CUDA_CHECK(cudaMemset(dv, 0, n * 4));
        VRAMCALC_CUDA_CHECK(cudaMemset(dx, 0, n * 4));
        const adamw::Half half = cfg.precision == 2 ? adamw::Half::fp16 : adamw::Half::bf16;
        long long mismatches = 0;
        json first = json::array();
        for (int s = 1; s <= steps; ++s) {
            const std::vector<float> g = random_floats(n, seed++, cfg.tame);
            VRAMCALC_CUDA_CHECK(cudaMemcpy(dg, g.data(), n * 4, cudaMemcpyHostToDevice));
            const adamw::StepScalars sc = adamw::step_scalars(cfg.o, s);
            if (cfg.precision == 0)
                cuda::launch_adamw_fp32(dp, dg, dm, dv, dx, n, sc);
            else
                cuda::launch_adamw_mixed(dp, dh, dg, dm, dv, dx, n, sc, half);
            parallel_for(n, [&](std::size_t i) {
                adamw::step(p[i], m[i], v[i], x[i], g[i], sc);
                if (cfg.precision) h[i] = adamw::to_half_bits(p[i], half);
            });
            VRAMCALC_CUDA_CHECK(cudaDeviceSynchronize());
            const char* err = cuda::last_error();
            if (*err) {
                std::fprintf(stderr, "kernel: %s\n", err);
                return 2;
            }
            VRAMCALC_CUDA_CHECK(cudaMemcpy(gp.data(), dp, n * 4, cudaMemcpyDeviceToHost));
            VRAMCALC_CUDA_CHECK(cudaMemcpy(gm.data(), dm, n * 4, cudaMemcpyDeviceToHost));
            VRAMCALC_CUDA_CHECK(cudaMemcpy(gv.data(), dv, n * 4, cudaMemcpyDeviceToHost));
            VRAMCALC_CUDA_CHECK(cudaMemcpy(gx.data(), dx, n * 4, cudaMemcpyDeviceToHost));
            if (cfg.precision) VRAMCALC_CUDA_CHECK(cudaMemcpy(gh.data(), dh, n * 2, cudaMemcpyDeviceToHost));
            for (std::size_t i = 0; i < n; ++i) {
                bool ok = same(p[i], gp[i]) && same(m[i], gm[i]) && same(v[i], gv[i]);
                if (cfg.o.amsgrad) ok = ok && same(x[i], gx[i]);
                if (cfg.precision) ok = ok && same(adamw::half_to_float(h[i], half), adamw::half_to_float(gh[i], half));
                if (!ok) {
                    if (first.size() < 5) {
                        char buf[256];
                        std::snprintf(buf, sizeof buf,
                                      "step %d element %zu: param cpu %08x gpu %08x, exp_avg cpu %08x gpu %08x, "
                                      "exp_avg_sq cpu %08x gpu %08x",
                                      s, i, adamw::float_bits(p[i]), adamw::float_bits(gp[i]), adamw::float_bits(m[i]),
                                      adamw::float_bits(gm[i]), adamw::float_bits(v[i]), adamw::float_bits(gv[i]));
                        first.push_back(buf);
                    }
                    ++mismatches;
                }
            }
        }
        std::size_t nan_params = 0;
        for (float f : p) nan_params += std::isnan(f);
        std::printf("%-45s %zu elements x %d steps: %lld mismatching elements (%zu NaN params)\n", cfg.name, n, steps,
                    mismatches, nan_params);
        for (const auto& f : first) std::printf("    %s\n", f.get<std::string>().c_str());
        all_ok = all_ok && mismatches == 0;
        results.push_back({{"config", cfg.name}, {"elements", n}, {"steps", steps},
                           {"mismatching_element_steps", mismatches}, {"first_mismatches", first},
                           {"nan_params_at_end", nan_params}});
    }
    cudaFree(dp);
    cudaFree(dg);
    cudaFree(dm);
    cudaFree(dv);
    cudaFree(dx);
    cudaFree(dh);
    gpu::write_json(out, {{"test", "adamw GPU kernel vs CPU reference, bit for bit"},
                          {"device", gpu::device_info()},
                          {"pass", all_ok},
                          {"results", results}});
    std::printf("adamw_gpu_bitexact: %s\n", all_ok ? "PASS" : "FAIL");
    return all_ok ? 0 : 1;
}
