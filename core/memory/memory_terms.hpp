// One small function per memory term, each for the busiest GPU and in bytes.
// Sources are cited beside each definition in memory_terms.cpp.
#pragma once
#include "memory/estimate.hpp"
#include "memory/step.hpp"

namespace vramcalc {

// Element sizes (the formulas: a Step holds their values, step.hpp).
double weight_element_bytes(const Config&);     // how the model's weights are stored on the GPU
double trainable_element_bytes(const Config&);  // the trainable weights (PEFT keeps adapters in fp32)
double gradient_element_bytes(const Config&);   // the gradients backward produces
double compute_element_bytes(const Config&);    // matmul inputs/outputs
double residual_element_bytes(const Config&);   // the residual stream between layers
bool has_master_weights(const Config&);         // 16-bit weights with an fp32 copy for the optimizer

// How the work is split.
std::uint64_t layers_on_stage(const Config&);
bool holds_embedding(const Config&);                   // first pipeline stage (or the only one)
bool holds_head(const Config&);                        // last pipeline stage: final norm, lm_head, logits
double micro_batches_in_flight(const Config&);  // on the first pipeline stage, in micro-batches of its layers
double stage_params(const Step&);                    // parameters on one GPU before ZeRO/FSDP sharding (the Step's)
double trainable_stage_params(const Step&);
bool trains_all_weights(const Config&);

// Model states.
double weights_bytes(const Step&);
double gradients_bytes(const Step&);
double fp32_gradient_partition_bytes(const Step&);  // DeepSpeed, during the optimizer step only
bool gradients_allocated_up_front(const Config&);
double master_weights_bytes(const Step&);
double optimizer_states_bytes(const Step&);
double optimizer_states_stage_bytes(const Step&);  // the busiest stage's, before ZeRO/FSDP sharding
double paged_optimizer_states_bytes(const Step&);  // unified memory, outside PyTorch's allocator

// What a micro-batch saves for backward.
double attention_activation_bytes(const Step&);   // per layer
// The share of layers whose SDPA falls to PyTorch's math path on CUDA (no fused kernel takes the dtype, or the grouped
// heads in it, on the GPU): they keep seq_len x seq_len probabilities.
double sdpa_math_layers(const Step&);
double mlp_activation_bytes(const Step&);         // per layer
double norm_activation_bytes(const Step&);        // per layer, both norms
double layer_activation_bytes(const Step&);       // per layer, checkpointing applied
double activations_bytes(const Step&);            // the stage's layers, embedding and final norm, in flight
double attention_mask_bytes(const Step&);         // eager attention's (b, 1, s, s) causal mask
double logits_forward_peak_bytes(const Step&);    // end of forward: logits, fp32 upcast, log-softmax
double logits_backward_peak_bytes(const Step&);   // log-softmax backward: saved output, gradient, result
double logits_step_bytes(const Step&);            // kept by the training loop through the optimizer step
double previous_step_kept_input_bytes(const Step&);  // bitsandbytes < 0.43.2 inputs held by the last step's graph
double dequantized_head_bytes(const Step&);       // a 4-bit lm_head's dequantized weight, end of forward
double logits_forward_output_bytes(const Step&);  // lm_head's 16-bit output as it is written
double final_norm_activation_bytes(const Step&);   // final norm and lm_head input
double mlp_half_activation_bytes(const Step&);     // one layer's second norm and MLP
double attention_backward_transient_bytes(const Step&);
double mlp_backward_transient_bytes(const Step&);
double mlp_freed_before_backward_bytes(const Step&);
double layer_output_gradient_bytes(const Step&);
double recast_layer_weight_bytes(const Step&);

// Transient and fixed costs.
double autocast_weight_copy_bytes(const Step&);
double optimizer_step_temporary_bytes(const Step&);
// Optimizer in backward (torchtune's optimizer_in_bwd): each parameter is stepped in its gradient hook and
// its gradient freed, so one gradient and one tensor's step temporaries exist at a time.
double in_backward_step_bytes(const Step&);
// The chunked output projection's backward: the chunks' weight gradients summed (torchtune).
double chunked_head_gradient_bytes(const Step&);
double communication_buffer_bytes(const Step&);
// ZeRO-3/FSDP: unsharded parameters at the end of forward (one layer prefetched for backward) or in backward
// (the layer computed and the next one prefetched).
double gathered_parameter_bytes(const Step&, bool in_backward);
double first_layer_unprefetched_bytes(const Step&);  // FSDP: no layer left to prefetch at the first layer
double reduce_scatter_bytes(const Step&);       // FSDP: one unit's unsharded gradients, backward
double unsharded_accumulated_gradient_bytes(const Step&);  // FSDP: between micro-batches of accumulation
double ring_attention_bytes(const Step&);     // context parallel: k and v gathered over the sequence
double pipeline_buffer_bytes(const Step&);    // torch.distributed.pipelining's per-micro-batch buffers
double cublas_workspace_bytes(const Step&);
double float8_cast_bytes(const Step&, bool backward);  // float8 copies beyond the saved activations (torchao, TE)
double cuda_context_bytes(const Step&);
double nccl_bytes(const Step&);  // outside the caching allocator, in total_bytes
double allocator_overhead_bytes(const Step&, double peak_allocated);
// FSDP's collective streams' pools in the caching allocator: what they hold cached but free at the peak, which the
// compute stream cannot reuse (reserved, shown by nvidia-smi) but the allocator releases before an out-of-memory error.
double collective_stream_cached_bytes(const Step&, const Phase& peak);
double cpu_offload_bytes(const Step&);
double offloaded_activation_bytes(const Step&);  // pinned CPU RAM holding offloaded activations

// Transformer Engine FP8 (fp8_recipe te-delayed, te-current; tests/validation/stacks/fp8 Part A).
bool te_fp8(const Config&);
bool fp8_converts_head(const Config&);             // lm_head computes in fp8 too (accelerate's TE conversion)
double te_saved_weight_element_bytes(const Step&);  // per weight a te.Linear saves from forward to backward
double te_saved_weight_bytes(const Step&);       // the fp8 weights saved at the end of forward
double te_weight_cache_bytes(const Step&);       // Megatron-LM: fp8 weights cached across steps
double fp8_scaling_state_bytes(const Step&);     // delayed scaling's amax histories and scales

}  // namespace vramcalc
