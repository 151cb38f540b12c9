#include "report_json.hpp"

#include <cmath>

#include "config_json.hpp"

namespace vramcalc {

using nlohmann::json;

namespace {
std::uint64_t bytes(double b) { return b <= 0 ? 0 : std::uint64_t(std::llround(b)); }
}  // namespace

json terms_to_json(const Terms& t) {
    return {{"weights", bytes(t.weights)},
            {"gradients", bytes(t.gradients)},
            {"optimizer_states", bytes(t.optimizer_states)},
            {"master_weights", bytes(t.master_weights)},
            {"activations", bytes(t.activations)},
            {"logits", bytes(t.logits)},
            {"temporaries", bytes(t.temporaries)}};
}

json report_to_json(const Report& r) {
    const MemoryEstimate& m = r.memory;
    json per_gpu = terms_to_json(m.at_peak());
    per_gpu["cuda_context"] = bytes(m.cuda_context);
    per_gpu["allocator_overhead"] = bytes(m.allocator_overhead);
    if (m.paged_optimizer_states > 0) per_gpu["paged_optimizer_states"] = bytes(m.paged_optimizer_states);
    json phases = json::array();
    for (const Phase& p : m.phases)
        phases.push_back({{"name", p.name}, {"allocated_bytes", bytes(p.terms.sum())}, {"per_gpu_bytes", terms_to_json(p.terms)}});
    json suggestions = json::array();
    for (const Suggestion& s : r.suggestions)
        suggestions.push_back({{"change", s.change}, {"config", s.patch}, {"total_bytes", bytes(s.total)},
                               {"fits", s.fits}, {"why", s.why}});
    const std::uint64_t total = bytes(m.total), capacity = bytes(m.capacity);
    json out = {{"config", config_to_json(r.config)},
            {"parameters", {{"total", bytes(m.params_total)}, {"trainable", bytes(m.params_trainable)}}},
            {"per_gpu_bytes", per_gpu},
            {"peak_phase", m.phases[m.peak_phase].name},
            {"phases", phases},
            {"peak_allocated_bytes", bytes(m.peak_allocated)},
            {"peak_reserved_bytes", bytes(m.peak_reserved)},
            {"total_bytes", total},
            {"cpu_bytes", bytes(m.cpu)},
            {"gpu", {{"id", r.config.gpu.id}, {"name", r.config.gpu.name}, {"capacity_bytes", capacity}}},
            {"fits", m.fits},
            {"headroom_bytes", std::int64_t(capacity) - std::int64_t(total)},
            {"max_micro_batch", r.max_micro_batch},
            {"suggestions", suggestions},
            {"warnings", r.warnings}};
    if (!m.stage.empty()) out["pipeline_stage"] = m.stage;
    return out;
}

// Key names from DeepSpeed's configuration reference (deepspeed.ai/docs/config-json).
json deepspeed_config(const Config& c) {
    json ds = {{"train_micro_batch_size_per_gpu", c.micro_batch},
               {"gradient_accumulation_steps", c.grad_accum},
               {"train_batch_size", c.micro_batch * c.grad_accum * data_parallel(c) / c.cp},
               {"gradient_clipping", 1.0},
               {"wall_clock_breakdown", false}};
    if (c.precision == Precision::bf16_mixed || c.precision == Precision::bf16_true) ds["bf16"] = {{"enabled", true}};
    if (c.precision == Precision::fp16_mixed || c.precision == Precision::fp16_true)
        ds["fp16"] = {{"enabled", true}, {"loss_scale", 0}, {"initial_scale_power", 16}};
    json zero = {{"stage", c.zero}, {"contiguous_gradients", true}, {"overlap_comm", false},
                 {"reduce_bucket_size", 5e8}};
    if (c.zero == 3) {
        zero["stage3_prefetch_bucket_size"] = 5e7;
        zero["stage3_param_persistence_threshold"] = 1e5;
    }
    if (c.offload != Offload::none) zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    if (c.offload == Offload::optimizer_and_params) zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
    ds["zero_optimization"] = zero;
    if (c.optimizer == Optimizer::adamw)
        ds["optimizer"] = {{"type", "AdamW"},
                           {"params", {{"lr", 1e-5}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.01}}}};
    if (c.checkpointing != Checkpointing::none)
        ds["activation_checkpointing"] = {{"partition_activations", false}, {"contiguous_memory_optimization", false}};
    return ds;
}

}  // namespace vramcalc
