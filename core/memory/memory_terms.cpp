#include "memory/memory_terms.hpp"

#include <algorithm>
#include <cmath>

#include "model/families.hpp"

#include "memory/device_overheads.hpp"
#include "memory/memory_common.hpp"
#include "memory/nccl_memory.hpp"

namespace vramcalc {

using namespace detail;

namespace {

double state_element_bytes(const Step& c) {
    // torch.optim creates states with zeros_like(param); with master weights they follow the fp32 copy.
    return has_master_weights(c) || c.trainable_element == 4 ? 4 : 2;
}

double largest_trainable_tensor(const Step& c) {
    double m = 0;
    for (const Tensor& t : c.trainable()) m = std::max(m, double(t.numel()));
    return m;
}

// Bytes per parameter of a QLoRA NF4 weight: 4 bits and an fp32 absmax per 64-weight block, or with double
// quantization an 8-bit absmax per block and an fp32 constant per 256 of them (Dettmers et al. 2023, QLoRA §2).
double nf4_bytes_per_param(const Step& c) {
    return c.finetune.double_quant ? 0.5 + 1.0 / 64 + 4.0 / (64 * 256) : 0.5 + 4.0 / 64;
}

}  // namespace

// PEFT keeps LoRA adapters in fp32 whatever the base model's dtype (autocast_adapter_dtype); DeepSpeed and
// Megatron cast the whole module to 16-bit and keep fp32 master weights instead.
double trainable_element_bytes(const Config& c) {
    const bool fp32_adapters = !trains_all_weights(c) && !half_model(c) && c.adapter_dtype == AdapterDtype::fp32;
    return fp32_adapters ? 4 : weight_element_bytes(c);
}

double weight_element_bytes(const Config& c) {
    if (c.precision == Precision::fp32_true) return 4;
    if (half_base(c)) return 2;
    if (mixed(c)) return half_model(c) ? 2 : 4;  // autocast keeps fp32 weights; DeepSpeed/Megatron keep 16-bit
    return 2;
}

double gradient_element_bytes(const Config& c) {
    if (traits(c).fp32_main_grads && mixed(c)) return 4;  // main_grad buffers in fp32 (Megatron DDP)
    return trainable_element_bytes(c);                           // .grad has its parameter's dtype
}

double compute_element_bytes(const Config& c) { return c.precision == Precision::fp32_true ? 4 : 2; }

double residual_element_bytes(const Config& c) { return fp32_residual(c) ? 4 : compute_element_bytes(c); }

bool has_master_weights(const Config& c) { return mixed(c) && half_model(c); }

std::uint64_t layers_on_stage(const Config& c) { return (c.model.layers + c.pp - 1) / c.pp; }
bool holds_embedding(const Config& c) { return c.pp == 1 || c.stage == PipelineStage::first; }
bool holds_head(const Config& c) { return c.pp == 1 || c.stage == PipelineStage::last; }

// What the first stage holds, in micro-batches of all its layers: 1F1B up to pp (Narayanan et al. 2021, §2.2),
// GPipe every micro-batch of the step; the interleaved schedule pp + (pp - 1) / v with v model chunks per GPU
// (Korthikanti et al. 2022, §4.2.3, the factor 1 + (p - 1) / (p v)); the last stage one.
double micro_batches_in_flight(const Config& c) {
    const double m = double(c.grad_accum), p = double(c.pp);
    if (c.pp == 1 || c.stage == PipelineStage::last) return 1;
    switch (c.pp_schedule) {
        case PipelineSchedule::gpipe: return m;
        case PipelineSchedule::interleaved_1f1b: return std::min(m, p + (p - 1) / double(c.pp_stages_per_rank));
        case PipelineSchedule::one_f_one_b: break;
    }
    return std::min(m, p);
}

double stage_params(const Step& c) { return c.params_on_stage; }

bool trains_all_weights(const Config& c) { return c.finetune.method == FinetuneMethod::full; }

double trainable_stage_params(const Step& c) { return c.trainable_on_stage; }

// ---- Model states (Rajbhandari et al. 2020, ZeRO §3: 2Ψ weights + 2Ψ gradients + 12Ψ optimizer) ----

double weights_bytes(const Step& c) {
    if (c.offload == Offload::optimizer_and_params) return 0;  // on the CPU; gathered layers are temporaries
    const double wb = c.weight_element;
    double bytes;
    if (c.finetune.method == FinetuneMethod::qlora) {
        // bitsandbytes quantizes the layers' linear weights; prepare_model_for_kbit_training (PEFT) keeps
        // the rest (embeddings, norms, lm_head) in fp32 under mixed precision.
        double linear = double(linear_weight_params(c.model)) * layer_share(c) / double(c.tp);
        if (c.finetune.quantize_lm_head && holds_head(c)) linear += double(lm_head_params(c.model)) / double(c.tp);
        const double other = stage_params(c) - linear;
        bytes = linear * nf4_bytes_per_param(c) + other * (mixed(c) ? 4 : c.compute_element) +
                trainable_stage_params(c) * c.trainable_element;
    } else {
        bytes = stage_params(c) * wb + (!trains_all_weights(c) ? trainable_stage_params(c) * c.trainable_element : 0);
    }
    if (shards_params(c)) bytes /= c.data_parallel;
    return bytes + te_weight_cache_bytes(c) + fp8_scaling_state_bytes(c);
}

double gradients_bytes(const Step& c) {
    // FSDP 1's mixed units keep a gradient of the whole flat parameter (every layer's weights).
    const double n = fsdp1_mixed_units(c) ? trainable_stage_params(c) + double(layers_params(c.model)) * layer_share(c) / double(c.tp)
                                          : trainable_stage_params(c);
    if (traits(c).offload == OffloadSupport::fsdp && offloaded(c)) return 0;  // reduce-scattered, then copied to the CPU
    double bytes = n * c.gradient_element;
    if (shards_gradients(c)) bytes /= c.data_parallel;
    if (shards_gradients(c) && traits(c).offload == OffloadSupport::deepspeed && offloaded(c)) bytes = 0;  // reduced through buckets straight to the CPU
    return bytes;
}

// DeepSpeed builds an fp32 gradient for its fp32 master partition inside step() and drops it after
// ("get rid of the fp32 gradients", stage_1_and_2.py); its estimator counts it in the 16 bytes per sharded
// parameter (estimate_zero2_model_states_mem_needs).
double fp32_gradient_partition_bytes(const Step& c) {
    if (!has_master_weights(c) || !traits(c).step_builds_fp32_gradients || offloaded(c)) return 0;
    return trainable_stage_params(c) * 4 / (shards_master(c) ? c.data_parallel : 1);
}

// Megatron allocates its gradient buffer with the model, DeepSpeed its gradient partitions with the engine;
// plain PyTorch creates .grad in backward and frees it at zero_grad(set_to_none=True).
bool gradients_allocated_up_front(const Config& c) { return traits(c).states_up_front; }

double master_weights_bytes(const Step& c) {
    if (!has_master_weights(c) || offloaded(c)) return 0;
    const double n = trainable_stage_params(c) * 4;
    // ZeRO-1+ and Megatron's distributed optimizer shard the fp32 copy with the optimizer states.
    return shards_master(c) ? n / c.data_parallel : n;
}

double optimizer_states_stage_bytes(const Step& c) {
    const double sb = state_element_bytes(c);
    // Element-wise states need no tensor list (estimates run in a loop: keep them allocation-free).
    switch (c.optimizer) {
        case Optimizer::adamw:
        case Optimizer::paged_adamw: return 2 * trainable_stage_params(c) * sb;  // exp_avg, exp_avg_sq
        case Optimizer::lion:                                              // Chen et al. 2023: one momentum
        case Optimizer::sgd_momentum: return trainable_stage_params(c) * sb;  // momentum_buffer
        case Optimizer::sgd: return 0;
        case Optimizer::adamw_8bit:
        case Optimizer::paged_adamw_8bit:
        case Optimizer::adafactor: break;
    }
    double bytes = 0;
    for (const Tensor& t : c.trainable()) {
        const double n = double(t.numel()), k = double(t.count);
        if (c.optimizer == Optimizer::adamw_8bit || c.optimizer == Optimizer::paged_adamw_8bit)
            // bitsandbytes: 8-bit states with an fp32 absmax per 256-element block; tensors under
            // 4096 elements keep fp32 states (optim/optimizer.py, min_8bit_size).
            bytes += k * (n < 4096 ? 2 * n * 4 : 2 * (n + 4 * std::ceil(n / 256)));
        else  // Shazeer & Stern 2018 (Adafactor): factored second moment, a row and a column vector per matrix
            bytes += k * (t.cols > 1 ? double(t.rows + t.cols) : n) * sb;
    }
    return bytes;
}

namespace {
double device_optimizer_states_bytes(const Step& c) {
    if (offloaded(c)) return 0;
    const double bytes = optimizer_states_stage_bytes(c);
    return shards_optimizer(c) ? bytes / c.data_parallel : bytes;
}
}  // namespace

namespace {
// bitsandbytes pages only the states of tensors of 100,000 elements or more (optim/optimizer.py
// get_state_buffer: smaller ones get zeros_like on the device): their share of the trainable elements.
double paged_share(const Step& c) {
    if (!paged(c.optimizer)) return 0;
    double large = 0, all = 0;
    for (const Tensor& t : c.trainable()) {
        const double n = double(t.numel()) * double(t.count);
        all += n;
        if (t.numel() >= 100000) large += n;
    }
    return all > 0 ? large / all : 0;
}
}  // namespace

double optimizer_states_bytes(const Step& c) { return device_optimizer_states_bytes(c) * (1 - paged_share(c)); }

// bitsandbytes' paged states (optim/optimizer.py get_state_buffer -> F.get_paged, cudaMallocManaged): on the
// GPU while resident and evicted to RAM under pressure; torch.cuda.max_memory_allocated does not see them.
double paged_optimizer_states_bytes(const Step& c) { return device_optimizer_states_bytes(c) * paged_share(c); }

// ---- Transient and fixed costs ----

// torch.autocast caches the 16-bit casts of leaf weights that need grad until the forward's autocast
// region ends; the linears save them for backward (torch/csrc/autograd and aten/src/ATen/autocast_mode.cpp).
double autocast_weight_copy_bytes(const Step& c) {
    if (!autocast(c)) return 0;
    double experts = 0;  // routed experts: 3-D parameters, not nn.Linear
    if (is_moe(c.model))
        for (const Linear& l : c.mlp_linears())
            if (l.name.rfind("experts.", 0) == 0) experts += double(l.in * l.out * l.count * (l.layers ? l.layers : c.model.layers));
    // Routed experts through grouped_mm (not autocast-enabled) run on their fp32 weights: no cast. FP8's nn.Linear
    // replacements quantize the fp32 weights themselves: torchao's Float8Linear (stacks/fp8 Part B), TE's te.Linear.
    const double projections = c.fp8_recipe != Fp8Recipe::none ? 0 : double(linear_weight_params(c.model)) - experts;
    const double cast = projections + ((*c.model.family).experts_see_every_token ? experts : 0);
    // Checkpointed layers cast again when recomputed; only lm_head's cast is held from the forward.
    const double layers = c.checkpointing == Checkpointing::full ? 0 : cast * layer_share(c) / double(c.tp);
    const double head = fp8_converts_head(c) ? 0 : double(c.model.vocab * c.model.hidden) / double(c.tp);
    const double linear = layers + head;
    double bytes = linear * c.compute_element;
    if (c.finetune.method == FinetuneMethod::qlora) bytes = double(c.model.vocab * c.model.hidden) * 2;
    if (half_base(c)) bytes = trainable_stage_params(c) * c.compute_element;  // only the fp32 adapters cast
    if (shards_params(c)) return 0;  // FSDP casts per unit (see gathered_parameter_bytes)
    return bytes;
}

namespace {

// The largest n[i-1] + 2 n[i] over the trainable tensors in the order optimizer.step() walks them: one
// layer's tensors stand for all (the pattern repeats), plus the step from one layer into the next.
double single_tensor_step_elements(const Step& c) {
    std::vector<double> before, layer, after;
    for (const Tensor& t : c.trainable()) {
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

namespace {

// The temporaries of stepping one tensor of n elements on its own: single-tensor AdamW's sqrt(v) and quotient
// (_single_tensor_adamw in torch/optim/adamw.py), Lion's exp_avg.clone() and interpolation, Adafactor's
// grad^2, row/column approximation and update; the fused kernels keep none.
double one_tensor_step_bytes(const Step& c, double n) {
    const double sb = state_element_bytes(c);
    switch (c.optimizer) {
        case Optimizer::adamw: return c.optimizer_impl == OptimizerImpl::fused ? 0 : 2 * n * sb;
        case Optimizer::lion: return 2 * n * sb;
        case Optimizer::adafactor: return 3 * n * 4;
        default: return 0;
    }
}

}  // namespace

double optimizer_step_temporary_bytes(const Step& c) {
    if (c.offload != Offload::none) return 0;  // the step runs on the CPU
    const double sb = state_element_bytes(c);
    // DeepSpeed and Megatron step their flat fp32 partitions with fused multi-tensor kernels.
    if (half_model(c) && c.optimizer == Optimizer::adamw) return 0;
    // FSDP 1 steps one flat parameter per unit; FSDP 2 keeps every parameter its own shard.
    const bool flat = fsdp_units(c) && c.fsdp_version == 1 && base_weights_need_grad(c);
    double shard = optimizer_states_bytes(c) > 0 ? trainable_stage_params(c) : 0;
    if (c.zero >= traits(c).zero_collectives_from) shard /= c.data_parallel;
    auto largest = [&] { return flat ? double(layer_params(c.model)) / (c.zero >= 2 ? c.data_parallel : 1) : largest_trainable_tensor(c); };
    switch (c.optimizer) {
        case Optimizer::adamw:
            if (c.optimizer_impl == OptimizerImpl::fused) return 0;
            if (c.optimizer_impl == OptimizerImpl::single_tensor) {
                // denom = (sqrt(v) / bc2).add_(eps): sqrt and quotient live together, while the previous
                // parameter's denom has not been freed yet (_single_tensor_adamw in torch/optim/adamw.py).
                return flat ? one_tensor_step_bytes(c, largest()) : single_tensor_step_elements(c) * sb;
            }
            // _multi_tensor_adamw: 1.13 keeps sqrt(v) and sqrt(v)+eps as two lists; 2.x adds eps in place.
            return (c.torch == TorchVersion::v1_13 ? 2 : 1) * shard * sb;
        case Optimizer::lion:
        case Optimizer::adafactor: return one_tensor_step_bytes(c, largest());
        case Optimizer::adamw_8bit:  // fused blockwise kernels
        case Optimizer::paged_adamw:
        case Optimizer::paged_adamw_8bit:
        case Optimizer::sgd:
        case Optimizer::sgd_momentum: return 0;
    }
    return 0;
}

// torchtune's _optimizer_in_bwd (training/_optim.py / recipes' optimizer_in_bwd): a post-accumulate-grad hook
// runs optimizer.step() for that parameter and zeroes its gradient.
double in_backward_step_bytes(const Step& c) {
    const double n = largest_trainable_tensor(c);
    return n * c.gradient_element + one_tensor_step_bytes(c, n);
}

// Autograd sums the weight gradients of torchtune's output chunks pairwise: the running sum, the next
// chunk's gradient and the result (three V x h tensors) beside the activations, after the loss's backward.
double chunked_head_gradient_bytes(const Step& c) {
    if (c.loss != Loss::chunked || !c.framework->chunked_output_projection || !trains_all_weights(c) ||
        !holds_head(c))
        return 0;
    return 3 * double(c.model.vocab) * double(c.model.hidden) * c.gradient_element / double(c.tp);
}

double communication_buffer_bytes(const Step& c) {
    const double n = trainable_stage_params(c);
    switch (traits(c).buckets) {
        case GradientBuckets::ddp:
            // DDP's Reducer copies gradients into flat buckets covering every parameter
            // (torch/csrc/distributed/c10d/reducer.cpp, gradient_as_bucket_view=False).
            return data_parallel(c) > 1 ? n * c.gradient_element : 0;
        case GradientBuckets::deepspeed:
            // reduce_bucket_size defaults to 5e8 elements (deepspeed/runtime/zero/config.py).
            return c.zero >= 1 ? std::min(5e8, n) * c.weight_element : 0;
        case GradientBuckets::none: return 0;  // FSDP's reduce-scatter input is a backward-only buffer
    }
    return 0;
}

double gathered_parameter_bytes(const Step& c, bool in_backward) {
    // FSDP SHARD_GRAD_OP keeps the unsharded compute-dtype parameters from forward to backward.
    if (shards_params(c) && !gathers_per_unit(c)) return stage_params(c) * c.compute_element;
    if (!gathers_per_unit(c)) return 0;
    // The layer being computed and the one prefetched. DeepSpeed caps what is gathered at
    // stage3_max_live_parameters (1e9 by default, deepspeed/runtime/zero/config.py). FSDP's root unit
    // (embedding, final norm, lm_head under the usual per-layer wrapping) stays unsharded from its forward to
    // the end of backward: FSDP 1 does not reshard the root, FSDP 2's root defaults to
    // reshard_after_forward=False (measured, tests/validation/stacks/fsdp).
    // torchtitan from 0.2.0 (models/llama3/infra/parallelize.py apply_fsdp) shards the embedding as its own
    // unit, resharded after forward, and keeps only the [norm, output] unit and no layer unsharded at the end of
    // forward (measured, tests/validation/stacks/torchtitan).
    const bool head_unit = fsdp_units(c) && c.framework->fsdp_layout == FsdpLayout::head_unit_kept;
    // Before backward, the last layer is unsharded only once FSDP prefetched it, i.e. when the loss is the wrapped
    // model's output (measured: tests/validation/stacks/fsdp with, litgpt2023 and torchtitan without).
    const bool prefetched = !head_unit && (!fsdp_units(c) || c.framework->loss_in_model);
    double params = (in_backward ? 2 : prefetched ? 1 : 0) * double(layer_params(c.model));
    if (traits(c).max_live_parameters > 0) params = std::min(params, traits(c).max_live_parameters);
    // With pipeline stages torchtitan keeps every layer of the stage unsharded from its first micro-batch's
    // forward to the end of backward, to all-gather once per step (parallelize_llama.py apply_fsdp:
    // reshard_after_forward False under PP).
    if (fsdp_units(c) && c.pp > 1) params = double(layers_params(c.model)) * layer_share(c);
    if (fsdp_units(c)) {
        if (holds_embedding(c) && !head_unit) params += double(embedding_params(c.model));
        if (holds_head(c) && !(head_unit && in_backward && c.pp == 1))  // resharded once its backward is done
            params += double(norm_params(c.model) + lm_head_params(c.model));
    }
    return params * c.compute_element / double(c.tp);  // tensor-parallel shards gather over data ranks only
}

// FULL_SHARD's backward prefetch at the first layer: the next unit is the root, unsharded since forward (FSDP 1
// never reshards it, FSDP 2's root keeps reshard_after_forward=False), so one layer fewer is gathered. (torchtitan
// 0.2's embedding is a unit of its own: it is prefetched there instead.)
double first_layer_unprefetched_bytes(const Step& c) {
    if (!fsdp_units(c) || !gathers_per_unit(c) || c.pp > 1 || c.framework->fsdp_layout != FsdpLayout::root_kept) return 0;
    return double(layer_params(c.model)) * c.compute_element / double(c.tp);
}

namespace {
// FSDP's unsharded gradients: in the compute dtype, or fp32 where FSDP 2's MixedPrecisionPolicy reduces in fp32
// (reduce-scatter input; _fsdp_param.py to_accumulated_grad_if_needed upcasts the accumulated gradient).
double fsdp_gradient_element_bytes(const Step& c) {
    return c.fsdp_version == 2 && mixed(c) && c.framework->fsdp_reduce_fp32 ? 4 : c.compute_element;
}
}  // namespace

// FSDP reduce-scatters one unit's unsharded gradients at a time during backward.
double reduce_scatter_bytes(const Step& c) {
    if (!fsdp_units(c) || !shards_gradients(c)) return 0;
    const double unit = base_weights_need_grad(c) ? double(layer_params(c.model)) / double(c.tp)
                                                  : trainable_stage_params(c) / double(layers_on_stage(c));
    return unit * fsdp_gradient_element_bytes(c);
}

// Gradient accumulation under FSDP 1's no_sync() or FSDP 2's set_requires_gradient_sync(False) (what
// accelerate does between optimizer steps, and torch.distributed.pipelining for every micro-batch but the
// last): every unit keeps its unsharded gradient on every rank until the synchronised micro-batch.
double unsharded_accumulated_gradient_bytes(const Step& c) {
    if (!accumulates_unsharded(c) || offloaded(c)) return 0;
    const double n = fsdp1_mixed_units(c) ? double(layers_params(c.model)) * layer_share(c) / double(c.tp) + trainable_stage_params(c)
                                          : trainable_stage_params(c);
    return n * fsdp_gradient_element_bytes(c);
}

// Context parallelism's ring attention (torch/distributed/tensor/experimental/_attention.py, allgather
// rotation, torchtitan's default): each attention call all-gathers k and v, repeated to every query head,
// over the whole sequence; forward and backward alike.
double ring_attention_bytes(const Step& c) {
    if (c.cp < 2) return 0;
    return 2 * double(c.micro_batch) * double(c.seq_len) * double(q_width(c.model)) * c.compute_element / double(c.tp);
}

// torch.distributed.pipelining's PipelineStage keeps a receive (first stage: gradient) buffer per micro-batch,
// one stage boundary's activation each, across steps (measured, tests/validation/stacks/torchtitan).
double pipeline_buffer_bytes(const Step& c) {
    if (!fsdp_units(c) || c.pp < 2) return 0;
    return double(c.grad_accum) * c.tokens * double(c.model.hidden) * c.compute_element /
           (c.sequence_parallel ? double(c.tp) : 1);
}

namespace {

// torchao's Float8Linear (float8/float8_linear.py matmul_with_hp_or_float8_args) saves its high-precision input and
// weight for backward and casts both to float8 inside each matmul, again in backward with the output's gradient
// (twice: for dgrad and wgrad): one linear's float8 copies at a time (rowwise scaling adds an fp32 scale per row).
// Eager, each cast of n elements peaks at 9n B (fp32 copy times the scale, fp32 clamp, the float8 result) before
// it holds n; torch.compile fuses that away (measured on the CPU, tests/validation/stacks/fp8).
double torchao_cast_bytes(const Step& c, bool backward) {
    const double n = c.tokens, t = double(c.tp), cast_peak = c.compile ? 0 : 8;  // above the n B it leaves
    const bool rowwise = c.fp8_recipe == Fp8Recipe::torchao_rowwise;
    double most = 0;
    for (const Linear& l : c.layer_linears()) {
        const double x = n * double(l.in), out = double(l.out) / t, w = double(l.in) * out, g = n * out;
        double bytes = x + w + cast_peak * std::max(x, w) + (rowwise ? 4 * (n + out) : 0);
        if (backward) bytes = 2 * g + w + x + cast_peak * std::max({g, w, x}) + (rowwise ? 8 * n + 4 * out : 0);
        most = std::max(most, bytes);
    }
    return most;
}

// Hopper and Ada run FP8 GEMMs in the TN layout only, so a tensor both GEMMs read keeps its data and a transposed
// copy; Blackwell (B200) reads one copy both ways (csrc/quantizer.cpp with_transpose; stacks/fp8 A.2).
double fp8_both_layouts_element_bytes(const Step& c) { return sm_version(c.gpu) >= 100 ? 1 : 2; }

// One te.Linear's fp8 copies beyond what it saves (linear.py _linear_forward, _linear_backward; stacks/fp8 A.3).
// Forward: its input's row-wise copy, dropped after the GEMM (Blackwell saves that one copy), and under FSDP 2 its
// row-wise weight. Backward: the output gradient in both layouts, and under FSDP 2 the weight quantized again.
double te_cast_bytes(const Step& c, bool backward) {
    const double n = c.tokens, t = double(c.tp), both = fp8_both_layouts_element_bytes(c);
    double most = 0;
    for (const Linear& l : c.layer_linears()) {
        const double x = n * double(l.in), out = double(l.out) / t, w = double(l.in) * out, g = n * out;
        const double rowwise_input = both > 1 ? x : 0;
        const double bytes = backward ? both * g + (fsdp2(c) ? both * w : 0) : rowwise_input + (fsdp2(c) ? w : 0);
        most = std::max(most, bytes);
    }
    return most;
}

}  // namespace

// TE's saved fp8 weights sit here too: alive from the forward to the linears' backward, like autocast's copies.
double float8_cast_bytes(const Step& c, bool backward) {
    switch (c.fp8_recipe) {
        case Fp8Recipe::none: return 0;
        case Fp8Recipe::torchao_tensorwise:
        case Fp8Recipe::torchao_rowwise: return torchao_cast_bytes(c, backward);
        case Fp8Recipe::te_delayed:
        case Fp8Recipe::te_current: return te_cast_bytes(c, backward) + (backward ? 0 : te_saved_weight_bytes(c));
    }
    return 0;
}

// ---- Transformer Engine FP8, as read from TE v2.18 (tests/validation/stacks/fp8 Part A) ----

bool te_fp8(const Config& c) { return c.fp8_recipe == Fp8Recipe::te_delayed || c.fp8_recipe == Fp8Recipe::te_current; }

// accelerate's convert_model makes every nn.Linear with dims divisible by 16 a te.Linear, lm_head included (Liger's
// fused linear loss reads its weight, no te.Linear call); Megatron-LM's output layer stays bf16 (stacks/fp8 A.8).
bool fp8_converts_head(const Config& c) {
    return te_fp8(c) && !megatron_model(c) && c.model.vocab % 16 == 0 && c.loss != Loss::fused_linear;
}

// Each te.Linear saves the fp8 weight it quantized in forward until its backward (linear.py wt_save = weightmat;
// stacks/fp8 A.3): both layouts. Not under FSDP 2, which quantizes it again in backward ("Issue #2681"), nor
// Megatron-LM, whose copy is cached (te_weight_cache_bytes).
double te_saved_weight_element_bytes(const Step& c) {
    return !te_fp8(c) || megatron_model(c) || fsdp2(c) ? 0 : fp8_both_layouts_element_bytes(c);
}

// Every converted linear's, at the end of forward: accelerate passes no is_first_microbatch, so nothing is cached
// (stacks/fp8 A.8); TE quantizes the gathered weight, so ZeRO-3 and FSDP 1 hold whole copies. Checkpointed layers
// save none (recast_layer_weight_bytes has the recomputed layer's).
double te_saved_weight_bytes(const Step& c) {
    const double stage = double(layers_on_stage(c));
    const double checkpointed = c.checkpointing == Checkpointing::full ? double(layers_on_stage(c) / c.checkpoint_every) : 0;
    const double layers = double(linear_weight_params(c.model)) / double(c.model.layers) * (stage - checkpointed);
    const double head = fp8_converts_head(c) && holds_head(c) ? double(c.model.vocab * c.model.hidden) : 0;
    return (layers + head) / double(c.tp) * te_saved_weight_element_bytes(c);
}

// Megatron-LM passes is_first_microbatch, so each te.Linear keeps its fp8 weight in _fp8_workspaces across steps
// (linear.py Linear.forward, cache_name "weight"; stacks/fp8 A.3): the layers' linears, both layouts.
double te_weight_cache_bytes(const Step& c) {
    if (!te_fp8(c) || !megatron_model(c)) return 0;
    return double(linear_weight_params(c.model)) * layer_share(c) / double(c.tp) * fp8_both_layouts_element_bytes(c);
}

// DelayedScaling: per GEMM an fp32 scale and amax history of its 3 forward and 2 backward quantizers
// (quantization.py DelayedScalingRecipeState, module/base.py set_meta_tensor), (L + 1) x 5 x 4 B; L = 1024 by
// default (TE, accelerate's TERecipeKwargs), 1 in Megatron-LM (stacks/fp8 A.1). Current scaling keeps none
// (tensor/float8_tensor.py Float8CurrentScalingQuantizer).
double fp8_scaling_state_bytes(const Step& c) {
    if (c.fp8_recipe != Fp8Recipe::te_delayed) return 0;
    const bool megatron = megatron_model(c);
    // Megatron's layer: qkv, proj, fc1, fc2 (gpt_layer_specs.py); accelerate: one te.Linear per nn.Linear.
    const double per_layer = megatron ? 4 : double(c.layer_linears().size());
    const double gemms = double(layers_on_stage(c)) * per_layer + (fp8_converts_head(c) && holds_head(c) ? 1 : 0);
    return gemms * ((megatron ? 1 : 1024) + 1) * 5 * 4;
}

// PyTorch's default cuBLAS workspace (device_overheads.hpp), taken from the caching allocator.
double cublas_workspace_bytes(const Step& c) {
    return c.device == Device::cpu ? 0 : double(cublas_workspaces(sm_version(c.gpu)).cublas);
}

// The CUDA context (driver, kernels loaded lazily, cuBLAS/cuDNN handles) lives outside the caching
// allocator: nvidia-smi shows it, max_memory_allocated does not. An allowance until measured per GPU.
double cuda_context_bytes(const Step& c) { return c.device == Device::cpu ? 0 : 512.0 * 1024 * 1024; }

// NCCL's buffers (nccl_memory.hpp) for the process groups the run creates, each its own communicator: the data-
// parallel group (DDP, ZeRO, FSDP; with context parallelism inside it, torchtitan's dp_shard x cp mesh), the
// tensor- and context-parallel groups, and the pipeline's, which sends to the next stage. Ranks are laid out tensor-
// parallel first, then data (and context) parallel, then pipeline (Megatron-LM's and torchtitan's mesh order).
// RCCL's are not modelled.
double nccl_bytes(const Step& c) {
    if (c.device == Device::cpu || c.gpu.rocm || c.gpus < 2) return 0;
    const NcclRelease release = nccl_release(torch_release(c.torch));
    const NodeLinks links{c.gpu.fabric != Fabric::host, c.gpu.fabric == Fabric::nvswitch, sm_version(c.gpu)};
    const std::uint64_t node = std::min(c.gpus_per_node, c.gpus);
    auto group = [&](std::uint64_t ranks, std::uint64_t stride, bool collectives, unsigned peers) {
        const std::uint64_t local = std::min(ranks, std::max<std::uint64_t>(1, node / stride));
        return double(nccl_memory({unsigned(ranks), unsigned(local), collectives, peers}, links, release).total());
    };
    const std::uint64_t dp = data_parallel(c);
    return group(c.tp, 1, true, 0) + group(dp, c.tp, true, 0) + group(c.cp, c.tp, true, 0) +
           group(c.pp, c.tp * dp, false, 1);
}

// Reserved minus allocated: the caching allocator rounds blocks (512 B, 2 MiB for requests over 1 MiB)
// and keeps freed blocks cached; an allowance of 5% of the peak, not derived.
double allocator_overhead_bytes(const Step& c, double peak_allocated) {
    return c.device == Device::cpu ? 0 : 0.05 * peak_allocated;
}

// The caching allocator keeps one pool per stream: a freed block serves only allocations on the stream it was
// allocated on (c10/cuda/CUDACachingAllocator.cpp, get_free_block matches BlockPool and stream). FSDP 2 allocates
// each unit's reduce-scatter output, which becomes its sharded gradient, on the reduce-scatter stream, and the
// all-gather output on the all-gather copy-in stream, keeping the previous unit's until the next all-gather
// (torch 2.13 fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce, foreach_all_gather; _fsdp_param_group.py
// wait_for_unshard); FSDP 1 the sharded gradient on the post-backward stream and the unsharded flat parameter on
// the unshard stream, two units at most in flight (fsdp/_runtime_utils.py _reduce_grad, _unshard; limit_all_gathers).
// zero_grad frees the gradients into the reduce-scatter pool, where they wait for the next backward: cached but free
// whenever they are not live; the all-gather pool holds one unit free outside backward. Both are released by the
// allocator's free-and-retry before it raises an out-of-memory error (release_cached_blocks: whole segments).
double collective_stream_cached_bytes(const Step& c, const Phase& peak) {
    if (c.device == Device::cpu || !fsdp_units(c) || !gathers_per_unit(c)) return 0;
    // The sharded gradients live at the peak (under unsharded accumulation those of earlier micro-batches are not).
    const double live = accumulates_unsharded(c) && peak.name != "optimizer_step" ? 0 : peak.terms.gradients;
    const double gradients = shards_gradients(c) ? std::max(0.0, gradients_bytes(c) - live) : 0;
    const double gathered = peak.name == "backward" ? 0 : double(layer_params(c.model)) * c.compute_element / double(c.tp);
    return gradients + gathered;
}

// DeepSpeed's estimators (stage_1_and_2.py / stage3.py) size offload RAM with a 1.5x buffer factor:
// 16 bytes per parameter for the optimizer (fp32 master, gradient, two states), 18 with 16-bit parameters.
// FSDP's CPU offload keeps the fp32 parameters themselves there, with no separate master copy.
double offloaded_activation_bytes(const Step& c) {
    if (!c.activation_offload) return 0;
    Config kept = c;
    kept.activation_offload = false;
    return activations_bytes(Step(kept)) - activations_bytes(c);
}

double cpu_offload_bytes(const Step& c) {
    if (!offloaded(c)) return offloaded_activation_bytes(c);
    const double trainable = !trains_all_weights(c) ? c.adapter_params
                                          : double(total_params(c.model));
    const double master = traits(c).mixed == MixedWeights::fsdp_cast ? 0 : 4;  // FSDP offloads fp32 parameters, no master
    double bytes = trainable * (master + 4) + optimizer_states_stage_bytes(c);
    if (c.offload == Offload::optimizer_and_params) bytes += double(total_params(c.model)) * c.weight_element;
    return bytes * 1.5 + offloaded_activation_bytes(c);
}

}  // namespace vramcalc
