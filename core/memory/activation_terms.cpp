// What a micro-batch saves for backward, and the transients of the step's busiest moments (the logits' in
// logits_terms.cpp).
// Megatron's own layers follow Korthikanti et al. 2022 ("Reducing Activation Recomputation", §4 and Table 2);
// other strategies run Hugging Face modeling code (transformers 5.18), modelled tensor by tensor from what
// each op saves for backward and checked against measured steps (tests/validation/).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hardware/gpus.hpp"
#include "memory/memory_common.hpp"
#include "model/families.hpp"

namespace vramcalc {

using namespace detail;

namespace detail {
bool bitsandbytes_keeps_inputs(const Config& c) {
    return c.finetune.method == FinetuneMethod::qlora && c.finetune.backend == QuantBackend::bitsandbytes &&
           !c.finetune.backend_version.empty() && compare_releases(c.finetune.backend_version, "0.43.2") < 0;
}
}  // namespace detail

namespace {

double dropout_mask_element_bytes(const Step& c) {
    // CUDA's fused dropout keeps a bool mask; PyTorch's CPU dropout keeps a noise tensor in the input dtype.
    return c.device == Device::cpu ? c.compute_element : 1;
}

bool residual_dropout(const Step& c) { return c.model.residual_dropout > 0; }
bool attention_dropout(const Step& c) { return c.model.attention_dropout > 0; }

// The share of layers whose attention needs a mask beyond causality: sliding windows shorter than the sequence.
double sliding_share(const Step& c) {
    const Architecture& a = c.model;
    return a.sliding_window && a.sliding_window < c.seq_len ? double(a.sliding_layers) / double(a.layers) : 0;
}

double attention_scores_elements(const Step& c) {
    return c.tokens * double(c.model.heads) * double(c.seq_len);  // this rank's queries against every key
}

double megatron_layer_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double t = double(c.tp), sbh = c.tokens * double(a.hidden);
    const double q = double(q_width(a)), kv = double(kv_width(a));
    const double f = double(is_moe(a) ? expert_ffn(a) : a.ffn) * double(a.experts_per_token);
    const double replicated = c.sequence_parallel ? 1 / t : 1;  // LN, dropout and block inputs
    const double e = 2;
    // Transformer Engine's fp8 (stacks/fp8 A.9): the qkv and fc1 norms' outputs and fc2's input saved in 1 B, and
    // proj's own fp8 copy of its input beside attention's bf16 output.
    const double f8 = te_fp8(c) ? 1 : e;
    double split = e * c.tokens * (q + 2 * kv) + e * c.tokens * q;  // Q, K, V and the projection input
    if (te_fp8(c)) split += c.tokens * q;
    split += (gated(a) ? 2 * e * c.tokens * f : e * c.tokens * f) + f8 * c.tokens * f;  // fc1 output, fc2 input
    double s2 = 0;
    if (c.attention == Attention::eager && c.checkpointing == Checkpointing::none)
        s2 = attention_scores_elements(c) * (e + (attention_dropout(c) ? 1 + e : 0));
    else if (c.attention == Attention::flash)
        s2 = 4 * c.tokens * double(a.heads);  // softmax log-sum-exp
    double rep = 2 * e * sbh + f8 * sbh + f8 * sbh;  // two LN inputs, QKV input, MLP input
    if (residual_dropout(c)) rep += 2 * sbh;       // two 1-byte dropout masks
    return (split + s2) / t + rep * replicated;
}

// Which saved tensors exist depends on what needs a gradient: a frozen projection (LoRA) keeps no input
// for its weight gradient, a frozen norm weight no normalised input.
bool targeted(const Step& c, const std::vector<std::string>& names) {
    if (base_weights_need_grad(c)) return true;  // (callers test this first: it saves building `names`)
    for (const std::string& t : c.finetune.targets) {
        if (t == "all-linear") return true;
        for (const std::string& n : names)
            if (t == n) return true;
    }
    return false;
}
std::vector<std::string> attention_input_names(const Architecture& a) {
    std::vector<std::string> names;
    for (const Linear& l : attention_linears(a))
        if (l.in == a.hidden && l.name != (*a.family).o) names.push_back(l.name);
    return names;
}
// Projections reading the layer's normalised input: q, k, v (one when fused); MLA's q_a (or q) and kv_a.
double attention_projections(const Architecture& a) { return is_mla(a) ? 2 : a.family->qkv ? 1 : 3; }
double mlp_projections(const Architecture& a) { return gated(a) && !a.family->fused_gate_up ? 2 : 1; }
// PEFT's fp32 adapters over 16-bit compute (peft/tuners/lora/layer.py Linear.forward): each adapter casts its
// input for lora_A (to fp32, then under autocast back to a 16-bit copy of its own) and saves that copy; the
// frozen base projection saves no input, so the projection's own input is not kept for it.
bool adapters_copy_input(const Step& c) {
    return !base_weights_need_grad(c) && c.adapter_dtype == AdapterDtype::fp32 && c.compute_element < 4 &&
           !fsdp_mixed(c);
}
// (Each tests the cheap conditions first: the name lists allocate, and estimates run in loops.)
bool adapted_input_saved(const Step& c) { return !base_weights_need_grad(c) && !adapters_copy_input(c); }
bool attention_inputs_saved(const Step& c) {
    return base_weights_need_grad(c) || (adapted_input_saved(c) && targeted(c, attention_input_names(c.model)));
}
bool mlp_inputs_saved(const Step& c) {
    const Family& f = *c.model.family;
    return base_weights_need_grad(c) || (adapted_input_saved(c) && targeted(c, {f.up, f.gate ? f.gate : f.up}));
}
bool out_proj_input_saved(const Step& c) {
    return base_weights_need_grad(c) || (adapted_input_saved(c) && targeted(c, {c.model.family->o}));
}
bool down_proj_input_saved(const Step& c) {
    return base_weights_need_grad(c) || (adapted_input_saved(c) && targeted(c, {c.model.family->down}));
}

// A norm over `elements` values in `rows` rows, its input `in_bytes` wide: what it saves. RMSNorm
// (modeling_llama.py LlamaRMSNorm): the fp32 input (or its fp32 copy), rsqrt, and x*rsqrt cast back for the
// weight multiply when the weight trains; torch 1.13's MeanBackward also keeps the fp32 pow(2) output.
// LayerNorm (native_layer_norm): its input (fp32 under autocast), mean and rstd.
// `weight_trains`: the norm's weight needs a gradient.
double norm_saved_bytes(const Step& c, double elements, double rows, double in_bytes, bool weight_trains) {
    const NormCompute compute = c.model.family->norm_compute;
    if (compute == NormCompute::fp32_weight && c.model.norm == Norm::rmsnorm)  // fp32 input, normalised input, rsqrt
        return 4 * elements + 4 * rows + (weight_trains ? 4 * elements : 0);
    if (compute == NormCompute::input_dtype && c.model.norm == Norm::rmsnorm)  // input, rsqrt, normalised input
        return in_bytes * (elements + rows) + (weight_trains ? in_bytes * elements : 0);
    if (c.model.norm == Norm::layernorm && (*c.model.family).python_layernorm)  // CohereLayerNorm
        return 8 * elements + 4 * rows + (weight_trains ? in_bytes * elements : 0);
    if (c.model.norm == Norm::layernorm) {
        const bool half = c.precision == Precision::bf16_true || c.precision == Precision::fp16_true;
        return (c.model.norm_weight ? in_bytes : 4) * elements + 2 * rows * (half ? 2 : 4);
    }
    double bytes = 4 * elements + 4 * rows;
    if (c.torch == TorchVersion::v1_13) bytes += 4 * elements;
    if (weight_trains) bytes += in_bytes * elements;
    return bytes;
}
double norm_saved_bytes(const Step& c, double elements, double rows, double in_bytes) {
    return norm_saved_bytes(c, elements, rows, in_bytes, base_weights_need_grad(c));
}

double single_norm_bytes(const Step& c, bool weight_trains) {
    return norm_saved_bytes(c, c.tokens * double(c.model.hidden), c.tokens, c.residual_element, weight_trains);
}
double single_norm_bytes(const Step& c) { return single_norm_bytes(c, base_weights_need_grad(c)); }

// A norm's output as its projections save it: one shared tensor, or under autocast one 16-bit cast
// per projection (autocast caches casts of leaf weights only); te.Linear projections each their own fp8 copy,
// 1 B an element (`fp8`, stacks/fp8 A.3, A.9).
double norm_output_bytes(const Step& c, double projections, bool fp8) {
    const double nh = c.tokens * double(c.model.hidden);
    if (fp8) return nh * projections;
    return fp32_residual(c) ? c.compute_element * nh * projections : c.residual_element * nh;
}

// LoRA's A projections keep their output for B's weight gradient, in the adapters' dtype, beside the input the
// layer saves anyway; PEFT's fp32 adapters over 16-bit compute keep their own copy of the input instead (fp32,
// or under autocast a 16-bit cast with a 16-bit A output), measured in tests/validation/stacks/qlora.
// With adapter dropout each adapter module keeps its mask, and its dropped input takes the place of the
// input, except at the output projection, whose input (the attention output) attention saves anyway.
// LitGPT's fused qkv adapter is one module.
double lora_adapter_bytes(const Step& c) {
    if (trains_all_weights(c)) return 0;
    double bytes = 0;
    const double n = c.tokens, e = c.compute_element;
    // FSDP's MixedPrecision casts every unit's parameters, adapters included, to the compute dtype.
    const bool fp32 = c.adapter_dtype == AdapterDtype::fp32 && !fsdp_mixed(c);
    const bool copies = adapters_copy_input(c);
    const double copy_bytes = autocast(c) ? e : 4;  // autocast's 16-bit cast of the fp32 copy, else the fp32 copy
    bool fused_qkv_counted = false;
    for (const Linear& l : c.adapter_linears())
        if (targeted(c, {l.name})) {
            double one = copies ? copy_bytes * n * (double(l.in) + double(c.finetune.rank)) : (fp32 ? 4 : e) * n * double(c.finetune.rank);
            const Family& f = *c.model.family;
            const bool in_fused_qkv = f.qkv && f.q && (l.name == f.q || l.name == f.k || l.name == f.v);
            if (c.finetune.dropout > 0 && !(in_fused_qkv && fused_qkv_counted))
                one += n * double(l.in) * (dropout_mask_element_bytes(c) + (l.name == c.model.family->o && !copies ? e : 0));
            // LitGPT's LoRAQKVLinear pads a partial q/k/v update with index_copy_, which keeps the unpadded
            // adapter output (lora.py zero_pad) unless all three parts are adapted.
            if (in_fused_qkv && !targeted(c, {f.q}) + !targeted(c, {f.k}) + !targeted(c, {f.v}) > 0)
                one += e * n * double(l.out);
            fused_qkv_counted = fused_qkv_counted || in_fused_qkv;
            bytes += one * double(l.count) * double(l.layers ? l.layers : c.model.layers) / double(c.model.layers);
        }
    return bytes;
}

// q/k norms (Qwen3, Gemma 3: per head; OLMo 2: over the whole projection) on the 16-bit projections.
double qk_norm_bytes(const Step& c) {
    const Architecture& a = c.model;
    if (a.qk_norm == QkNorm::none) return 0;
    const double n = c.tokens, e = c.compute_element;
    const double elements = n * double(q_width(a) + kv_width(a));
    const double rows = a.qk_norm == QkNorm::per_head ? n * double(a.heads + a.kv_heads) : 2 * n;
    return norm_saved_bytes(c, elements, rows, e);
}

// What the eager softmax path keeps per score: the probabilities (fp32 in most families' eager attention
// and under autocast; gpt-oss's sinks join them as one more column, fp32 as the sinks are) and the 16-bit
// copy or dropout's mask and output the matmul with v saves; Gemma 2's soft-capping keeps tanh's output.
double softmax_path_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double s2 = attention_scores_elements(c), e = c.compute_element;
    const bool fp32_softmax = (*a.family).fp32_softmax || autocast(c);
    double bytes = s2 * (fp32_softmax ? 4 : e);
    if (!attention_dropout(c) && fp32_softmax && e < 4) bytes += s2 * e;
    if (attention_dropout(c)) bytes += s2 * (dropout_mask_element_bytes(c) + e);
    if (a.attn_softcap > 0) bytes += s2 * e;
    return bytes;
}

// MLA (modeling_deepseek_v3.py): the latent projections' norms and inputs, then q and k after the rotary
// concat and a contiguous v (its view of kv_b_proj's output is copied for the matmul), `qkv_bytes` each.
double mla_attention_bytes(const Step& c, double qkv_bytes) {
    const Architecture& a = c.model;
    const double n = c.tokens, e = c.compute_element, H = double(a.heads);
    const double qk = double(a.qk_nope_dim + a.qk_rope_dim);
    double bytes = 0;
    if (a.q_lora_rank) bytes += norm_saved_bytes(c, n * double(a.q_lora_rank), n, e) + e * n * double(a.q_lora_rank);
    bytes += norm_saved_bytes(c, n * double(a.kv_lora_rank), n, e) + e * n * double(a.kv_lora_rank);
    return bytes + qkv_bytes * n * H * (2 * qk + double(a.v_head_dim));
}

// The share of layers whose SDPA runs PyTorch's math path on CUDA, `grouped` the share that hands it grouped heads
// (enable_gqa). Read from aten/src/ATen/native/transformers/cuda/sdp_utils.cpp and sdp_utils_cpp.h (torch 2.5-2.14):
// flash and cuDNN take only fp16 and bf16, on sm80 and newer (the GPUs with bf16); the memory-efficient kernel takes
// fp32 and, below sm80, fp16, but not grouped heads (pytorch/pytorch#191085); what none takes falls to the math path.
double sdpa_math_share(const Step& c, double grouped) {
    if (c.device != Device::cuda || c.torch == TorchVersion::v1_13 || c.attention != Attention::flash) return 0;
    if (c.compute_element == 4) return grouped;
    if (supports_bf16(c.gpu)) return 0;     // sm80 and newer: flash takes 16-bit, grouped heads or not
    return bf16(c.precision) ? 1 : grouped;  // V100, T4: no kernel takes bf16, none fp16 with grouped heads
}

// The share of layers whose k and v are repeated to every head before SDPA: transformers passes GQA to SDPA only
// without a mask and with head_dim <= 256 (sdpa_attention.py use_gqa_in_sdpa); a sliding-window layer has a mask.
double sdpa_repeated_share(const Step& c) {
    const Architecture& a = c.model;
    const bool all_repeated = head_dim(a) > 256 || a.family->sdpa_repeats_kv || a.family->sdpa_mask_always;
    return all_repeated ? 1 : sliding_share(c);
}

// PyTorch's CPU flash kernel needs equal q/k and v head sizes; MLA's differ, so SDPA on the CPU falls back
// to the math kernel, which upcasts q, k and v to fp32 and keeps the fp32 probabilities.
bool mla_math_fallback(const Step& c) { return is_mla(c.model) && c.attention == Attention::flash && c.device == Device::cpu; }

}  // namespace

namespace {

// The normalised inputs the attention and MLP projections save for their weight gradients.
double projection_input_bytes(const Step& c) {
    const Architecture& a = c.model;
    const bool shared_output = a.parallel_block && a.norms_per_layer == 1 && !fp32_residual(c) && !te_fp8(c);
    double bytes = 0;
    if (attention_inputs_saved(c)) bytes += norm_output_bytes(c, attention_projections(a), te_fp8(c));
    if (mlp_inputs_saved(c) && !(shared_output && attention_inputs_saved(c)))
        bytes += norm_output_bytes(c, is_moe(a) && !a.shared_experts ? 1 : mlp_projections(a), te_fp8(c));
    return bytes;
}

}  // namespace

double norm_activation_bytes(const Step& c) {
    const Architecture& a = c.model;
    double bytes = double(a.norms_per_layer) * single_norm_bytes(c);
    // Parallel blocks with two norms (GPT-NeoX, Falcon's new architecture) normalise the same input: it is
    // saved once, the second norm keeps only its own statistics and output.
    if (a.parallel_block && a.norms_per_layer == 2)
        bytes -= c.tokens * double(a.hidden) * (a.norm == Norm::layernorm ? c.residual_element : 4);
    return bytes + projection_input_bytes(c);
}

double sdpa_math_layers(const Step& c) {
    const bool grouped = c.model.kv_heads < c.model.heads && !is_mla(c.model);
    return sdpa_math_share(c, grouped ? 1 - sdpa_repeated_share(c) : 0);
}

double attention_activation_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double n = c.tokens, e = c.compute_element;
    const double q = double(q_width(a)), kv = double(kv_width(a)), o_in = double(a.heads) * double(is_mla(a) ? a.v_head_dim : head_dim(a));
    const double out_proj_input = out_proj_input_saved(c) ? (te_fp8(c) ? 1 : e) * n * o_in : 0;  // te.Linear: fp8
    double bytes = qk_norm_bytes(c);
    if (is_mla(a)) {
        if (mla_math_fallback(c))
            bytes += mla_attention_bytes(c, 4) + 4 * attention_scores_elements(c);
        else if (c.attention == Attention::flash)
            bytes += mla_attention_bytes(c, e) + e * n * o_in + 4 * n * double(a.heads);
        else
            bytes += mla_attention_bytes(c, e) + (c.checkpointing != Checkpointing::selective ? softmax_path_bytes(c) : 0);
        bytes += out_proj_input;
    } else if (c.attention == Attention::flash) {
        // q, k, v, the output and the fp32 log-sum-exp (Dao 2023, FlashAttention-2), k and v repeated to every
        // head where SDPA is not handed the grouped heads.
        const double repeated = sdpa_repeated_share(c);
        // Layers whose SDPA runs PyTorch's math path on CUDA (attention.cpp _scaled_dot_product_attention_math,
        // 2.5+): in fp32 (16-bit inputs upcast) it keeps the scaled q, k and v repeated to every head and the
        // probabilities, with dropout its mask and output too; the output, not saved, is copied for o_proj.
        const double math = sdpa_math_layers(c);
        if (math > 0)
            bytes += math * (4 * n * 3 * q + out_proj_input +
                             attention_scores_elements(c) * (4 + (attention_dropout(c) ? 1 + 4 : 0)));
        bytes += (1 - math) * (e * n * (q + 2 * (kv + (q - kv) * repeated)) + e * n * q + 4 * n * double(a.heads));
        // The output projection saves that output (a view), a te.Linear its own fp8 copy beside it (stacks/fp8 A.6),
        // and after a torch.cat rotary its own contiguous copy (measured: gpt_neox, phi3 _bf16mixed_flash).
        if (te_fp8(c) || (a.family->rotary_cat && a.position == Position::rope)) bytes += out_proj_input;
        // LitGPT splits its fused qkv output into views: without grouped heads to expand, v stays a view and
        // keeps the whole output (q and k too) alive.
        if (a.family->qkv && a.family->sdpa_repeats_kv && a.kv_heads == a.heads) bytes += e * n * (q + kv);
        // transformers' phi3 slices v out of its fused output: a view SDPA keeps, in every layer whose k and v are
        // not repeated (measured: phi3_bf16mixed_flash).
        if (a.family->v_views_qkv) bytes += e * n * (q + kv) * (a.kv_heads < a.heads ? 1 - repeated : 1);
    } else {
        // Eager: repeat_kv materialises k and v at the full head count when kv_heads < heads.
        const double kv_saved = a.kv_heads < a.heads ? q : kv;
        bytes += e * n * (q + 2 * kv_saved) + out_proj_input;
        if (c.checkpointing != Checkpointing::selective) bytes += softmax_path_bytes(c);
    }
    if (residual_dropout(c)) bytes += n * double(a.hidden) * dropout_mask_element_bytes(c);
    return bytes + lora_adapter_bytes(c);
}

namespace {

// One MLP's activation, gating and down-projection input over `nf` token-width elements
// (activations.cpp has what each activation function saves).
double mlp_core_bytes(const Step& c, double nf, double e) {
    const ActivationCost& act = *c.activation;
    // down_proj's input as a te.Linear saves it: its own fp8 copy, 1 B an element (stacks/fp8 A.3, A.9).
    const bool fp8_input = te_fp8(c) && down_proj_input_saved(c);
    double saved = act.saved;
    if (gated(c.model))
        saved += 2 + (down_proj_input_saved(c) && !fp8_input ? 1 : 0);  // act(gate) and up for the product; the product
    else
        saved += act.saves_output || (down_proj_input_saved(c) && !fp8_input) ? 1 : 0;
    double bytes = saved * e * nf + (fp8_input ? nf : 0);
    if (autocast(c) && c.device == Device::cuda && e < 4) bytes += act.cuda_fp32_saved * (4 - e) * nf;
    if (c.model.activation_dropout > 0) bytes += nf * (dropout_mask_element_bytes(c) + e);
    return bytes;
}

// bitsandbytes' Linear4bit returns its output in its input's dtype (nn/modules.py: out.to(inp_dtype)), and
// PEFT's prepare_model_for_kbit_training leaves fp32 norms, so under autocast the 4-bit projections' outputs
// and the MLP activations after them are fp32 (measured, tests/validation/stacks/qlora).
double mlp_element_bytes(const Step& c) {
    const bool fp32_outputs = c.finetune.method == FinetuneMethod::qlora &&
                              c.finetune.backend == QuantBackend::bitsandbytes && autocast(c);
    return fp32_outputs ? 4 : c.compute_element;
}

// bitsandbytes before 0.43.2 (autograd/_functions.py MatMul4Bit, ctx.tensors = (A, B) until PR #1270) keeps
// each 4-bit projection's input. Up to 0.40 the input is first cast to the compute dtype (taken as 16-bit), a
// copy per projection when it differs; from 0.41 the compute dtype follows an fp32 or bf16 input, so the
// inputs themselves are kept. ctx.tensors escapes non-reentrant checkpointing; PEFT's
// prepare_model_for_kbit_training checkpoints reentrantly, which drops it (measured, stacks/qlora).
// A projection's input that the layer saves anyway (a trainable projection's, or an adapter's without dropout)
// is not kept twice.
bool kept_as_well(const Step& c, bool projection_saves) {
    return projection_saves && (base_weights_need_grad(c) || c.finetune.dropout == 0);
}

double bitsandbytes_kept_input_bytes(const Step& c) {
    if (!bitsandbytes_keeps_inputs(c)) return 0;
    const Architecture& a = c.model;
    const double n = c.tokens, e = c.compute_element, h = double(a.hidden), f = double(a.ffn);
    const double x = c.residual_element;  // the norms' outputs: fp32 under autocast
    if (compare_releases(c.finetune.backend_version, "0.41") < 0 && x != e)
        return e * n * (h * (attention_projections(a) + mlp_projections(a)) + f);
    // Every projection's input, the output projection's too; a parallel block's shared norm feeds attention and
    // MLP one tensor (measured, stacks/litgpt2023).
    const bool shared_input = a.parallel_block && a.norms_per_layer == 1;
    return n * ((kept_as_well(c, attention_inputs_saved(c)) ? 0 : x * h) +
                (kept_as_well(c, out_proj_input_saved(c)) ? 0 : e * double(q_width(a))) +
                (shared_input || kept_as_well(c, mlp_inputs_saved(c)) ? 0 : x * h) +
                (kept_as_well(c, down_proj_input_saved(c)) ? 0 : mlp_element_bytes(c) * f));
}

// In the first layer of a frozen model nothing before the adapters needs a gradient, and MatMul4Bit keeps an
// input only when it does: not the attention's input, nor, in a parallel block, the MLP's whole path unless an
// adapter sits on it (measured, stacks/litgpt2023: lit-gpt's phi with frozen biases).
double bitsandbytes_first_layer_unkept_bytes(const Step& c) {
    if (!bitsandbytes_keeps_inputs(c) || base_weights_need_grad(c) || compare_releases(c.finetune.backend_version, "0.41") < 0)
        return 0;
    const Architecture& a = c.model;
    const Family& fam = *a.family;
    const double n = c.tokens, x = c.residual_element, h = double(a.hidden), f = double(a.ffn);
    double bytes = kept_as_well(c, attention_inputs_saved(c)) ? 0 : x * h;
    if (a.parallel_block && !targeted(c, {fam.up, fam.gate ? fam.gate : fam.up})) {
        if (a.norms_per_layer != 1 && !kept_as_well(c, mlp_inputs_saved(c))) bytes += x * h;
        if (!kept_as_well(c, down_proj_input_saved(c))) bytes += mlp_element_bytes(c) * f;
    }
    return n * bytes;
}

double dense_mlp_bytes(const Step& c) {
    double bytes = mlp_core_bytes(c, c.tokens * double(c.model.ffn), mlp_element_bytes(c));
    if (residual_dropout(c)) bytes += c.tokens * double(c.model.hidden) * dropout_mask_element_bytes(c);
    return bytes;
}

// An MoE layer (transformers 5.18 integrations/moe.py grouped_mm_experts_forward): each routed token's
// gathered input, the experts' gate_up output, activation, product and weighted output, all in the expert
// weights' dtype since grouped_mm is not autocast-enabled (fp32 under autocast); Llama 4 instead sends
// every token through every expert with autocast bmm (modeling_llama4.py Llama4TextMoe). Then the router's
// fp32 softmax and the shared experts (and Qwen2-MoE's sigmoid gate).
double moe_mlp_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double n = c.tokens, e = c.compute_element, h = double(a.hidden);
    const bool every = (*a.family).experts_see_every_token;
    const double routed = n * double(every ? a.experts : a.experts_per_token);
    const double ex = every ? e : c.weight_element;
    double bytes = mlp_core_bytes(c, routed * double(expert_ffn(a)), ex);
    bytes += routed * h * (c.residual_element + ex);
    bytes += n * double(a.experts) * 4;
    if (a.shared_experts) bytes += mlp_core_bytes(c, n * double(shared_width(a)), e) + (a.shared_expert_gate ? 2 * e * n * h : 0);
    if (residual_dropout(c)) bytes += n * h * dropout_mask_element_bytes(c);
    return bytes;
}

}  // namespace

double mlp_activation_bytes(const Step& c) {
    if (!is_moe(c.model)) return dense_mlp_bytes(c);
    const double moe = double(moe_layers(c.model)), all = double(c.model.layers);
    return (moe * moe_mlp_bytes(c) + (all - moe) * dense_mlp_bytes(c)) / all;
}

namespace {

// PyTorch tensor parallelism (DTensor, torchtitan's plan in models/llama3/parallelize_llama.py apply_tp): the
// attention and MLP inputs are all-gathered from the sequence-parallel norms' shards (PrepareModuleInput to
// Replicate), so the column-parallel projections save them whole; heads and the MLP width are split tp ways;
// norms work on sequence shards (sequence_parallel) or on the whole replicated sequence.
double dtensor_parallel_layer_bytes(const Step& c) {
    const Step& one = c.on_one_gpu();
    const double inputs = projection_input_bytes(one), t = double(c.tp);
    const double norms = norm_activation_bytes(one) - inputs;
    return inputs + norms / (c.sequence_parallel ? t : 1) + (attention_activation_bytes(one) + mlp_activation_bytes(one)) / t;
}

// torchtitan's per-op selective checkpointing (models/llama3/parallelize_llama.py _apply_ac_to_transformer_block,
// mode "selective", option "op"): inside each checkpointed block the outputs of every other matmul (the 1st,
// 3rd, ... in forward order), of SDPA (output and log-sum-exp) and of reduce-scatters are cached, the rest is
// recomputed in backward; the checkpoint keeps the block's input. A row-parallel projection's matmul output
// is its whole partial sum (reduce-scattered after). Base projections only: MoE experts (grouped_mm) and
// LoRA adapters are not counted.
double op_selective_layer_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double n = c.tokens, e = c.compute_element, t = double(c.tp), h = double(a.hidden);
    const double seq_shard = c.sequence_parallel ? t : 1;
    double bytes = e * n * h / seq_shard;  // the block's input
    std::uint64_t matmuls = 0;
    for (const Linear& l : c.layer_linears()) {
        if (l.count > 1) continue;  // routed experts
        const bool row_parallel = l.name == a.family->o || l.name == a.family->down;
        if (matmuls++ % 2 == 0) bytes += e * n * double(l.out) / (row_parallel ? 1 : t);
    }
    bytes += (e * n * double(q_width(a)) + 4 * n * double(a.heads)) / t;  // SDPA's output and log-sum-exp
    if (c.tp > 1) bytes += 2 * e * n * h / seq_shard;                      // wo's and w2's reduce-scatter outputs
    return bytes;
}

}  // namespace

double layer_activation_bytes(const Step& c) {
    if (c.checkpointing == Checkpointing::full)
        return c.tokens * double(c.model.hidden) * c.residual_element /
               (c.sequence_parallel ? double(c.tp) : 1);  // the layer's input only
    if (megatron_model(c)) return megatron_layer_bytes(c);
    if (c.checkpointing == Checkpointing::selective_op) return op_selective_layer_bytes(c);
    if (c.tp > 1) return dtensor_parallel_layer_bytes(c);
    return norm_activation_bytes(c) + attention_activation_bytes(c) + mlp_activation_bytes(c) +
           bitsandbytes_kept_input_bytes(c);
}

double activations_bytes(const Step& c) {
    const Architecture& a = c.model;
    const double nh = c.tokens * double(a.hidden), x = c.residual_element;
    double bytes = double(layers_on_stage(c)) * layer_activation_bytes(c);
    // Activation offloading (torchtune training/_activation_offloading.py OffloadActivations, CUDA only, read
    // from the code, not measured): the layers' saved tensors are copied to pinned CPU memory as forward
    // makes them and brought back ahead of their backward on a side stream; the GPU holds about the layer
    // in flight and the one prefetched.
    if (c.activation_offload) bytes = std::min<double>(2, double(layers_on_stage(c))) * layer_activation_bytes(c);
    if (c.checkpointing == Checkpointing::full && c.checkpoint_every > 1) {  // the other layers save everything
        const Step& plain = c.saving_everything();
        const double checkpointed = double(layers_on_stage(c) / c.checkpoint_every);
        bytes = checkpointed * layer_activation_bytes(c) + (double(layers_on_stage(c)) - checkpointed) * layer_activation_bytes(plain);
    }
    // A boolean mask (a sliding window's; falcon's always) reaches SDPA, which turns it into an additive mask in the
    // query's dtype on every call (aten/src/ATen/native/transformers/attention.cpp convert_boolean_attn_mask): each
    // masked layer saves its own (b, 1, s, s) (measured: mistral, gemma3_text, falcon _bf16mixed_flash).
    const double masked = a.family->sdpa_mask_always ? 1 : sliding_share(c);
    if (c.attention == Attention::flash && masked > 0 && !megatron_model(c))
        bytes += double(layers_on_stage(c)) * masked * c.compute_element * c.tokens * double(c.seq_len);
    if (holds_embedding(c)) {
        if (a.embedding_dropout > 0) bytes += nh * dropout_mask_element_bytes(c);
        if (a.embedding_norm) bytes += single_norm_bytes(c);
    }
    if (holds_head(c)) {
        // Final norm (its input is the last layer's output) and lm_head's input.
        bytes += final_norm_activation_bytes(c);
        // The last checkpointed layer's output (a norm computing in the input's dtype saves it already).
        if ((c.checkpointing == Checkpointing::full || c.checkpointing == Checkpointing::selective_op) &&
            a.family->norm_compute != NormCompute::input_dtype)
            bytes += x * nh;
        if (c.loss == Loss::chunked && c.framework->chunked_output_projection && trains_all_weights(c))
            bytes += nh * c.compute_element;  // each chunk's contiguous input copy
        // A LoRA adapter on the output projection keeps its input and its rank-sized output.
        if (!trains_all_weights(c) && adapts_head(a, c.finetune.targets))
            bytes += nh * c.compute_element +
                     c.tokens * double(c.finetune.rank) * (c.adapter_dtype == AdapterDtype::fp32 ? 4 : c.compute_element) +
                     (c.finetune.dropout > 0 ? nh * dropout_mask_element_bytes(c) : 0);
        // A 4-bit lm_head of bitsandbytes before 0.43.2 keeps its input too.
        if (bitsandbytes_keeps_inputs(c) && c.finetune.quantize_lm_head && !base_weights_need_grad(c))
            bytes += nh * c.compute_element;
        // Router logits kept for the auxiliary loss: every MoE layer's, fp32, until the loss.
        if (a.router_logits_kept) bytes += double(moe_layers(a)) * c.tokens * double(a.experts) * 4;
    }
    // With LoRA nothing before the first adapter needs a gradient: the first norm saves nothing, and
    // neither does a frozen k projection's partner q in q @ k^T.
    const Family& f = (*a.family);
    if (!base_weights_need_grad(c) && c.checkpointing != Checkpointing::full && c.checkpointing != Checkpointing::selective_op &&
        !megatron_model(c)) {
        bytes -= single_norm_bytes(c) + bitsandbytes_first_layer_unkept_bytes(c);
        if (!f.qkv && !is_mla(a) && !targeted(c, {f.k}) && c.attention == Attention::eager)
            bytes -= c.compute_element * c.tokens * double(q_width(a));
    }
    return bytes * double(micro_batches_in_flight(c));
}

// Hugging Face builds the eager causal mask as a (b, 1, s, s) tensor in the model's dtype; it lives
// through the forward, and through backward too when checkpointing holds it as a layer argument. Models
// mixing sliding-window and global layers build one of each (masking_utils.py).
double attention_mask_bytes(const Step& c) {
    if (c.attention != Attention::eager || megatron_model(c)) return 0;
    const Architecture& a = c.model;
    const bool both = a.sliding_layers > 0 && a.sliding_layers < a.layers && a.sliding_window < c.seq_len;
    return (both ? 2 : 1) * c.tokens * double(c.seq_len) * c.residual_element;
}

// MatMul4Bit's kept inputs live in a plain ctx attribute as long as the autograd graph: a loop that keeps the
// previous step's outputs (LitGPT's `logits`, lit-gpt's `loss`) keeps that step's kept inputs into the next
// forward (measured, tests/validation/stacks/litgpt2023).
double previous_step_kept_input_bytes(const Step& c) {
    if (!bitsandbytes_keeps_inputs(c) || !loop_keeps_outputs(c)) return 0;
    return double(layers_on_stage(c)) * bitsandbytes_kept_input_bytes(c) - bitsandbytes_first_layer_unkept_bytes(c) +
           (c.finetune.quantize_lm_head && holds_head(c) ? c.tokens * double(c.model.hidden) * c.compute_element : 0);
}

// The final norm (on sequence shards under sequence parallelism) and lm_head's input (whole: all-gathered).
// They sit outside the layers' FSDP units: frozen under LoRA whatever the layers' units do.
double final_norm_activation_bytes(const Step& c) {
    if (!holds_head(c)) return 0;
    const bool trains = trains_all_weights(c);
    return single_norm_bytes(c, trains) / (c.sequence_parallel ? double(c.tp) : 1) +
           (trains ? norm_output_bytes(c, 1, fp8_converts_head(c)) : 0);
}

namespace {
double last_mlp_bytes(const Step& c) { return is_moe(c.model) ? moe_mlp_bytes(c) : dense_mlp_bytes(c); }
double last_mlp_width(const Step& c) {
    const Architecture& a = c.model;
    return is_moe(a) ? double(expert_ffn(a)) * double(a.experts_per_token) + double(shared_width(a)) : double(a.ffn);
}
}  // namespace

// What the last layer's MLP half saves (its norm, the MLP): freed before backward reaches attention.
double mlp_half_activation_bytes(const Step& c) {
    if (megatron_model(c)) return 0;
    const Architecture& a = c.model;
    const double own_norms = a.norms_per_layer > 1 ? double(a.norms_per_layer) / 2 * single_norm_bytes(c) : 0;
    return own_norms + (mlp_inputs_saved(c) && !a.parallel_block ? norm_output_bytes(c, mlp_projections(a), te_fp8(c)) : 0) +
           last_mlp_bytes(c);
}

// By the time backward reaches the MLP's activation function, down_proj's input and the dropout mask
// after it are freed.
double mlp_freed_before_backward_bytes(const Step& c) {
    if (megatron_model(c)) return 0;
    const double nf = c.tokens * last_mlp_width(c);
    return (down_proj_input_saved(c) ? (te_fp8(c) ? 1 : c.compute_element) * nf : 0) +
           (residual_dropout(c) ? c.tokens * double(c.model.hidden) * dropout_mask_element_bytes(c) : 0);
}

// The gradient flowing into a layer's output (the residual stream's dtype).
double layer_output_gradient_bytes(const Step& c) {
    return c.tokens * double(c.model.hidden) * c.residual_element / double(c.tp);
}

// Under autocast a recomputed (checkpointed) layer casts its weights to 16-bit again (4-bit weights are
// dequantized one projection at a time instead, a transient like any other).
double recast_layer_weight_bytes(const Step& c) {
    const double layer = double(linear_weight_params(c.model)) / double(c.model.layers) / double(c.tp);
    if (te_fp8(c)) return layer * te_saved_weight_element_bytes(c);  // its te.Linears save fp8 weights again
    // torchao's Float8Linear casts its fp32 weights to float8 only: no 16-bit copy (stacks/fp8 Part B).
    if (!fp32_residual(c) || c.finetune.method == FinetuneMethod::qlora || c.fp8_recipe != Fp8Recipe::none) return 0;
    return layer * c.compute_element;
}

// Eager softmax backward: the fp32 gradient of the scores beside the 16-bit or fp32 gradient of the
// probabilities, then the scaled copy.
double attention_backward_transient_bytes(const Step& c) {
    if (c.attention == Attention::flash && !mla_math_fallback(c)) return 0;
    return attention_scores_elements(c) * (c.compute_element + 4) / double(c.tp);
}

// The activation function's backward temporaries (activations.cpp), calibrated on measured steps.
double mlp_backward_transient_bytes(const Step& c) {
    const double nf = c.tokens * last_mlp_width(c);
    return c.activation->backward_temps * c.compute_element * nf / double(c.tp);
}

}  // namespace vramcalc
