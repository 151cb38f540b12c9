#include "memory_terms.hpp"

#include <algorithm>
#include <cmath>

namespace vramcalc {

namespace {

bool mixed(const Config& c) { return c.precision == Precision::bf16_mixed || c.precision == Precision::fp16_mixed; }
bool half_model(const Config& c) { return c.strategy == Strategy::deepspeed || c.strategy == Strategy::megatron; }
bool autocast(const Config& c) { return mixed(c) && !half_model(c); }
bool lora_like(const Config& c) { return c.finetune.method != FinetuneMethod::full; }
bool deepspeed(const Config& c, int min_stage) { return c.strategy == Strategy::deepspeed && c.zero >= min_stage; }
bool fsdp(const Config& c, int min_stage) { return c.strategy == Strategy::fsdp && c.zero >= min_stage; }
bool offloaded(const Config& c) { return c.offload != Offload::none; }
double dp(const Config& c) { return double(data_parallel(c)); }
double tokens(const Config& c) { return double(c.micro_batch) * double(c.seq_len); }
// GPT-2 is the family with learned positions: a fused c_attn, gelu_new, softmax in the model's dtype.
bool gpt2_family(const Config& c) { return c.model.position == Position::learned; }
// Share of the whole model's parameters that sit on the busiest GPU (before ZeRO/FSDP sharding).
double stage_share(const Config& c) { return stage_params(c) / double(total_params(c.model)); }

// Elements of the trainable tensors, and their optimizer-state element size.
std::vector<Tensor> trainable_tensors(const Config& c) {
    if (lora_like(c)) return lora_tensors(c.model, c.finetune.rank, c.finetune.targets);
    return parameter_tensors(c.model);
}

double state_element_bytes(const Config& c) {
    // torch.optim creates states with zeros_like(param); with master weights they follow the fp32 copy.
    return has_master_weights(c) || weight_element_bytes(c) == 4 || (lora_like(c) && mixed(c)) ? 4 : 2;
}

double largest_trainable_tensor(const Config& c) {
    double m = 0;
    for (const Tensor& t : trainable_tensors(c)) m = std::max(m, double(t.numel()));
    return m;
}

// Bytes per parameter of a QLoRA NF4 weight: 4 bits, an 8-bit absmax per 64-weight block and an fp32
// constant per 256 absmax values (Dettmers et al. 2023, QLoRA §2 "Double Quantization").
constexpr double kNf4BytesPerParam = 0.5 + 1.0 / 64 + 4.0 / (64 * 256);

}  // namespace

double weight_element_bytes(const Config& c) {
    if (c.precision == Precision::fp32_true) return 4;
    if (mixed(c)) return half_model(c) ? 2 : 4;  // autocast keeps fp32 weights; DeepSpeed/Megatron keep 16-bit
    return 2;
}

double gradient_element_bytes(const Config& c) {
    if (c.strategy == Strategy::megatron && mixed(c)) return 4;  // main_grad buffers in fp32 (Megatron DDP)
    return weight_element_bytes(c);                              // .grad has its parameter's dtype
}

double compute_element_bytes(const Config& c) { return c.precision == Precision::fp32_true ? 4 : 2; }

double residual_element_bytes(const Config& c) { return autocast(c) ? 4 : compute_element_bytes(c); }

bool has_master_weights(const Config& c) { return mixed(c) && half_model(c); }

std::uint64_t layers_on_stage(const Config& c) { return (c.model.layers + c.pp - 1) / c.pp; }

// 1F1B keeps up to pp micro-batches in flight on the first stage (Narayanan et al. 2021, §2.2).
std::uint64_t micro_batches_in_flight(const Config& c) { return std::min<std::uint64_t>(c.pp, c.grad_accum); }

// Megatron-LM theoretical_memory_usage.py: the first stage holds the embedding and layers/pp; tp splits both.
double stage_params(const Config& c) {
    const Architecture& a = c.model;
    double n = double(embedding_params(a)) + double(layers_on_stage(c)) * double(layer_params(a));
    if (c.pp == 1) n += double(norm_params(a) + lm_head_params(a));
    return n / double(c.tp);
}

bool trains_all_weights(const Config& c) { return !lora_like(c); }

double trainable_stage_params(const Config& c) {
    if (!lora_like(c)) return stage_params(c);
    return double(lora_params(c.model, c.finetune.rank, c.finetune.targets)) * stage_share(c);
}

// ---- Model states (Rajbhandari et al. 2020, ZeRO §3: 2Ψ weights + 2Ψ gradients + 12Ψ optimizer) ----

double weights_bytes(const Config& c) {
    if (c.offload == Offload::optimizer_and_params) return 0;  // on the CPU; gathered layers are temporaries
    const double wb = weight_element_bytes(c);
    double bytes;
    if (c.finetune.method == FinetuneMethod::qlora) {
        // bitsandbytes quantizes the layers' linear weights; prepare_model_for_kbit_training (PEFT) keeps
        // the rest (embeddings, norms, lm_head) in fp32 under mixed precision.
        const double linear = double(linear_weight_params(c.model)) * stage_share(c);
        const double other = stage_params(c) - linear;
        bytes = linear * kNf4BytesPerParam + other * (mixed(c) ? 4 : compute_element_bytes(c)) +
                trainable_stage_params(c) * wb;
    } else {
        bytes = stage_params(c) * wb + (lora_like(c) ? trainable_stage_params(c) * wb : 0);
    }
    if (deepspeed(c, 3) || fsdp(c, 2)) bytes /= dp(c);
    // FSDP SHARD_GRAD_OP keeps the unsharded compute-dtype parameters from forward to backward.
    if (c.strategy == Strategy::fsdp && c.zero == 2) bytes += stage_params(c) * compute_element_bytes(c);
    return bytes;
}

double gradients_bytes(const Config& c) {
    const double n = trainable_stage_params(c);
    if (c.strategy == Strategy::fsdp && offloaded(c)) return 0;  // reduce-scattered, then copied to the CPU
    double bytes = n * gradient_element_bytes(c);
    if (deepspeed(c, 2) || fsdp(c, 2)) bytes /= dp(c);
    if (deepspeed(c, 2) && offloaded(c)) bytes = 0;  // reduced through buckets straight to the CPU
    // DeepSpeed builds an fp32 gradient for its fp32 master partition before each step: the 16 bytes it
    // counts per sharded parameter (estimate_zero2_model_states_mem_needs, stage_1_and_2.py).
    if (has_master_weights(c) && c.strategy == Strategy::deepspeed && !offloaded(c))
        bytes += n * 4 / (c.zero >= 1 ? dp(c) : 1);
    return bytes;
}

double master_weights_bytes(const Config& c) {
    if (!has_master_weights(c) || offloaded(c)) return 0;
    const double n = trainable_stage_params(c) * 4;
    // ZeRO-1+ and Megatron's distributed optimizer shard the fp32 copy with the optimizer states.
    return (deepspeed(c, 1) || (c.strategy == Strategy::megatron && c.zero == 1)) ? n / dp(c) : n;
}

double optimizer_states_unsharded_bytes(const Config& c) {
    const double sb = state_element_bytes(c);
    double bytes = 0;
    for (const Tensor& t : trainable_tensors(c)) {
        const double n = double(t.numel()), k = double(t.count);
        switch (c.optimizer) {
            case Optimizer::adamw: bytes += k * 2 * n * sb; break;  // exp_avg, exp_avg_sq
            case Optimizer::adamw_8bit:
                // bitsandbytes: 8-bit states with an fp32 absmax per 256-element block; tensors under
                // 4096 elements keep fp32 states (optim/optimizer.py, min_8bit_size).
                bytes += k * (n < 4096 ? 2 * n * 4 : 2 * (n + 4 * std::ceil(n / 256)));
                break;
            case Optimizer::adafactor:
                // Shazeer & Stern 2018: factored second moment, a row and a column vector per matrix.
                bytes += k * (t.cols > 1 ? double(t.rows + t.cols) : n) * sb;
                break;
            case Optimizer::lion:          // Chen et al. 2023: one momentum
            case Optimizer::sgd_momentum:  // momentum_buffer
                bytes += k * n * sb;
                break;
            case Optimizer::sgd: break;
        }
    }
    return bytes;
}

double optimizer_states_bytes(const Config& c) {
    if (offloaded(c)) return 0;
    const double bytes = optimizer_states_unsharded_bytes(c) * stage_share(c);
    const bool sharded = deepspeed(c, 1) || fsdp(c, 2) || (c.strategy == Strategy::megatron && c.zero == 1);
    return sharded ? bytes / dp(c) : bytes;
}

// ---- Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation", §4 and Table 2) ----
// Megatron's own layers follow the paper; other strategies run Hugging Face modeling code, whose eager
// path saves more (fp32 softmax, RMSNorm's fp32 upcast, autocast's per-projection input casts).

namespace {

double dropout_mask_element_bytes(const Config& c) {
    // CUDA's fused dropout keeps a bool mask; PyTorch's CPU dropout keeps a noise tensor in the input dtype.
    return c.device == Device::cpu ? compute_element_bytes(c) : 1;
}

bool has_dropout(const Config& c) { return c.model.dropout > 0; }

double attention_scores_elements(const Config& c) {
    return double(c.micro_batch) * double(c.model.heads) * double(c.seq_len) * double(c.seq_len);
}

double megatron_layer_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double t = double(c.tp), sbh = tokens(c) * double(a.hidden);
    const double q = double(a.heads * head_dim(a)), kv = double(a.kv_heads * head_dim(a));
    const double f = double(a.ffn) * double(a.experts_per_token);
    const double replicated = c.sequence_parallel ? 1 / t : 1;  // LN, dropout and block inputs
    const double e = 2;
    double split = e * tokens(c) * (q + 2 * kv) + e * tokens(c) * q;  // Q, K, V and the projection input
    split += gated(a) ? 3 * e * tokens(c) * f : 2 * e * tokens(c) * f;
    double s2 = 0;
    if (c.attention == Attention::eager && c.checkpointing == Checkpointing::none)
        s2 = attention_scores_elements(c) * (e + (has_dropout(c) ? 1 + e : 0));
    else if (c.attention == Attention::flash)
        s2 = 4 * double(c.micro_batch) * double(a.heads) * double(c.seq_len);  // softmax log-sum-exp
    double rep = 2 * e * sbh + e * sbh + e * sbh;  // two LN inputs, QKV input, MLP input
    if (has_dropout(c)) rep += 2 * sbh;            // two 1-byte dropout masks
    return (split + s2) / t + rep * replicated;
}

}  // namespace

double norm_activation_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double nh = tokens(c) * double(a.hidden), x = residual_element_bytes(c), e = compute_element_bytes(c);
    double per_norm;
    if (a.norm == Norm::rmsnorm)
        per_norm = 4 * nh + x * nh + 4 * tokens(c);  // fp32 input, normalised input, rsqrt (modeling_llama.py)
    else
        per_norm = x * nh + 8 * tokens(c);  // input, mean and rstd (native_layer_norm)
    // What the projections after each norm save of its output: one shared tensor, or under autocast
    // one 16-bit cast per projection (autocast caches casts of leaf weights only).
    const double attn_inputs = gpt2_family(c) ? 1 : 3, mlp_inputs = gated(a) ? 2 : 1;
    const double inputs = autocast(c) ? e * nh * (attn_inputs + mlp_inputs) : 2 * x * nh;
    return double(a.norms_per_layer) * per_norm + inputs;
}

double attention_activation_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double n = tokens(c), e = compute_element_bytes(c);
    const double q = double(a.heads * head_dim(a)), kv = double(a.kv_heads * head_dim(a));
    if (c.attention == Attention::flash) {
        // q, k, v, the output (also o_proj's input) and the fp32 log-sum-exp (Dao 2023, FlashAttention-2).
        return e * n * (2 * q + 2 * kv) + 4 * double(c.micro_batch) * double(a.heads) * double(c.seq_len);
    }
    // Eager: repeat_kv materialises k and v at full head count when kv_heads < heads.
    const double kv_saved = a.kv_heads < a.heads ? q : kv;
    double bytes = e * n * (q + 2 * kv_saved) + e * n * q;  // q, k, v for the matmuls; o_proj's input
    if (c.checkpointing != Checkpointing::selective) {
        const double s2 = attention_scores_elements(c);
        const bool fp32_softmax = !gpt2_family(c) || autocast(c);
        bytes += s2 * (fp32_softmax ? 4 + (e < 4 ? e : 0) : e);
        if (has_dropout(c)) bytes += s2 * (dropout_mask_element_bytes(c) + e);
    }
    if (has_dropout(c)) bytes += n * double(a.hidden) * dropout_mask_element_bytes(c);  // resid_dropout
    return bytes;
}

double mlp_activation_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double nf = tokens(c) * double(a.ffn) * double(a.experts_per_token), e = compute_element_bytes(c);
    double bytes;
    if (gated(a))
        bytes = 4 * e * nf;  // gate, act(gate), up, act(gate)*up
    else if (gpt2_family(c))
        bytes = 5 * e * nf;  // gelu_new in Python: x, tanh(...), 0.5*x, 1+tanh(...), output
    else
        bytes = 2 * e * nf;  // F.gelu: input, output
    if (has_dropout(c)) bytes += tokens(c) * double(a.hidden) * dropout_mask_element_bytes(c);
    return bytes;
}

double layer_activation_bytes(const Config& c) {
    if (c.checkpointing == Checkpointing::full)
        return tokens(c) * double(c.model.hidden) * residual_element_bytes(c) /
               (c.sequence_parallel ? double(c.tp) : 1);  // the layer's input only
    if (c.strategy == Strategy::megatron) return megatron_layer_bytes(c);
    return norm_activation_bytes(c) + attention_activation_bytes(c) + mlp_activation_bytes(c);
}

double activations_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double nh = tokens(c) * double(a.hidden);
    double bytes = double(layers_on_stage(c)) * layer_activation_bytes(c);
    if (has_dropout(c)) bytes += nh * dropout_mask_element_bytes(c);  // embedding dropout
    if (c.pp == 1) {
        // Final norm and lm_head's input.
        const double x = residual_element_bytes(c), e = compute_element_bytes(c);
        bytes += (a.norm == Norm::rmsnorm ? 4 * nh + x * nh : x * nh) + (autocast(c) ? e : x) * nh;
    }
    return bytes * double(micro_batches_in_flight(c));
}

// transformers' ForCausalLMLoss: logits.float(), log_softmax saved for backward; at log_softmax's
// backward the saved output, the incoming gradient and the result are all live in fp32.
double logits_backward_peak_bytes(const Config& c) {
    if (c.pp > 1 && micro_batches_in_flight(c) > 1) return 0;  // the first stage holds no logits
    const double nv = tokens(c) * double(c.model.vocab) / double(c.tp);
    return 3 * 4 * nv;
}

// Eager softmax backward: the gradient of the probabilities and its fp32 result over one layer's scores.
double attention_backward_transient_bytes(const Config& c) {
    if (c.attention == Attention::flash) return 0;
    return attention_scores_elements(c) * (compute_element_bytes(c) + 4) / double(c.tp);
}

// ---- Transient and fixed costs ----

// torch.autocast caches the 16-bit casts of leaf weights that need grad until the forward's autocast
// region ends; the linears save them for backward (torch/csrc/autograd and aten/src/ATen/autocast_mode.cpp).
double autocast_weight_copy_bytes(const Config& c) {
    if (!autocast(c)) return 0;
    const double linear = double(linear_weight_params(c.model)) * stage_share(c) +
                          double(c.model.vocab * c.model.hidden) / double(c.tp);  // + lm_head
    double bytes = linear * compute_element_bytes(c);
    if (c.finetune.method == FinetuneMethod::qlora) bytes = double(c.model.vocab * c.model.hidden) * 2;
    if (deepspeed(c, 3) || fsdp(c, 2)) return 0;  // FSDP casts per unit (see gathered_parameter_bytes)
    return bytes;
}

double optimizer_step_temporary_bytes(const Config& c) {
    if (c.offload != Offload::none) return 0;  // the step runs on the CPU
    const double sb = state_element_bytes(c);
    // DeepSpeed and Megatron step their flat fp32 partitions with fused multi-tensor kernels.
    if (half_model(c) && c.optimizer == Optimizer::adamw) return 0;
    const bool flat = c.strategy == Strategy::fsdp;  // FSDP steps one flat parameter per unit
    double shard = optimizer_states_bytes(c) > 0 ? trainable_stage_params(c) : 0;
    if (deepspeed(c, 1) || fsdp(c, 2)) shard /= dp(c);
    const double largest = flat ? double(layer_params(c.model)) / (c.zero >= 2 ? dp(c) : 1) : largest_trainable_tensor(c);
    switch (c.optimizer) {
        case Optimizer::adamw:
            if (c.optimizer_impl == OptimizerImpl::fused) return 0;
            if (c.optimizer_impl == OptimizerImpl::single_tensor) return 2 * largest * sb;  // sqrt, then / bc2
            // _multi_tensor_adamw: 1.13 keeps sqrt(v) and sqrt(v)+eps as two lists; 2.x adds eps in place.
            return (c.torch == TorchVersion::v1_13 ? 2 : 1) * shard * sb;
        case Optimizer::lion: return 2 * largest * sb;        // exp_avg.clone() and the interpolation
        case Optimizer::adafactor: return 3 * largest * 4;    // grad^2, the row/col approximation, update
        case Optimizer::adamw_8bit:                           // fused blockwise kernel
        case Optimizer::sgd:
        case Optimizer::sgd_momentum: return 0;
    }
    return 0;
}

double communication_buffer_bytes(const Config& c) {
    const double n = trainable_stage_params(c);
    switch (c.strategy) {
        case Strategy::ddp:
            // DDP's Reducer copies gradients into flat buckets covering every parameter
            // (torch/csrc/distributed/c10d/reducer.cpp, gradient_as_bucket_view=False).
            return c.gpus > 1 ? n * gradient_element_bytes(c) : 0;
        case Strategy::deepspeed:
            // reduce_bucket_size defaults to 5e8 elements (deepspeed/runtime/zero/config.py).
            return c.zero >= 1 ? std::min(5e8, n) * weight_element_bytes(c) : 0;
        case Strategy::fsdp:
            // Reduce-scatter input: one unit's unsharded gradients.
            return c.zero >= 2 ? double(layer_params(c.model)) * gradient_element_bytes(c) : 0;
        default: return 0;
    }
}

double gathered_parameter_bytes(const Config& c) {
    if (!(deepspeed(c, 3) || fsdp(c, 3))) return 0;
    const double unit = double(layer_params(c.model)) * compute_element_bytes(c);
    // The layer being computed and the one prefetched; DeepSpeed's estimator counts 4 bytes x the
    // largest layer (estimate_zero3_model_states_mem_needs, stage3.py).
    return 2 * unit;
}

// PyTorch's default cuBLAS workspace: 32 MiB on sm90, else 4096 KiB x 2 + 16 KiB x 8
// (aten/src/ATen/cuda/CublasHandlePool.cpp); taken from the caching allocator.
double cublas_workspace_bytes(const Config& c) {
    if (c.device == Device::cpu) return 0;
    const bool sm90 = c.gpu.id.rfind("h100", 0) == 0 || c.gpu.id == "h200";
    return sm90 ? 32.0 * 1024 * 1024 : 4096.0 * 1024 * 2 + 16.0 * 1024 * 8;
}

// The CUDA context (driver, kernels loaded lazily, cuBLAS/cuDNN handles) lives outside the caching
// allocator: nvidia-smi shows it, max_memory_allocated does not. An allowance until measured per GPU.
double cuda_context_bytes(const Config& c) { return c.device == Device::cpu ? 0 : 512.0 * 1024 * 1024; }

// Reserved minus allocated: the caching allocator rounds blocks (512 B, 2 MiB for requests over 1 MiB)
// and keeps freed blocks cached; an allowance of 5% of the peak, not derived.
double allocator_overhead_bytes(const Config& c, double peak_allocated) {
    return c.device == Device::cpu ? 0 : 0.05 * peak_allocated;
}

// DeepSpeed's estimators (stage_1_and_2.py / stage3.py) size offload RAM with a 1.5x buffer factor.
double cpu_offload_bytes(const Config& c) {
    if (!offloaded(c)) return 0;
    const double trainable = lora_like(c) ? double(lora_params(c.model, c.finetune.rank, c.finetune.targets))
                                          : double(total_params(c.model));
    double bytes = trainable * (4 + 4) + optimizer_states_unsharded_bytes(c);  // fp32 master and gradients, states
    if (c.offload == Offload::optimizer_and_params) bytes += double(total_params(c.model)) * weight_element_bytes(c);
    return bytes * 1.5;
}

}  // namespace vramcalc
