#include "memory_terms.hpp"

#include <algorithm>
#include <cmath>

namespace vramcalc {

namespace {

bool mixed(const Config& c) { return c.precision == Precision::bf16_mixed || c.precision == Precision::fp16_mixed; }
bool half_model(const Config& c) { return c.strategy == Strategy::deepspeed || c.strategy == Strategy::megatron; }
// torch.autocast over fp32 weights; FSDP's MixedPrecision instead runs the gathered 16-bit parameters.
bool autocast(const Config& c) { return mixed(c) && !half_model(c) && c.strategy != Strategy::fsdp; }
bool deepspeed(const Config& c, int min_stage) { return c.strategy == Strategy::deepspeed && c.zero >= min_stage; }
bool fsdp(const Config& c, int min_stage) { return c.strategy == Strategy::fsdp && c.zero >= min_stage; }
bool offloaded(const Config& c) { return c.offload != Offload::none; }
double dp(const Config& c) { return double(data_parallel(c)); }
double tokens(const Config& c) { return double(c.micro_batch) * double(c.seq_len); }
// GPT-2's layout: a fused c_attn, gelu_new, softmax in the model's dtype.
bool gpt2_family(const Config& c) { return gpt2_layout(c.model); }
// Layers of the busiest GPU's pipeline stage over all layers: what scales per-layer tensors.
double layer_share(const Config& c) { return double(layers_on_stage(c)) / double(c.model.layers); }

// The trainable tensors of the estimated pipeline stage, each split tp ways. Tensors outside the layers
// come first (embeddings) or last (final norm, lm_head) in parameter_tensors' module order.
std::vector<Tensor> trainable_tensors(const Config& c) {
    const std::vector<Tensor> all = trains_all_weights(c) ? parameter_tensors(c.model)
                                                          : lora_tensors(c.model, c.finetune.rank, c.finetune.targets);
    std::vector<Tensor> stage;
    bool after_layers = false;
    for (Tensor t : all) {
        if (t.in_layers) {
            t.count = t.count / c.model.layers * layers_on_stage(c);
            after_layers = true;
        } else if (!(after_layers ? holds_head(c) : holds_embedding(c))) {
            continue;
        }
        t.rows = (t.rows + c.tp - 1) / c.tp;
        stage.push_back(t);
    }
    return stage;
}

// PEFT keeps LoRA adapters in fp32 whatever the base model's dtype (autocast_adapter_dtype); DeepSpeed and
// Megatron cast the whole module to 16-bit and keep fp32 master weights instead.
double trainable_element_bytes(const Config& c) {
    return !trains_all_weights(c) && !half_model(c) ? 4 : weight_element_bytes(c);
}

double state_element_bytes(const Config& c) {
    // torch.optim creates states with zeros_like(param); with master weights they follow the fp32 copy.
    return has_master_weights(c) || trainable_element_bytes(c) == 4 ? 4 : 2;
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
    return trainable_element_bytes(c);                           // .grad has its parameter's dtype
}

double compute_element_bytes(const Config& c) { return c.precision == Precision::fp32_true ? 4 : 2; }

double residual_element_bytes(const Config& c) { return autocast(c) ? 4 : compute_element_bytes(c); }

bool has_master_weights(const Config& c) { return mixed(c) && half_model(c); }

std::uint64_t layers_on_stage(const Config& c) { return (c.model.layers + c.pp - 1) / c.pp; }
bool holds_embedding(const Config& c) { return c.pp == 1 || c.stage == PipelineStage::first; }
bool holds_head(const Config& c) { return c.pp == 1 || c.stage == PipelineStage::last; }

// 1F1B keeps up to pp micro-batches in flight on the first stage, one on the last (Narayanan et al. 2021, §2.2).
std::uint64_t micro_batches_in_flight(const Config& c) {
    return c.stage == PipelineStage::last ? 1 : std::min<std::uint64_t>(c.pp, c.grad_accum);
}

// Megatron-LM theoretical_memory_usage.py: the first stage holds the embedding and layers/pp; tp splits all.
double stage_params(const Config& c) {
    const Architecture& a = c.model;
    double n = double(layers_on_stage(c)) * double(layer_params(a));
    if (holds_embedding(c)) n += double(embedding_params(a));
    if (holds_head(c)) n += double(norm_params(a) + lm_head_params(a));
    return n / double(c.tp);
}

bool trains_all_weights(const Config& c) { return c.finetune.method == FinetuneMethod::full; }

double trainable_stage_params(const Config& c) {
    if (trains_all_weights(c)) return stage_params(c);
    double n = 0;
    for (const Tensor& t : trainable_tensors(c)) n += double(t.numel()) * double(t.count);
    return n;
}

// ---- Model states (Rajbhandari et al. 2020, ZeRO §3: 2Ψ weights + 2Ψ gradients + 12Ψ optimizer) ----

double weights_bytes(const Config& c) {
    if (c.offload == Offload::optimizer_and_params) return 0;  // on the CPU; gathered layers are temporaries
    const double wb = weight_element_bytes(c);
    double bytes;
    if (c.finetune.method == FinetuneMethod::qlora) {
        // bitsandbytes quantizes the layers' linear weights; prepare_model_for_kbit_training (PEFT) keeps
        // the rest (embeddings, norms, lm_head) in fp32 under mixed precision.
        const double linear = double(linear_weight_params(c.model)) * layer_share(c) / double(c.tp);
        const double other = stage_params(c) - linear;
        bytes = linear * kNf4BytesPerParam + other * (mixed(c) ? 4 : compute_element_bytes(c)) +
                trainable_stage_params(c) * trainable_element_bytes(c);
    } else {
        bytes = stage_params(c) * wb + (!trains_all_weights(c) ? trainable_stage_params(c) * trainable_element_bytes(c) : 0);
    }
    if (deepspeed(c, 3) || fsdp(c, 2)) bytes /= dp(c);
    return bytes;
}

double gradients_bytes(const Config& c) {
    const double n = trainable_stage_params(c);
    if (c.strategy == Strategy::fsdp && offloaded(c)) return 0;  // reduce-scattered, then copied to the CPU
    double bytes = n * gradient_element_bytes(c);
    if (deepspeed(c, 2) || fsdp(c, 2)) bytes /= dp(c);
    if (deepspeed(c, 2) && offloaded(c)) bytes = 0;  // reduced through buckets straight to the CPU
    return bytes;
}

// DeepSpeed builds an fp32 gradient for its fp32 master partition inside step() and drops it after
// ("get rid of the fp32 gradients", stage_1_and_2.py); its estimator counts it in the 16 bytes per sharded
// parameter (estimate_zero2_model_states_mem_needs).
double fp32_gradient_partition_bytes(const Config& c) {
    if (!has_master_weights(c) || c.strategy != Strategy::deepspeed || offloaded(c)) return 0;
    return trainable_stage_params(c) * 4 / (c.zero >= 1 ? dp(c) : 1);
}

// Megatron allocates its gradient buffer with the model, DeepSpeed its gradient partitions with the engine;
// plain PyTorch creates .grad in backward and frees it at zero_grad(set_to_none=True).
bool gradients_allocated_up_front(const Config& c) { return half_model(c); }

double master_weights_bytes(const Config& c) {
    if (!has_master_weights(c) || offloaded(c)) return 0;
    const double n = trainable_stage_params(c) * 4;
    // ZeRO-1+ and Megatron's distributed optimizer shard the fp32 copy with the optimizer states.
    return (deepspeed(c, 1) || (c.strategy == Strategy::megatron && c.zero == 1)) ? n / dp(c) : n;
}

double optimizer_states_stage_bytes(const Config& c) {
    const double sb = state_element_bytes(c);
    // Element-wise states need no tensor list (estimates run in a loop: keep them allocation-free).
    switch (c.optimizer) {
        case Optimizer::adamw: return 2 * trainable_stage_params(c) * sb;  // exp_avg, exp_avg_sq
        case Optimizer::lion:                                              // Chen et al. 2023: one momentum
        case Optimizer::sgd_momentum: return trainable_stage_params(c) * sb;  // momentum_buffer
        case Optimizer::sgd: return 0;
        case Optimizer::adamw_8bit:
        case Optimizer::adafactor: break;
    }
    double bytes = 0;
    for (const Tensor& t : trainable_tensors(c)) {
        const double n = double(t.numel()), k = double(t.count);
        if (c.optimizer == Optimizer::adamw_8bit)
            // bitsandbytes: 8-bit states with an fp32 absmax per 256-element block; tensors under
            // 4096 elements keep fp32 states (optim/optimizer.py, min_8bit_size).
            bytes += k * (n < 4096 ? 2 * n * 4 : 2 * (n + 4 * std::ceil(n / 256)));
        else  // Shazeer & Stern 2018 (Adafactor): factored second moment, a row and a column vector per matrix
            bytes += k * (t.cols > 1 ? double(t.rows + t.cols) : n) * sb;
    }
    return bytes;
}

double optimizer_states_bytes(const Config& c) {
    if (offloaded(c)) return 0;
    const double bytes = optimizer_states_stage_bytes(c);
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

// Which saved tensors exist depends on what needs a gradient: a frozen projection (LoRA) keeps no input
// for its weight gradient, a frozen norm weight no normalised input.
bool targeted(const Config& c, std::initializer_list<const char*> names) {
    if (trains_all_weights(c)) return true;
    for (const std::string& t : c.finetune.targets) {
        if (t == "all-linear") return true;
        for (const char* n : names)
            if (t == n) return true;
    }
    return false;
}
bool attention_inputs_saved(const Config& c) { return targeted(c, {"q_proj", "k_proj", "v_proj", "c_attn"}); }
bool mlp_inputs_saved(const Config& c) { return targeted(c, {"gate_proj", "up_proj", "c_fc"}); }
bool out_proj_input_saved(const Config& c) { return targeted(c, {"o_proj", "c_proj"}); }
bool down_proj_input_saved(const Config& c) { return targeted(c, {"down_proj", "c_proj"}); }

// One norm's own saved tensors (its input, statistics, and normalised input when its weight trains).
double single_norm_bytes(const Config& c) {
    const double nh = tokens(c) * double(c.model.hidden), x = residual_element_bytes(c);
    if (c.model.norm == Norm::layernorm)  // native_layer_norm: input, mean, rstd
        return x * nh + 2 * tokens(c) * (c.precision == Precision::bf16_true || c.precision == Precision::fp16_true ? 2 : 4);
    // modeling_llama.py LlamaRMSNorm: fp32 input (or its fp32 copy), rsqrt, and x*rsqrt cast back
    // for the weight multiply. Torch 1.13's MeanBackward also keeps the fp32 pow(2) output.
    double bytes = 4 * nh + 4 * tokens(c);
    if (c.torch == TorchVersion::v1_13) bytes += 4 * nh;
    if (trains_all_weights(c)) bytes += x * nh;
    return bytes;
}

// A norm's output as its projections save it: one shared tensor, or under autocast one 16-bit cast
// per projection (autocast caches casts of leaf weights only).
double norm_output_bytes(const Config& c, double projections) {
    const double nh = tokens(c) * double(c.model.hidden);
    return autocast(c) ? compute_element_bytes(c) * nh * projections : residual_element_bytes(c) * nh;
}

// LoRA's A projections keep their (fp32, PEFT's autocast_adapter_dtype) output for B's weight gradient,
// and an fp32 copy of a 16-bit input.
double lora_adapter_bytes(const Config& c) {
    if (trains_all_weights(c)) return 0;
    double bytes = 0;
    const double n = tokens(c);
    for (const Linear& l : adapter_linears(c.model))
        if (targeted(c, {l.name.c_str()}))
            bytes += (4 * n * double(c.finetune.rank) + (compute_element_bytes(c) < 4 ? 4 * n * double(l.in) : 0)) *
                     double(l.count);
    return bytes;
}

}  // namespace

double norm_activation_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double attn_projections = gpt2_family(c) ? 1 : 3, mlp_projections = gated(a) ? 2 : 1;
    double bytes = double(a.norms_per_layer) * single_norm_bytes(c);
    if (attention_inputs_saved(c)) bytes += norm_output_bytes(c, attn_projections);
    if (mlp_inputs_saved(c)) bytes += norm_output_bytes(c, mlp_projections);
    return bytes;
}

double attention_activation_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double n = tokens(c), e = compute_element_bytes(c);
    const double q = double(a.heads * head_dim(a)), kv = double(a.kv_heads * head_dim(a));
    const double out_proj_input = out_proj_input_saved(c) ? e * n * q : 0;
    double bytes;
    if (c.attention == Attention::flash) {
        // q, k, v, the output and the fp32 log-sum-exp (Dao 2023, FlashAttention-2).
        bytes = e * n * (q + 2 * kv) + e * n * q + 4 * double(c.micro_batch) * double(a.heads) * double(c.seq_len);
    } else {
        // Eager: repeat_kv materialises k and v at the full head count when kv_heads < heads.
        const double kv_saved = a.kv_heads < a.heads ? q : kv;
        bytes = e * n * (q + 2 * kv_saved) + out_proj_input;
        if (c.checkpointing != Checkpointing::selective) {
            // Softmax keeps its output (fp32 in Llama's eager attention and under autocast); the 16-bit
            // cast of it, or dropout's mask and output, are what the matmul with v then saves.
            const double s2 = attention_scores_elements(c);
            const bool fp32_softmax = !gpt2_family(c) || autocast(c);
            bytes += s2 * (fp32_softmax ? 4 : e);
            if (has_dropout(c))
                bytes += s2 * (dropout_mask_element_bytes(c) + e);
            else if (fp32_softmax && e < 4)
                bytes += s2 * e;
        }
    }
    if (has_dropout(c)) bytes += n * double(a.hidden) * dropout_mask_element_bytes(c);  // resid_dropout
    return bytes + lora_adapter_bytes(c);
}

double mlp_activation_bytes(const Config& c) {
    const Architecture& a = c.model;
    const double nf = tokens(c) * double(a.ffn) * double(a.experts_per_token), e = compute_element_bytes(c);
    const double down_input = down_proj_input_saved(c) ? e * nf : 0;
    double bytes;
    if (gated(a))
        bytes = 3 * e * nf + down_input;  // gate, act(gate), up; act(gate)*up for down_proj
    else if (gpt2_family(c))
        bytes = 4 * e * nf + down_input;  // gelu_new in Python: x, tanh(...), 0.5*x, 1+tanh(...); output
    else
        bytes = e * nf + down_input;      // F.gelu: input; output
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
    const double nh = tokens(c) * double(a.hidden), x = residual_element_bytes(c);
    double bytes = double(layers_on_stage(c)) * layer_activation_bytes(c);
    if (has_dropout(c) && holds_embedding(c)) bytes += nh * dropout_mask_element_bytes(c);  // embedding dropout
    if (holds_head(c)) {
        // Final norm (its input is the last layer's output) and lm_head's input.
        bytes += single_norm_bytes(c) + (trains_all_weights(c) ? norm_output_bytes(c, 1) : 0);
        if (c.checkpointing == Checkpointing::full) bytes += x * nh;  // the last layer's output
    }
    // With LoRA nothing before the first adapter needs a gradient: the first norm saves nothing, and
    // neither does a frozen k_proj's partner q in q @ k^T.
    if (!trains_all_weights(c) && c.checkpointing != Checkpointing::full && c.strategy != Strategy::megatron) {
        bytes -= single_norm_bytes(c);
        if (!gpt2_family(c) && !targeted(c, {"k_proj"}) && c.attention == Attention::eager)
            bytes -= compute_element_bytes(c) * tokens(c) * double(a.heads * head_dim(a));
    }
    return bytes * double(micro_batches_in_flight(c));
}

// Hugging Face builds the eager causal mask as a (b, 1, s, s) tensor in the model's dtype; it lives
// through the forward, and through backward too when checkpointing holds it as a layer argument.
double attention_mask_bytes(const Config& c) {
    if (c.attention != Attention::eager || c.strategy == Strategy::megatron) return 0;
    return double(c.micro_batch) * double(c.seq_len) * double(c.seq_len) * residual_element_bytes(c);
}

// transformers' ForCausalLMLoss at the end of forward: the 16-bit logits, their fp32 upcast and the
// saved log-softmax output.
double logits_forward_peak_bytes(const Config& c) {
    if (!holds_head(c)) return 0;
    const double nv = tokens(c) * double(c.model.vocab) / double(c.tp), e = compute_element_bytes(c);
    return (e < 4 ? e + 4 : 4) * nv + 4 * nv;
}

// At log_softmax's backward the saved output, the incoming gradient and the result are all live in fp32.
double logits_backward_peak_bytes(const Config& c) {
    if (!holds_head(c)) return 0;
    const double nv = tokens(c) * double(c.model.vocab) / double(c.tp);
    return 3 * 4 * nv;
}

double final_norm_activation_bytes(const Config& c) {
    if (!holds_head(c)) return 0;
    return single_norm_bytes(c) + (trains_all_weights(c) ? norm_output_bytes(c, 1) : 0);
}

// What the last layer's MLP half saves (its norm, the MLP): freed before backward reaches attention.
double mlp_half_activation_bytes(const Config& c) {
    if (c.strategy == Strategy::megatron) return 0;
    const double own_norm = c.model.norms_per_layer > 1 ? single_norm_bytes(c) : 0;
    return own_norm + (mlp_inputs_saved(c) ? norm_output_bytes(c, gated(c.model) ? 2 : 1) : 0) + mlp_activation_bytes(c);
}

// By the time backward reaches the MLP's activation function, down_proj's input and the dropout mask
// after it are freed.
double mlp_freed_before_backward_bytes(const Config& c) {
    if (c.strategy == Strategy::megatron) return 0;
    const double nf = tokens(c) * double(c.model.ffn) * double(c.model.experts_per_token);
    return (down_proj_input_saved(c) ? compute_element_bytes(c) * nf : 0) +
           (has_dropout(c) ? tokens(c) * double(c.model.hidden) * dropout_mask_element_bytes(c) : 0);
}

// The gradient flowing into a layer's output (the residual stream's dtype).
double layer_output_gradient_bytes(const Config& c) {
    return tokens(c) * double(c.model.hidden) * residual_element_bytes(c) / double(c.tp);
}

// Under autocast a recomputed (checkpointed) layer casts its weights to 16-bit again.
double recast_layer_weight_bytes(const Config& c) {
    if (!autocast(c)) return 0;
    return double(linear_weight_params(c.model)) / double(c.model.layers) * compute_element_bytes(c) / double(c.tp);
}

// Eager softmax backward: the fp32 gradient of the scores beside the 16-bit or fp32 gradient of the
// probabilities, then the scaled copy.
double attention_backward_transient_bytes(const Config& c) {
    if (c.attention == Attention::flash) return 0;
    return attention_scores_elements(c) * (compute_element_bytes(c) + 4) / double(c.tp);
}

// gelu_new's backward: three ffn-wide temporaries; SwiGLU's: two.
double mlp_backward_transient_bytes(const Config& c) {
    const double nf = tokens(c) * double(c.model.ffn) * double(c.model.experts_per_token);
    return (gpt2_family(c) ? 3 : 2) * compute_element_bytes(c) * nf / double(c.tp);
}

// ---- Transient and fixed costs ----

// torch.autocast caches the 16-bit casts of leaf weights that need grad until the forward's autocast
// region ends; the linears save them for backward (torch/csrc/autograd and aten/src/ATen/autocast_mode.cpp).
double autocast_weight_copy_bytes(const Config& c) {
    if (!autocast(c)) return 0;
    // Checkpointed layers cast again when recomputed; only lm_head's cast is held from the forward.
    const double layers = c.checkpointing == Checkpointing::full ? 0 : double(linear_weight_params(c.model)) * layer_share(c) / double(c.tp);
    const double linear = layers + double(c.model.vocab * c.model.hidden) / double(c.tp);  // + lm_head
    double bytes = linear * compute_element_bytes(c);
    if (c.finetune.method == FinetuneMethod::qlora) bytes = double(c.model.vocab * c.model.hidden) * 2;
    if (deepspeed(c, 3) || fsdp(c, 2)) return 0;  // FSDP casts per unit (see gathered_parameter_bytes)
    return bytes;
}

namespace {

// The largest n[i-1] + 2 n[i] over the trainable tensors in the order optimizer.step() walks them: one
// layer's tensors stand for all (the pattern repeats), plus the step from one layer into the next.
double single_tensor_step_elements(const Config& c) {
    std::vector<double> before, layer, after;
    for (const Tensor& t : trainable_tensors(c)) {
        if (!t.in_layers) {
            (layer.empty() ? before : after).push_back(double(t.numel()));
            continue;
        }
        const std::uint64_t per_layer = t.count / layers_on_stage(c);  // experts repeat within a layer
        for (std::uint64_t k = 0; k < std::min<std::uint64_t>(per_layer, 2); ++k) layer.push_back(double(t.numel()));
    }
    std::vector<double> order = before;
    order.insert(order.end(), layer.begin(), layer.end());
    if (!layer.empty() && layers_on_stage(c) > 1) order.push_back(layer.front());  // into the next layer
    order.insert(order.end(), after.begin(), after.end());
    double worst = 0;
    for (std::size_t i = 0; i < order.size(); ++i) worst = std::max(worst, (i ? order[i - 1] : 0) + 2 * order[i]);
    return worst;
}

}  // namespace

double optimizer_step_temporary_bytes(const Config& c) {
    if (c.offload != Offload::none) return 0;  // the step runs on the CPU
    const double sb = state_element_bytes(c);
    // DeepSpeed and Megatron step their flat fp32 partitions with fused multi-tensor kernels.
    if (half_model(c) && c.optimizer == Optimizer::adamw) return 0;
    const bool flat = c.strategy == Strategy::fsdp;  // FSDP steps one flat parameter per unit
    double shard = optimizer_states_bytes(c) > 0 ? trainable_stage_params(c) : 0;
    if (deepspeed(c, 1) || fsdp(c, 2)) shard /= dp(c);
    auto largest = [&] { return flat ? double(layer_params(c.model)) / (c.zero >= 2 ? dp(c) : 1) : largest_trainable_tensor(c); };
    switch (c.optimizer) {
        case Optimizer::adamw:
            if (c.optimizer_impl == OptimizerImpl::fused) return 0;
            if (c.optimizer_impl == OptimizerImpl::single_tensor) {
                // denom = (sqrt(v) / bc2).add_(eps): sqrt and quotient live together, while the previous
                // parameter's denom has not been freed yet (_single_tensor_adamw in torch/optim/adamw.py).
                return (flat ? 2 * largest() : single_tensor_step_elements(c)) * sb;
            }
            // _multi_tensor_adamw: 1.13 keeps sqrt(v) and sqrt(v)+eps as two lists; 2.x adds eps in place.
            return (c.torch == TorchVersion::v1_13 ? 2 : 1) * shard * sb;
        case Optimizer::lion: return 2 * largest() * sb;      // exp_avg.clone() and the interpolation
        case Optimizer::adafactor: return 3 * largest() * 4;  // grad^2, the row/col approximation, update
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
        case Strategy::fsdp: return 0;  // its reduce-scatter input is a backward-only buffer
        default: return 0;
    }
}

double gathered_parameter_bytes(const Config& c) {
    // FSDP SHARD_GRAD_OP keeps the unsharded compute-dtype parameters from forward to backward.
    if (c.strategy == Strategy::fsdp && c.zero == 2) return stage_params(c) * compute_element_bytes(c);
    if (!(deepspeed(c, 3) || fsdp(c, 3))) return 0;
    // The layer being computed and the one prefetched. DeepSpeed caps what is gathered at
    // stage3_max_live_parameters (1e9 by default, deepspeed/runtime/zero/config.py).
    double params = 2 * double(layer_params(c.model));
    if (c.strategy == Strategy::deepspeed) params = std::min(params, 1e9);
    return params * compute_element_bytes(c);
}

// PyTorch's default cuBLAS workspace: 32 MiB on sm90, else 4096 KiB x 2 + 16 KiB x 8
// (aten/src/ATen/cuda/CublasHandlePool.cpp); taken from the caching allocator.
// FSDP reduce-scatters one unit's unsharded gradients at a time during backward.
double reduce_scatter_bytes(const Config& c) {
    return fsdp(c, 2) ? double(layer_params(c.model)) * compute_element_bytes(c) : 0;
}

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

// DeepSpeed's estimators (stage_1_and_2.py / stage3.py) size offload RAM with a 1.5x buffer factor:
// 16 bytes per parameter for the optimizer (fp32 master, gradient, two states), 18 with 16-bit parameters.
// FSDP's CPU offload keeps the fp32 parameters themselves there, with no separate master copy.
double cpu_offload_bytes(const Config& c) {
    if (!offloaded(c)) return 0;
    const double trainable = !trains_all_weights(c) ? double(lora_params(c.model, c.finetune.rank, c.finetune.targets))
                                          : double(total_params(c.model));
    const double master = c.strategy == Strategy::fsdp ? 0 : 4;
    double bytes = trainable * (master + 4) + optimizer_states_stage_bytes(c);
    if (c.offload == Offload::optimizer_and_params) bytes += double(total_params(c.model)) * weight_element_bytes(c);
    return bytes * 1.5;
}

}  // namespace vramcalc
