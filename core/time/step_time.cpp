#include "time/step_time.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "memory/memory_common.hpp"
#include "memory/memory_terms.hpp"

namespace vramcalc {

using namespace detail;

namespace {

constexpr double kTera = 1e12, kGiga = 1e9;

// Across nodes: the user's figure, else the GPU's reference system's, else the assumed NIC (reported as such).
double inter_node_gbps(const Step& c) {
    if (c.inter_node_gbps > 0) return c.inter_node_gbps;
    return c.gpu.network_gbps > 0 ? c.gpu.network_gbps : kAssumedNetworkGbps;
}

// Achieved fractions, fitted on the fully-known calibration rows of tests/validation/throughput (evaluate.py --fit)
// and never on its test rows: of the dense peak for the matmuls, for flash attention (Ampere and older; Hopper and
// newer, where FlashAttention-2 reaches "only 35%", Shah et al. 2024, FlashAttention-3 §1), and of HBM bandwidth
// for the element-wise work between them.
constexpr double kMatmulFraction = 0.65;
constexpr double kAttentionFraction = 0.44;
constexpr double kHopperAttentionFraction = 0.20;
constexpr double kBandwidthFraction = 0.29;
// Of the float8 dense peak (twice the 16-bit one on every FP8 part: NVIDIA H100/H200/B200 and Ada, AMD MI300X
// datasheets), fitted on the bf16-to-float8 speedups of the calibration pairs (evaluate.py --float8).
constexpr double kFloat8MatmulFraction = 0.52;

// Parameters one token's forward multiplies by, per layer and in lm_head: every projection, only the routed
// experts a token visits (MoE), and the output projection.
double active_matmul_params(const Step& c) {
    const Architecture& a = c.model;
    double n = 0;
    for (const Linear& l : c.layer_linears()) {
        const bool routed = l.name.rfind("experts.", 0) == 0;
        const double count = routed ? double(a.experts_per_token) : double(l.count);
        const double layers = l.layers ? double(l.layers) : double(a.layers);
        n += double(l.in) * double(l.out) * count * layers;
    }
    return n + double(a.vocab) * double(a.hidden);
}

// Attention's score and value matmuls per token, over the whole sequence (PaLM's 12·L·H·Q·T, Chowdhery et al.
// 2022 appendix B, counts the forward's 4·L·H·Q·T this way).
double attention_flops_per_token(const Step& c) {
    const Architecture& a = c.model;
    return 2.0 * double(c.seq_len) * double(q_width(a) + v_width(a)) * double(a.layers);
}

// One token's training FLOPs by where they run. A weight's matmul costs 2 FLOPs per parameter forward, 2 for the
// input gradient and 2 for the weight gradient (Narayanan et al. 2021 §5.1: 3x the forward); a frozen base
// skips the last; attention's matmuls have no weights and cost 3x their forward.
struct TokenFlops {
    double layers_forward = 0, head_forward = 0, backward = 0, recompute = 0;
    double attention_forward = 0, attention_backward = 0, attention_recompute = 0;  // the parts attention runs
    double float8_forward = 0, float8_backward = 0, float8_recompute = 0;           // the parts float8 GEMMs run
    double total() const { return layers_forward + head_forward + backward + recompute; }
};

// `executed`: what the GPUs run — a causal flash kernel skips the masked half of the scores, and checkpointing
// recomputes (full: the layers' forward; Megatron's selective: attention's scores, Korthikanti et al. 2022 §5;
// torchtitan's per-op policy: every other matmul). Otherwise the model FLOPs of the MFU convention.
TokenFlops token_flops(const Step& c, bool executed) {
    const Architecture& a = c.model;
    const bool full = c.finetune.method == FinetuneMethod::full;
    const double head = 2 * double(a.vocab) * double(a.hidden);
    const double matmuls = 2 * active_matmul_params(c) - head;
    const double attention = attention_flops_per_token(c) * (executed && c.attention == Attention::flash ? 0.5 : 1);
    const double adapters = full ? 0 : 2 * c.adapter_params;
    TokenFlops f;
    f.layers_forward = matmuls + attention + adapters;
    f.head_forward = head;
    f.backward = (matmuls + head) * (full ? 2 : 1) + 2 * attention + 2 * adapters;
    f.attention_forward = attention, f.attention_backward = 2 * attention;
    // FP8 training converts the layers' projections (torchao's convert_to_float8_training as torchtitan filters
    // it, Transformer Engine's layers): their forward and both backward GEMMs at kFloat8MatmulFraction; attention
    // stays 16-bit, and lm_head too but under accelerate's TE conversion (stacks/fp8 A.8).
    const bool float8 = c.fp8_recipe != Fp8Recipe::none;
    const double float8_head = fp8_converts_head(c) ? head : 0;
    if (float8) f.float8_forward = matmuls + float8_head, f.float8_backward = (matmuls + float8_head) * (full ? 2 : 1);
    if (!executed) return f;
    switch (c.checkpointing) {
        case Checkpointing::full:
            f.recompute = f.layers_forward / double(c.checkpoint_every);
            f.attention_recompute = attention / double(c.checkpoint_every);
            f.float8_recompute = (f.float8_forward - float8_head) / double(c.checkpoint_every);
            break;
        case Checkpointing::selective: f.recompute = f.attention_recompute = attention; break;
        case Checkpointing::selective_op: f.recompute = 0.5 * matmuls, f.float8_recompute = 0.5 * f.float8_forward; break;
        case Checkpointing::none: break;
    }
    return f;
}

// The dense peak of the compute dtype, FLOP/s (the GPU catalog's datasheet figures).
double peak_flops(const Step& c) {
    switch (c.precision) {
        case Precision::fp32_true: return c.gpu.fp32_tflops * kTera;
        case Precision::fp16_mixed:
        case Precision::fp16_true:
        case Precision::fp16_base_mixed: return c.gpu.fp16_tflops * kTera;
        default: return c.gpu.bf16_tflops * kTera;
    }
}

double attention_fraction(const Step& c) {
    return hopper_or_newer(c.gpu) ? kHopperAttentionFraction : kAttentionFraction;
}

// The element-wise work (norms, activations, residual adds, rotary, dropout, softmax) reads and writes what the
// layers produce: taken as the tensors a layer saves without checkpointing (memory_terms.cpp), once in forward
// and twice in backward, and the logits' chain for the loss (per micro-batch, this GPU's bytes).
double layer_traffic_bytes(const Step& c) {
    return layer_activation_bytes(c.saving_everything()) * double(layers_on_stage(c));
}

// ---- Communication: ring collectives move (n-1)/n of the data per GPU for an all-gather or a reduce-scatter,
// twice that for an all-reduce (Patarasuk & Yuan 2009). Bytes per second of the link a group crosses: NVLink
// (or PCIe) inside a node, the network across nodes.
double link_bytes_per_s(const Step& c, std::uint64_t group, std::uint64_t stride) {
    const bool crosses_nodes = group * stride > c.gpus_per_node;
    return (crosses_nodes ? inter_node_gbps(c) : c.gpu.link_gbps) * kGiga;
}
double ring(std::uint64_t n) { return n > 1 ? double(n - 1) / double(n) : 0; }

// Data-parallel gradients and parameters per optimizer step: DDP all-reduces the gradients once (no_sync between
// micro-batches); ZeRO-1/2 reduce-scatter them and all-gather the updated 16-bit parameters; ZeRO-3 and FSDP
// FULL_SHARD all-gather the parameters in every micro-batch's forward and backward and reduce-scatter the
// gradients (Rajbhandari et al. 2020, ZeRO §7: 3Ψ against DDP's 2Ψ), in every micro-batch's backward where the
// stack does not accumulate them unsharded (frameworks.cpp).
double data_parallel_seconds(const Step& c) {
    const std::uint64_t n = data_parallel(c);
    if (n < 2) return 0;
    const double bw = link_bytes_per_s(c, n, c.tp * c.pp);
    const double e = c.compute_element;
    const double trainable = trainable_stage_params(c), params = stage_params(c);
    const bool every_micro_batch = fsdp_units(c) && !accumulates_unsharded(c);
    const double grad = trainable * e * (every_micro_batch ? double(c.grad_accum) : 1);
    if (gathers_per_unit(c)) return (2 * double(c.grad_accum) * params * e + grad) * ring(n) / bw;
    if (c.zero >= traits(c).zero_collectives_from) return (grad + trainable * e) * ring(n) / bw;
    return 2 * grad * ring(n) / bw;
}

// Tensor parallelism: two all-reduces of the layer's activations in forward and two in backward (Megatron-LM,
// Shoeybi et al. 2019 §3; with sequence parallelism all-gathers and reduce-scatters of the same volume,
// Korthikanti et al. 2022 §4.2.2), not overlapped with compute.
double tensor_parallel_seconds(const Step& c) {
    if (c.tp < 2) return 0;
    const double bytes = c.tokens * double(c.model.hidden) * c.compute_element;
    const double per_layer = 4 * 2 * bytes * ring(c.tp);
    const double layers = double(layers_on_stage(c));
    return double(c.grad_accum) * per_layer * layers / link_bytes_per_s(c, c.tp, 1);
}

// The optimizer step streams each trainable parameter's weight, gradient and states in and the weight and
// states out (memory-bound: HBM bandwidth).
double optimizer_step_seconds(const Step& c, double states_per_param) {
    if (c.offload != Offload::none || c.gpu.bandwidth_gbps <= 0) return 0;
    const double shard = c.zero >= traits(c).zero_collectives_from ? double(data_parallel(c)) : 1;
    const double w = c.compute_element, master = mixed(c) ? 4 : 0;
    const double bytes = trainable_stage_params(c) / shard * (2 * (w + master + states_per_param) + w);
    return bytes / (c.gpu.bandwidth_gbps * kGiga);
}

// ZeRO-Offload (Ren et al. 2021 §4.1): the 16-bit gradients go to the CPU and the updated parameters come back
// over PCIe every step; with the parameters offloaded too (ZeRO-Infinity, FSDP CPU offload) every micro-batch's
// forward and backward bring each parameter shard over again. (The CPU's Adam itself is not timed.)
double offload_seconds(const Step& c) {
    if (c.offload == Offload::none || c.gpu.pcie_gbps <= 0) return 0;
    const double shard = double(data_parallel(c)), e = c.compute_element;
    double bytes = 2 * trainable_stage_params(c) / shard * e;
    if (c.offload == Offload::optimizer_and_params) bytes += 2 * double(c.grad_accum) * stage_params(c) / shard * e;
    return bytes / (c.gpu.pcie_gbps * kGiga);
}

double states_per_param(const Step& c) {
    switch (c.optimizer) {
        case Optimizer::adamw:
        case Optimizer::paged_adamw: return 8;
        case Optimizer::adamw_8bit:
        case Optimizer::paged_adamw_8bit: return 2;
        case Optimizer::lion:
        case Optimizer::sgd_momentum: return 4;
        case Optimizer::adafactor: return 0.1;
        case Optimizer::sgd: return 0;
    }
    return 8;
}

}  // namespace

StepTime estimate_step_time(const Step& c) {
    StepTime t;
    const double peak = peak_flops(c);
    t.model_flops_per_token = token_flops(c, false).total();
    if (c.method != TrainingMethod::sft) {
        t.unknown_reason = "not timed under TRL's trainers: generation, scoring and the reference passes have no time model yet";
        return t;
    }
    if (peak <= 0) {
        t.unknown_reason = "no dense peak FLOP/s known for this GPU in this precision";
        return t;
    }
    t.known = true;
    t.lower_bound = c.offload != Offload::none || c.activation_offload;
    // One GPU's seconds of compute for its tokens (cp splits them; tp and pp split each token's FLOPs).
    const TokenFlops f = token_flops(c, true);
    t.executed_flops_per_token = f.total();
    // Per micro-batch on one GPU: its tokens (cp splits them) times each token's FLOPs (tp and pp split them).
    const double m = double(c.grad_accum);
    const double flops_scale = c.tokens / double(c.tp * c.pp);
    const double matmul_rate = peak * kMatmulFraction, attention_rate = peak * attention_fraction(c);
    const double float8_rate = 2 * peak * kFloat8MatmulFraction;
    const double bandwidth = c.gpu.bandwidth_gbps * kGiga * kBandwidthFraction;
    auto seconds = [&](double flops, double attention, double bytes, double float8) {
        const double mm = flops_scale * ((flops - attention - float8) / matmul_rate + float8 / float8_rate);
        const double at = flops_scale * attention / attention_rate;
        const double mem = bandwidth > 0 ? bytes / bandwidth : 0;
        t.matmul += m * mm, t.attention += m * at, t.memory += m * mem;
        return mm + at + mem;
    };
    const double traffic = layer_traffic_bytes(c), logits = logits_forward_peak_bytes(c);
    const double recomputed = c.checkpointing == Checkpointing::full ? traffic / double(c.checkpoint_every) : 0;
    t.forward = m * seconds(f.layers_forward, f.attention_forward, traffic, f.float8_forward);
    t.loss = m * seconds(f.head_forward, 0, 3 * logits, 0);
    t.backward = m * seconds(f.backward + f.recompute, f.attention_backward + f.attention_recompute, 2 * traffic + recomputed,
                             f.float8_backward + f.float8_recompute);
    const double compute = t.compute = t.forward + t.loss + t.backward;
    // The pipeline bubble: (p-1)/(v·m) of the ideal time (Narayanan et al. 2021 §2.2).
    if (c.pp > 1)
        t.pipeline_bubble = compute * double(c.pp - 1) / (double(c.pp_stages_per_rank) * double(c.grad_accum));
    // DDP's buckets and FSDP's/ZeRO's prefetches overlap the data-parallel traffic with the compute; what exceeds
    // it stays exposed. Tensor-parallel collectives sit on the critical path.
    t.data_parallel = data_parallel_seconds(c), t.tensor_parallel = tensor_parallel_seconds(c);
    t.exposed_communication = std::max(0.0, t.data_parallel - compute) + t.tensor_parallel;
    t.backward += t.pipeline_bubble + t.exposed_communication;
    t.offload = offload_seconds(c);
    t.optimizer_step = optimizer_step_seconds(c, states_per_param(c)) + t.offload;
    t.step = t.forward + t.loss + t.backward + t.optimizer_step;
    // Sequences in flight: data-parallel replicas (context-parallel ranks share one sequence).
    const double replicas = double(data_parallel(c)) / double(c.cp);
    t.tokens_per_s = double(c.micro_batch) * double(c.seq_len) * double(c.grad_accum) * replicas / t.step;
    t.tokens_per_s_per_gpu = t.tokens_per_s / double(c.gpus);
    t.mfu = t.tokens_per_s_per_gpu * t.model_flops_per_token / peak;
    return t;
}

RunCost estimate_run_cost(const Config& c, const StepTime& t) {
    RunCost r;
    const double tokens = c.train_tokens > 0 ? c.train_tokens : c.epochs * c.dataset_tokens;
    r.has_tokens = tokens > 0 && t.known;
    r.has_price = c.price_per_gpu_hour > 0;
    if (!r.has_tokens) return r;
    r.hours = tokens / t.tokens_per_s / 3600;
    r.gpu_hours = r.hours * double(c.gpus);
    r.cost = r.gpu_hours * c.price_per_gpu_hour;
    return r;
}

}  // namespace vramcalc
