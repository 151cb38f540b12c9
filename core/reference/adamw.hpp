// Scalar reference of torch.optim.AdamW's single-tensor path (foreach=False, fused=False, capturable=False),
// reproduced bit for bit for float32 tensors on the CPU.
//
// How torch computes one step (torch/optim/adamw.py, 1.13, and the ATen CPU kernels it calls):
//   param.mul_(1 - lr*wd)                       python double, rounded to float, then one float multiply
//   exp_avg.mul_(b1).add_(g, alpha=1-b1)        1.13: m*b1f, then add_'s vectorized kernel vec::fmadd(g, alpha, self):
//                                               a fused multiply-add   fma(g, (float)(1-b1), m*b1f)
//   exp_avg.lerp_(g, 1-b1)                      2.x:  lerp_vec: w=(float)(1-b1); |w|<0.5 ? fma(w, g-m, m)
//                                                                                        : fma(w-1, g-m, g)
//   exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2)    self + value*t1*t2; the compiler contracts it (measured on the
//                                               Debian 1.13 build, vector and scalar paths): fma(v1*g, g, v*b2f)
//   bias_correction1 = 1 - b1**step             python doubles (libm pow); step is a python float
//   step_size = lr / bias_correction1           double; addcdiv's value -step_size is rounded to float
//   denom = (v.sqrt() / sqrt(bc2)).add_(eps)    float sqrt, float divide by (float)sqrt(bc2), float add (float)eps
//   param.addcdiv_(m, denom, value=-step_size)  self + value*t1/t2 = p + ((-step_size)f * m) / denom, no FMA
//   amsgrad: vmax = torch.maximum(vmax, v) (NaN propagates), denom from vmax; maximize: g = -g.
//
// Every FMA meant is written with fmaf; every other operation is a single IEEE float operation, so the result
// is the same under gcc/clang (-ffp-contract=off), emcc and nvcc (--fmad=false). No flush-to-zero is assumed.
// The per-step scalars (StepScalars) are computed once on the host, in double, as torch's python code does;
// the elementwise step (adamw::step) is VRAMCALC_HD so a CUDA kernel can run exactly the same code.
#pragma once
#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define VRAMCALC_HD __host__ __device__
#else
#define VRAMCALC_HD
#endif

namespace vramcalc {
namespace adamw {

// torch_1_13: exp_avg.mul_(b1).add_(g, alpha=1-b1).  torch_2: exp_avg.lerp_(g, 1-b1) (torch >= 2.0).
enum class Variant : int { torch_1_13 = 0, torch_2 = 1 };

struct Options {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 1e-2;
    bool amsgrad = false;
    bool maximize = false;
    Variant variant = Variant::torch_1_13;
    // addcmul_ compiled with FMA contraction (true on the Debian torch 1.13 CPU build, measured; true for nvcc's
    // default --fmad=true). False gives v*b2f + ((1-b2)f*g)*g with two roundings.
    bool addcmul_fma = true;
    // bias_correction2_sqrt as bias_correction2**0.5 (libm pow, newer 2.x adam.py) instead of math.sqrt.
    bool bc2_sqrt_via_pow = false;
};

// The float scalars one step applies, each rounded from torch's python double exactly once.
struct StepScalars {
    float decay;            // (float)(1 - lr*weight_decay)
    float beta1;            // (float)beta1
    float one_minus_beta1;  // (float)(1 - beta1): add_'s alpha (1.13) or lerp's weight (2.x)
    float beta2;            // (float)beta2
    float one_minus_beta2;  // (float)(1 - beta2): addcmul_'s value
    float bc2_sqrt;         // (float)sqrt(1 - beta2**step)
    float eps;              // (float)eps
    float neg_step_size;    // (float)(-(lr / (1 - beta1**step)))
    int flags;              // kAmsgrad | kMaximize | kLerp | kAddcmulFma
};

constexpr int kAmsgrad = 1;
constexpr int kMaximize = 2;
constexpr int kLerp = 4;
constexpr int kAddcmulFma = 8;

// Host only (libm pow/sqrt, as CPython's float ** and math.sqrt). step counts from 1.
// The double expressions are written one rounding at a time, as Python evaluates them.
inline StepScalars step_scalars(const Options& o, std::int64_t step) {
    const double s = static_cast<double>(step);
    const double lr_wd = o.lr * o.weight_decay;
    const double decay = 1.0 - lr_wd;
    const double pow1 = std::pow(o.beta1, s);
    const double pow2 = std::pow(o.beta2, s);
    const double bc1 = 1.0 - pow1;
    const double bc2 = 1.0 - pow2;
    const double step_size = o.lr / bc1;
    const double bc2_sqrt = o.bc2_sqrt_via_pow ? std::pow(bc2, 0.5) : std::sqrt(bc2);
    StepScalars r;
    r.decay = static_cast<float>(decay);
    r.beta1 = static_cast<float>(o.beta1);
    r.one_minus_beta1 = static_cast<float>(1.0 - o.beta1);
    r.beta2 = static_cast<float>(o.beta2);
    r.one_minus_beta2 = static_cast<float>(1.0 - o.beta2);
    r.bc2_sqrt = static_cast<float>(bc2_sqrt);
    r.eps = static_cast<float>(o.eps);
    r.neg_step_size = static_cast<float>(-step_size);
    r.flags = (o.amsgrad ? kAmsgrad : 0) | (o.maximize ? kMaximize : 0) |
              (o.variant == Variant::torch_2 ? kLerp : 0) | (o.addcmul_fma ? kAddcmulFma : 0);
    return r;
}

// torch.maximum: NaN if either is NaN, else the larger.
VRAMCALC_HD inline float maximum(float a, float b) {
    if (a != a || b != b) return a + b;
    return a > b ? a : b;
}

// One AdamW step on one element, in place. max_exp_avg_sq is read and written only with amsgrad.
VRAMCALC_HD inline void step(float& param, float& exp_avg, float& exp_avg_sq, float& max_exp_avg_sq, float grad,
                             const StepScalars& s) {
    const float g = (s.flags & kMaximize) ? -grad : grad;
    const float p = param * s.decay;

    float m;
    if (s.flags & kLerp) {
        const float w = s.one_minus_beta1;
        const float d = g - exp_avg;
        m = (fabsf(w) < 0.5f) ? fmaf(w, d, exp_avg) : fmaf(w - 1.0f, d, g);
    } else {
        m = fmaf(g, s.one_minus_beta1, exp_avg * s.beta1);
    }

    const float vg = s.one_minus_beta2 * g;
    const float vb = exp_avg_sq * s.beta2;
    float v;
    if (s.flags & kAddcmulFma) {
        v = fmaf(vg, g, vb);
    } else {
        const float vgg = vg * g;
        v = vb + vgg;
    }

    float vd = v;
    if (s.flags & kAmsgrad) {
        max_exp_avg_sq = maximum(max_exp_avg_sq, v);
        vd = max_exp_avg_sq;
    }
    const float denom = sqrtf(vd) / s.bc2_sqrt + s.eps;
    const float num = s.neg_step_size * m;
    param = p + num / denom;
    exp_avg = m;
    exp_avg_sq = v;
}

// ---- 16-bit conversions of the fp32 master weights, by hand on the bit pattern (same on every platform) ----

VRAMCALC_HD inline std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}
VRAMCALC_HD inline float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

// float -> bfloat16, round to nearest even (c10::BFloat16's rule). NaN stays NaN: sign and top payload bits are
// kept and the quiet bit set (torch itself gives 0x7FC0 on its scalar path, 0xFFFF on its AVX2 path).
VRAMCALC_HD inline std::uint16_t to_bf16_bits(float f) {
    const std::uint32_t u = float_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    const std::uint32_t bias = 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>((u + bias) >> 16);
}
VRAMCALC_HD inline float bf16_to_float(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

// float -> IEEE binary16, round to nearest even, overflow to infinity, subnormals rounded correctly.
// NaN stays NaN: sign and top 10 payload bits kept, quiet bit set (as F16C's vcvtps2ph does).
VRAMCALC_HD inline std::uint16_t to_fp16_bits(float f) {
    const std::uint32_t u = float_bits(f);
    const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
    const std::uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
    if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: rounds to infinity
    const int exp = static_cast<int>(a >> 23);                                // biased float exponent
    if (exp >= 113) {                                                         // normal half (>= 2^-14)
        const std::uint32_t mant = a & 0x7FFFFFu;
        std::uint32_t h = (static_cast<std::uint32_t>(exp - 112) << 10) | (mant >> 13);
        const std::uint32_t rest = mant & 0x1FFFu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: still right
        return static_cast<std::uint16_t>(sign | h);
    }
    if (exp < 102) return sign;  // below half the smallest subnormal 2^-25: rounds to zero (2^-25 itself too)
    // Subnormal half: value = sig * 2^(exp-150), half ulp = 2^-24, so h = sig >> (126 - exp), rounded.
    const std::uint32_t sig = (a & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - exp;  // 14..24
    std::uint32_t h = sig >> shift;
    const std::uint32_t rest = sig & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1u))) ++h;  // 0x3FF + 1 = 0x400: the smallest normal, correct
    return static_cast<std::uint16_t>(sign | h);
}

VRAMCALC_HD inline float fp16_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t e = (h >> 10) & 0x1Fu;
    std::uint32_t m = h & 0x3FFu;
    if (e == 0x1Fu) return bits_float(sign | 0x7F800000u | (m << 13));
    if (e != 0) return bits_float(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return bits_float(sign);
    int ee = 113;  // normalise the subnormal: value = m * 2^-24
    while (!(m & 0x400u)) {
        m <<= 1;
        --ee;
    }
    return bits_float(sign | (static_cast<std::uint32_t>(ee) << 23) | ((m & 0x3FFu) << 13));
}

// Mixed precision: the fp32 master takes the step, then the 16-bit parameter is the master rounded.
enum class Half : int { bf16 = 0, fp16 = 1 };
VRAMCALC_HD inline std::uint16_t to_half_bits(float f, Half h) {
    return h == Half::bf16 ? to_bf16_bits(f) : to_fp16_bits(f);
}
VRAMCALC_HD inline float half_to_float(std::uint16_t b, Half h) {
    return h == Half::bf16 ? bf16_to_float(b) : fp16_to_float(b);
}

VRAMCALC_HD inline void step_mixed(float& master, std::uint16_t& param16, float& exp_avg, float& exp_avg_sq,
                                   float& max_exp_avg_sq, float grad, const StepScalars& s, Half h) {
    step(master, exp_avg, exp_avg_sq, max_exp_avg_sq, grad, s);
    param16 = to_half_bits(master, h);
}

}  // namespace adamw
}  // namespace vramcalc
