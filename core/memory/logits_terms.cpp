// The logits: what the output projection and the loss hold at the end of forward, in the loss's backward and
// through the optimizer step, per stack and loss (frameworks.cpp), and the lm_head's own transients.
#include "memory/memory_common.hpp"
#include "model/families.hpp"

namespace vramcalc {

using namespace detail;

namespace {

// This GPU's logits: split over the vocabulary by Megatron's vocab-parallel cross-entropy and by PyTorch's
// loss_parallel (torchtitan); whole on every rank when a replicated output feeds a plain cross-entropy.
double logits_elements(const Step& c) {
    const bool sharded = megatron_model(c) || c.loss_parallel;
    return c.tokens * double(c.model.vocab) / (sharded ? double(c.tp) : 1);
}

// Logits-sized tensors besides the fp32 chain: Gemma 2's final soft-capping (divide, tanh, multiply: tanh's
// output is saved) and Granite's/Cohere's logits scaling (one more tensor).
double logits_extra_bytes(const Step& c, double nv) {
    const double e = c.compute_element;
    double bytes = 0;
    if (c.model.final_softcap > 0) bytes += 2 * e * nv;
    if (c.model.scaled_logits) bytes += e * nv;
    return bytes;
}

}  // namespace

namespace {

// flash-attn's CrossEntropyLoss (losses/cross_entropy.py, llm-foundry's fused_crossentropy) computes in fp32
// inside its kernel over the 16-bit logits, saves those (and an fp32 log-sum-exp per token) and returns a new
// 16-bit gradient: the logits alone, then the logits and their gradient; no fp32 copy. (With
// inplace_backward, and in Liger's cross-entropy, the gradient overwrites the logits: one less.) CUDA only:
// read from the code, not measured.
constexpr LogitsPath kKernelLoss{{1, 0, 0, 0}, {2, 0, 0, 0}, {}};

// The stack's logits path (frameworks.cpp) for the configured loss.
const LogitsPath& logits_path(const Step& c) {
    const FrameworkProfile& p = *c.framework;
    if (c.loss == Loss::fused) return kKernelLoss;
    if (c.loss == Loss::full) return p.full;
    return c.lm_head_chunks ? p.chunked_lm_head : p.chunked;
}

double moment_bytes(const Step& c, const LogitsMoment& m) {
    const double nv = logits_elements(c), e = c.compute_element;
    return nv * (m.half * e + m.upcast * (e < 4 ? 4 : 0) + m.fp32 * 4 + m.per_chunk * 4 / double(c.loss_chunks));
}

// PyTorch's loss_parallel backward (torch/distributed/tensor/parallel/loss.py _nll_loss_backward) builds the
// one-hot target with zeros_like and the gradient from exp of the saved log-softmax: one fp32 shard more than
// the plain cross-entropy's backward (measured, tests/validation/stacks/torchtitan).
double loss_parallel_backward_bytes(const Step& c) {
    if (megatron_model(c) || c.tp < 2 || !c.loss_parallel || c.loss != Loss::full) return 0;
    return 4 * logits_elements(c);
}

// Liger's fused linear cross-entropy (ops/fused_linear_cross_entropy.py): lm_head and the loss run over
// chunks of about n*h/V tokens, so a chunk's logits and their gradient are n*h-sized; the gradients of
// lm_head's input and weight are computed in the forward and held until the backward.
double fused_linear_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double nh = c.tokens * double(a.hidden);
    return 2 * 4 * nh + nh * c.compute_element +
           (trains_all_weights(c) ? double(a.vocab) * double(a.hidden) * c.weight_element : 0);
}

}  // namespace

// At the end of forward, inside the loss (transformers' ForCausalLMLoss: the 16-bit logits, their fp32
// upcast and the saved log-softmax; other stacks after frameworks.cpp).
double logits_forward_peak_bytes(const Step& c) {
    if (!holds_head(c)) return 0;
    if (c.loss == Loss::fused_linear) return fused_linear_bytes(c);
    const double nv = logits_elements(c);
    return moment_bytes(c, logits_path(c).forward) + logits_extra_bytes(c, nv);
}

// At the first log-softmax backward (transformers: the saved output, the incoming gradient and the result,
// all fp32).
double logits_backward_peak_bytes(const Step& c) {
    if (!holds_head(c)) return 0;
    if (c.loss == Loss::fused_linear) return fused_linear_bytes(c);
    const double nv = logits_elements(c);
    return moment_bytes(c, logits_path(c).backward) + (c.model.final_softcap > 0 ? c.compute_element * nv : 0) +
           loss_parallel_backward_bytes(c);
}

// A 4-bit lm_head is dequantized for its matmul at the end of forward (autograd/_functions.py MatMul4Bit):
// before 0.43.2 to the quantization state's dtype (fp16 as Fabric quantizes) and then cast to the input's, two
// copies (measured, stacks/litgpt2023); later releases dequantize to the input's dtype.
double dequantized_head_bytes(const Step& c) {
    if (c.finetune.method != FinetuneMethod::qlora || !c.finetune.quantize_lm_head || !holds_head(c)) return 0;
    return (bitsandbytes_keeps_inputs(c) ? 2 : 1) * double(lm_head_params(c.model)) * c.compute_element / double(c.tp);
}

// The output projection's 16-bit output as it is written.
double logits_forward_output_bytes(const Step& c) {
    return holds_head(c) && c.loss != Loss::fused_linear ? logits_elements(c) * c.compute_element : 0;
}

namespace detail {
bool loop_keeps_outputs(const Step& c) {
    const LogitsMoment& kept = logits_path(c).step;
    return kept.half + kept.upcast + kept.fp32 + kept.per_chunk > 0;
}
}  // namespace detail

// Logits a training loop keeps alive through the optimizer step (LitGPT's `logits` variable).
double logits_step_bytes(const Step& c) {
    if (!holds_head(c) || c.loss == Loss::fused_linear) return 0;
    return moment_bytes(c, logits_path(c).step);
}

}  // namespace vramcalc
