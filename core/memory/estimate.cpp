#include "memory/estimate.hpp"

#include <algorithm>
#include <cmath>

#include "memory/memory_common.hpp"
#include "memory/memory_terms.hpp"
#include "memory/model_loading.hpp"
#include "memory/phases.hpp"
#include "model/architecture.hpp"
#include "setup/training_methods.hpp"

namespace vramcalc {

namespace {

// The first weight gradient backward produces in a layer: down_proj's (all experts' at once in an MoE layer).
double down_projection_params(const Architecture& a) {
    return double(a.hidden) * (is_moe(a) ? double(a.experts) * double(expert_ffn(a)) : double(a.ffn));
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

// Fixed for the whole step: model states and buffers that live from setup to the end.
Terms resident(const Step& c) {
    Terms t;
    t.weights = weights_bytes(c);
    t.optimizer_states = optimizer_states_bytes(c);
    t.master_weights = master_weights_bytes(c);
    t.gradients = gradients_allocated_up_front(c) ? gradients_bytes(c) : 0;
    t.temporaries = cublas_workspace_bytes(c) + communication_buffer_bytes(c) + pipeline_buffer_bytes(c);
    return t;
}

namespace {

// torch.optim and bitsandbytes create optimizer states in the first step(); DeepSpeed's ZeRO optimizers in their
// constructor (runtime/zero/stage_1_and_2.py initialize_optimizer_states); Megatron-LM's are counted from the start.
bool states_before_first_step(const Step& c) {
    return traits(c).states_up_front;
}

}  // namespace

// With longest_batch_first, the run's first micro-batch: no earlier micro-batch's gradients, no previous step's
// logits or kept inputs, perhaps no states.
std::vector<Moment> supervised_moments(const Step& c) {
    const bool first = c.longest_batch_first;
    const double grads = gradients_bytes(c);
    // Gradients of earlier micro-batches stay while later ones run forward and backward.
    // (FSDP accumulates unsharded gradients instead, and shards them in the last micro-batch's backward.)
    const double fsdp_accumulated = unsharded_accumulated_gradient_bytes(c);
    const double carried_grads = first && !gradients_allocated_up_front(c) ? 0
                                 : fsdp_accumulated > 0                    ? fsdp_accumulated
                                 : gradients_allocated_up_front(c) || c.grad_accum > 1 ? grads
                                                                                       : 0;
    const double previous_step_logits = first ? 0 : logits_step_bytes(c);  // the loop's, until forward returns
    const double previous_step_inputs = first ? 0 : previous_step_kept_input_bytes(c);
    const double mask = attention_mask_bytes(c);
    const bool recompute = c.checkpointing == Checkpointing::full;
    const double forward_backward_buffers = gathered_parameter_bytes(c, false) + autocast_weight_copy_bytes(c);
    const double backward_gathered = gathered_parameter_bytes(c, true) - gathered_parameter_bytes(c, false);

    // The micro-batch's start: the model states, the earlier micro-batches' gradients, what the loop kept of the
    // previous step.
    Terms start = resident(c);
    if (first && !states_before_first_step(c)) start.optimizer_states = 0;
    start.gradients = carried_grads;
    start.activations = previous_step_inputs;
    start.logits = previous_step_logits;

    // End of forward, inside the loss: every saved activation, the logits and their fp32 upcast. The eager
    // mask died with the base model's forward unless checkpointing holds it for recomputation.
    Terms forward = start;
    forward.activations = activations_bytes(c) + (recompute ? mask : 0) + previous_step_inputs;
    // (The loop's kept logits at the forward peak are the previous step's: measured, stacks/litgpt2023.)
    forward.logits = logits_forward_peak_bytes(c) - logits_step_bytes(c) + previous_step_logits;
    forward.temporaries += forward_backward_buffers + float8_cast_bytes(c, false);
    // Inside a 4-bit lm_head's matmul, before the loss: its dequantized weight beside the output being written
    // (and the loop's logits of the previous step).
    Terms head_forward = forward;
    head_forward.logits = previous_step_logits;
    head_forward.temporaries += dequantized_head_bytes(c) + logits_forward_output_bytes(c);

    // Start of backward, at log-softmax's backward: the fp32 logits chain at its largest.
    Terms loss = forward;
    loss.activations = activations_bytes(c) + (recompute ? mask : 0);
    loss.logits = logits_backward_peak_bytes(c);

    // The output projection's backward once the loss's is done (only where its chunks' gradients are summed).
    Terms head_backward = loss;
    head_backward.logits = logits_step_bytes(c);
    head_backward.temporaries += chunked_head_gradient_bytes(c);

    // Backward through the last layer, once the loss and the final norm are done: first its MLP, then its
    // attention with the MLP half freed. Checkpointing recomputes the last layer (full) or its attention
    // scores (selective) first.
    double recomputed = 0, whole_layer = layer_activation_bytes(c);  // whole_layer: as saved without checkpointing
    if (c.checkpointing != Checkpointing::none) {
        const Step& inner = c.saving_everything();
        recomputed = layer_activation_bytes(inner) - (recompute ? 0 : whole_layer);
        whole_layer = layer_activation_bytes(inner);
    }
    // Bytes of gradient per trainable parameter, for the gradients backward has produced so far.
    const double grad_per_param = trains_all_weights(c) ? grads / trainable_stage_params(c) : 0;
    const double head_grads = holds_head(c) ? grad_per_param * double(c.model.vocab * c.model.hidden) / double(c.tp) : 0;
    Terms mlp_backward = loss;
    mlp_backward.logits = logits_step_bytes(c);  // what the training loop keeps (LitGPT's `logits`)
    mlp_backward.activations = loss.activations - final_norm_activation_bytes(c) + recomputed +
                               layer_output_gradient_bytes(c) - mlp_freed_before_backward_bytes(c);
    mlp_backward.gradients =
        std::max(carried_grads, head_grads + grad_per_param * double(down_projection_params(c.model)) / double(c.tp));
    // FSDP's unsharded gradients in the layer's backward: a unit's worth where each micro-batch reduce-scatters
    // (the previous unit's still in flight), else the unit's own produced so far, down_proj's by the MLP's
    // backward (measured: stacks/fsdp, stacks/torchtitan; stacks/litgpt2023 accumulating under no_sync).
    const double unit_grads = reduce_scatter_bytes(c);
    const double down_share = std::min(1.0, down_projection_params(c.model) / double(layer_params(c.model)));
    const double mlp_unit_grads = detail::accumulates_unsharded(c) ? unit_grads * down_share : unit_grads;
    mlp_backward.temporaries += backward_gathered + mlp_unit_grads + mlp_backward_transient_bytes(c) + float8_cast_bytes(c, true) +
                                (recompute ? recast_layer_weight_bytes(c) : 0);
    Terms attention_backward = mlp_backward;
    attention_backward.activations -= mlp_half_activation_bytes(c) - mlp_freed_before_backward_bytes(c);
    attention_backward.gradients =
        std::max(carried_grads, head_grads + grad_per_param * double(mlp_params(c.model)) / double(c.tp));
    attention_backward.temporaries = loss.temporaries + backward_gathered + unit_grads +
                                     attention_backward_transient_bytes(c) + ring_attention_bytes(c) +
                                     (recompute ? recast_layer_weight_bytes(c) : 0);
    if (c.optimizer_in_backward)  // gradients never accumulate: one parameter is stepped at a time
        for (Terms* t : {&mlp_backward, &attention_backward})
            t->gradients = 0, t->temporaries += in_backward_step_bytes(c);
    // The end of the unit's backward: its gradients and their flat copy for the reduce-scatter (FSDP 1 flattens
    // them into the accumulated or reduced flat gradient), the layer's own activations gone.
    Terms unit_end = attention_backward;
    unit_end.activations = loss.activations - final_norm_activation_bytes(c) - layer_activation_bytes(c) +
                           layer_output_gradient_bytes(c);
    unit_end.temporaries = loss.temporaries + backward_gathered + 2 * unit_grads;
    // Shares of the gradients backward has produced before the second layer's and before the first layer's
    // backward (what is left: those layers' own, and the embedding's).
    const double layer_own = trains_all_weights(c) ? double(layer_params(c.model)) / double(c.tp)
                                                   : trainable_stage_params(c) / double(layers_on_stage(c));
    const double embedding_own =
        trains_all_weights(c) && holds_embedding(c) ? double(embedding_params(c.model)) / double(c.tp) : 0;
    const double done_before_second = std::max(0.0, 1 - (2 * layer_own + embedding_own) / trainable_stage_params(c));
    const double done_before_first = std::max(0.0, 1 - (layer_own + embedding_own) / trainable_stage_params(c));
    const double produced = fsdp_accumulated > 0 ? fsdp_accumulated : grads;
    // The run's first micro-batch has no earlier gradients: its highest unit end is the second layer's, the last
    // with a layer to prefetch (measured, stacks/litgpt2023).
    if (first) unit_end.gradients = std::max(carried_grads, produced * done_before_second);

    // The optimizer step: all gradients (and DeepSpeed's fp32 partition), the implementation's temporaries.
    Terms step = resident(c);
    step.gradients = grads + fp32_gradient_partition_bytes(c);
    step.temporaries += optimizer_step_temporary_bytes(c);
    step.logits = logits_step_bytes(c);
    if (c.optimizer_in_backward) {  // the last parameters' steps run at the end of backward
        step.gradients = 0;
        step.temporaries = resident(c).temporaries + in_backward_step_bytes(c);
    }

    // Backward through the first layer, the last one reached: every other gradient exists (for FSDP already
    // reduce-scattered), and the layer's own activations (recomputed under checkpointing) are all that is left.
    // (Megatron-LM's model: not a moment of its own.)
    std::vector<Moment> out = {
        {"micro_batch_start", "forward", start,
         "the micro-batch starts: model states, earlier micro-batches' gradients, the loop's kept tensors"},
        {"end_of_forward", "forward", forward, "end of forward, inside the loss: every saved activation and the logits"},
        {"head_forward", "forward", head_forward,
         "the output projection writes the logits (beside a 4-bit head's dequantized weight)"},
        {"loss_backward", "loss", loss, "log-softmax's backward: the fp32 logits chain at its largest"},
        {"head_backward", "backward", head_backward, "the output projection's backward"},
        {"last_layer_mlp_backward", "backward", mlp_backward, "backward through the last layer's MLP"},
        {"last_layer_attention_backward", "backward", attention_backward, "backward through the last layer's attention"},
        {"unit_backward_end", "backward", unit_end, "end of a layer's backward: its gradients and their flat copy"}};
    if (!detail::megatron_model(c)) {
        Terms first_layer = mlp_backward;
        first_layer.gradients = std::max(carried_grads, produced * done_before_first);
        first_layer.activations = whole_layer + layer_output_gradient_bytes(c);
        first_layer.temporaries -= first_layer_unprefetched_bytes(c);
        if (c.optimizer_in_backward) first_layer.gradients = 0;
        out.push_back({"first_layer_backward", "backward", first_layer,
                       "backward through the first layer: every other gradient produced"});
    }
    out.push_back({"optimizer_step", "optimizer_step", step, "the optimizer step: all gradients and the step's temporaries"});
    return out;
}

std::vector<Phase> phases_of(const std::vector<Moment>& moments) {
    std::vector<Phase> phases;
    for (const Moment& m : moments) {
        if (phases.empty() || phases.back().name != m.phase) phases.push_back({std::string(m.phase), m.terms});
        else if (m.terms.sum() > phases.back().terms.sum()) phases.back().terms = m.terms;
    }
    return phases;
}

std::vector<Phase> supervised_phases(const Step& c) { return phases_of(supervised_moments(c)); }

namespace {

// With pipeline parallelism, the last stage's step (the configuration's `stage` is the first).
Step last_stage_of(const Step& c) {
    Config last = c;
    last.stage = PipelineStage::last;
    return Step(last);
}

std::vector<Phase> stage_phases(const Step& c) {
    return c.method == TrainingMethod::sft ? supervised_phases(c) : trl_phases(c);
}

std::size_t largest(const std::vector<Phase>& phases) {
    std::size_t peak = 0;
    for (std::size_t i = 1; i < phases.size(); ++i)
        if (phases[i].terms.sum() > phases[peak].terms.sum()) peak = i;
    return peak;
}

}  // namespace

MemoryEstimate estimate_memory(const Step& c) {
    MemoryEstimate m;
    m.params_total = double(total_params(c.model));
    m.params_trainable = trains_all_weights(c) ? m.params_total
                                               : c.adapter_params;
    m.phases = stage_phases(c);
    m.peak_phase = largest(m.phases);
    if (c.pp > 1) {  // the busier of the first stage (activations in flight) and the last (logits)
        std::vector<Phase> phases = stage_phases(last_stage_of(c));
        const std::size_t peak = largest(phases);
        if (phases[peak].terms.sum() > m.at_peak().sum()) m.phases = std::move(phases), m.peak_phase = peak, m.stage = "last";
        else m.stage = "first";
    }
    m.peak_allocated = m.at_peak().sum();
    m.allocator_overhead = allocator_overhead_bytes(c, m.peak_allocated);
    // The segments loading left reserved stay so through the step, which reuses their free blocks.
    if (const std::optional<LoadedModel> loaded = loaded_model(c)) {
        m.loading_reserved = double(loaded->reserved);
        m.allocator_overhead = std::max(m.allocator_overhead, m.loading_reserved - m.peak_allocated);
    }
    m.peak_reserved = m.peak_allocated + m.allocator_overhead;
    m.cuda_context = cuda_context_bytes(c);
    m.nccl = nccl_bytes(c);
    m.paged_optimizer_states = paged_optimizer_states_bytes(c);
    m.inference_engine = inference_engine_bytes(c);
    m.total = m.peak_reserved + m.cuda_context + m.nccl + m.paged_optimizer_states + m.inference_engine;
    if (c.inference_sleep_mode) {
        // TRL's vllm_generation.py: sleep(level=2) after each generate frees vLLM's weights and KV cache, and
        // empty_cache() runs before it wakes: the engine meets only the generation moment's tensors.
        const double at_generation = m.phases[0].terms.sum();
        const double with_engine = at_generation + allocator_overhead_bytes(c, at_generation) + m.inference_engine;
        m.inference_engine_in_total = with_engine > m.peak_reserved;
        m.total = std::max(m.peak_reserved, with_engine) + m.cuda_context + m.nccl + m.paged_optimizer_states;
    }
    m.cpu = cpu_offload_bytes(c);
    m.capacity = c.gpu.memory_gib * kGiB;
    m.fits = m.total <= m.capacity;
    // Cached in the collective streams' pools, released when the card is full: reserved up to the card's capacity.
    m.collective_stream_cached = std::min(collective_stream_cached_bytes(c, m.phases[m.peak_phase]),
                                          std::max(0.0, m.capacity - m.total));
    m.peak_reserved += m.collective_stream_cached;
    m.total += m.collective_stream_cached;
    return m;
}

std::vector<Moment> step_timeline(const Step& c, const MemoryEstimate& m) {
    if (c.method != TrainingMethod::sft) {
        std::vector<Moment> out;
        for (const Phase& p : m.phases) out.push_back({p.name, p.name, p.terms, ""});
        return out;
    }
    return m.stage == "last" ? supervised_moments(last_stage_of(c)) : supervised_moments(c);
}

std::uint64_t max_micro_batch(const Config& base) {
    Config c = base;
    auto fits = [&](std::uint64_t b) {
        c.micro_batch = b;
        return estimate_memory(c).fits;
    };
    if (!fits(1)) return 0;
    std::uint64_t lo = 1, hi = 2;  // fits(lo); find hi that does not
    constexpr std::uint64_t kLimit = std::uint64_t(1) << 20;
    while (hi <= kLimit && fits(hi)) lo = hi, hi *= 2;
    if (hi > kLimit) return kLimit;
    while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

}  // namespace vramcalc
