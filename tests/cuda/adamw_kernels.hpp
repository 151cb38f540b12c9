// Launchers for the elementwise AdamW kernels (adamw_kernels.cu). Plain C++: host programs include this
// without nvcc. Every kernel applies vramcalc::adamw::step (core/reference/adamw.hpp) to each element, compiled with
// --fmad=false, so a GPU result is bit-identical to the CPU reference (NaN payloads aside).
#pragma once
#include <cstddef>
#include <cstdint>

#include "reference/adamw.hpp"

namespace vramcalc {
namespace cuda {

// fp32 parameter and state. max_exp_avg_sq may be null unless s.flags has kAmsgrad. Asynchronous on stream 0.
void launch_adamw_fp32(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, float* max_exp_avg_sq,
                       std::size_t n, const adamw::StepScalars& s);

// Mixed precision: fp32 master, grad and state; param16 receives the updated master rounded to bf16 or fp16.
void launch_adamw_mixed(float* master, std::uint16_t* param16, const float* grad, float* exp_avg, float* exp_avg_sq,
                        float* max_exp_avg_sq, std::size_t n, const adamw::StepScalars& s, adamw::Half half);

// The last CUDA error as text, or "" (clears it).
const char* last_error();

}  // namespace cuda
}  // namespace vramcalc
